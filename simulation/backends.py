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
from importlib import metadata

from simulation.gl import headless_backend
from simulation.isaac_backend import IsaacRenderer, isaac_renderer_version, isaac_status
from simulation.renderer import (
    BackendError,
    BackendStatus,
    Renderer,
    RenderError,
    mujoco_renderer_version,
)

RENDERER_ENV = "MIRRORBENCH_RENDERER"
DEFAULT_BACKEND = "mujoco"
BACKENDS = ("mujoco", "isaac")


def _mujoco_status() -> BackendStatus:
    if importlib.util.find_spec("mujoco") is None:
        return BackendStatus("mujoco", False, "no module: mujoco is not installed (make install)")
    try:
        gl = headless_backend()
    except RenderError as exc:
        return BackendStatus("mujoco", False, f"no headless OpenGL: {exc}")
    return BackendStatus("mujoco", True, f"MuJoCo {metadata.version('mujoco')}, headless GL {gl}")


def backend_status(name: str) -> BackendStatus:
    """Return whether the backend ``name`` can render on this machine, with the reason."""
    checks = {"mujoco": _mujoco_status, "isaac": isaac_status}
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
        return mujoco_renderer_version()
    if name == "isaac":
        return isaac_renderer_version()
    raise BackendError(_unknown(name))


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
    return IsaacRenderer()


def make_renderer_from_env() -> Renderer:
    """Return a new renderer of the backend ``MIRRORBENCH_RENDERER`` names (MuJoCo by default)."""
    return make_renderer(configured_backend())


def renderer_version() -> str:
    """Return the version of what is rendered by this process's renderer.

    The renderer is the backend ``MIRRORBENCH_RENDERER`` names (MuJoCo by default, whose
    version is ``mujoco_renderer_version()``). Frame keys and results bundles carry it, so
    frames of different frame versions (``simulation.versions.FRAME_VERSION``, what the pixels
    depend on) or backends never share a key.
    """
    return backend_version(configured_backend())
