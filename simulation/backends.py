"""The rendering backends: which exist, which can run here, and the one to use.

Two backends meet the ``Renderer`` protocol: ``mujoco`` (the default, on any CPU) and ``isaac``
(Isaac Sim's RTX renderer, on a machine with Python 3.12, ``pip install '.[isaac]'`` and an
NVIDIA RTX GPU). ``MIRRORBENCH_RENDERER`` names the backend of a process; every frame key and
results bundle carries the version of the backend that made it, so frames of different
backends never mix. Asking for a backend that cannot run here is an error, never a fallback.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata

from simulation.render import Renderer, RenderError

RENDERER_ENV = "MIRRORBENCH_RENDERER"
DEFAULT_BACKEND = "mujoco"
BACKENDS = ("mujoco", "isaac")
ISAAC_PYTHON = (3, 12)
"""Isaac Sim 6.x wheels exist for Python 3.12 only."""
RT_CORE_GPU = re.compile(r"^(RTX|(A10|A16|A40|L4|L20|L40|T4|T10)[A-Z]?)$")
"""A word of an NVIDIA GPU's name that marks RT cores (Isaac Sim renders only on those): any
RTX, and the data-centre L4, L40S, A10G, A40, T4...; A100, H100 and H200 have none."""


class BackendError(RenderError):
    """A backend that is unknown or cannot run on this machine."""


@dataclass(frozen=True)
class BackendStatus:
    """Whether a backend can render here, and why not."""

    name: str
    available: bool
    detail: str
    """What it runs on when available; every reason it cannot run otherwise."""


def nvidia_gpus() -> list[str] | None:
    """Return the names of the NVIDIA GPUs ``nvidia-smi`` lists, or None without the tool."""
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return None
    try:
        result = subprocess.run(
            [tool, "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


def has_rt_cores(gpu_name: str) -> bool:
    """Return whether an NVIDIA GPU of this name has RT cores (what Isaac Sim renders on)."""
    words = gpu_name.upper().replace("-", " ").split()
    return any(RT_CORE_GPU.match(word) for word in words)


def _mujoco_status() -> BackendStatus:
    if importlib.util.find_spec("mujoco") is None:
        return BackendStatus("mujoco", False, "no module: mujoco is not installed (make install)")
    from simulation.render import headless_backend

    try:
        gl = headless_backend()
    except RenderError as exc:
        return BackendStatus("mujoco", False, f"no headless OpenGL: {exc}")
    return BackendStatus("mujoco", True, f"MuJoCo {metadata.version('mujoco')}, headless GL {gl}")


def _isaac_status() -> BackendStatus:
    reasons = []
    if sys.version_info[:2] != ISAAC_PYTHON:
        reasons.append(
            f"wrong Python: Isaac Sim 6.x needs {'.'.join(map(str, ISAAC_PYTHON))}, this is "
            f"{sys.version.split()[0]}"
        )
    if importlib.util.find_spec("isaacsim") is None:
        reasons.append(
            "no module: isaacsim is not installed (pip install '.[isaac]' under Python 3.12)"
        )
    gpus = nvidia_gpus()
    if gpus is None:
        reasons.append("no GPU: nvidia-smi not found (Isaac Sim renders on an NVIDIA RTX GPU)")
    elif not any(has_rt_cores(name) for name in gpus):
        listed = ", ".join(gpus) or "no GPU"
        reasons.append(f"no RTX GPU: nvidia-smi lists {listed}, none with RT cores")
    if reasons:
        return BackendStatus("isaac", False, "; ".join(reasons))
    rtx = next(name for name in gpus or [] if has_rt_cores(name))
    return BackendStatus("isaac", True, f"Isaac Sim {metadata.version('isaacsim')} on {rtx}")


def backend_status(name: str) -> BackendStatus:
    """Return whether the backend ``name`` can render on this machine, with the reason."""
    checks = {"mujoco": _mujoco_status, "isaac": _isaac_status}
    if name not in checks:
        raise BackendError(_unknown(name))
    return checks[name]()


def backend_statuses() -> list[BackendStatus]:
    """Return the status of every backend, in ``BACKENDS`` order."""
    return [backend_status(name) for name in BACKENDS]


def _unknown(name: str) -> str:
    return f"unknown renderer {name!r}; choose one of {', '.join(BACKENDS)}"


def configured_backend() -> str:
    """Return the backend named by ``MIRRORBENCH_RENDERER`` (``mujoco`` when unset)."""
    name = os.environ.get(RENDERER_ENV, "").strip().lower() or DEFAULT_BACKEND
    if name not in BACKENDS:
        raise BackendError(f"{RENDERER_ENV}={name!r}: {_unknown(name)}")
    return name


def _require(name: str) -> None:
    status = backend_status(name)
    if not status.available:
        raise BackendError(
            f"renderer {name!r} is not available here: {status.detail} "
            "(`mirrorbench renderers` lists the backends)"
        )


def backend_version(name: str) -> str:
    """Return the version string of the default renderer of backend ``name``.

    It goes into every frame key the backend makes. The Isaac version needs only the installed
    ``isaacsim`` package (no GPU), so a web process can name Isaac frames it never renders.
    """
    if name == "mujoco":
        from simulation.render import mujoco_renderer_version

        return mujoco_renderer_version()
    if name == "isaac":
        from simulation.isaac_backend import isaac_renderer_version

        return isaac_renderer_version()
    raise BackendError(_unknown(name))


def configured_renderer_version() -> str:
    """Return the version of the renderer ``MIRRORBENCH_RENDERER`` names."""
    return backend_version(configured_backend())


def make_renderer(name: str = DEFAULT_BACKEND, *, shadows: bool = True) -> Renderer:
    """Return a new renderer of backend ``name``, or raise BackendError saying why it cannot run.

    ``shadows=False`` is a MuJoCo option (RTX always casts them).
    """
    if name not in BACKENDS:
        raise BackendError(_unknown(name))
    _require(name)
    if name == "mujoco":
        from simulation.mujoco_backend import MujocoRenderer

        return MujocoRenderer(shadows=shadows)
    if not shadows:
        raise BackendError("rendering without shadows is a MuJoCo option; isaac always casts them")
    from simulation.isaac_backend import IsaacRenderer

    return IsaacRenderer()


def make_renderer_from_env() -> Renderer:
    """Return a new renderer of the backend ``MIRRORBENCH_RENDERER`` names (MuJoCo by default)."""
    return make_renderer(configured_backend())
