"""The Isaac Sim rendering backend: a scene's OpenUSD stage, rendered headless by RTX.

``IsaacRenderer`` meets the same ``Renderer`` protocol as the MuJoCo backend. It exports the
scene with ``simulation.usd_export`` (the same geometry MuJoCo draws), opens the stage in Isaac
Sim, selects the mirror's ``rtx`` shading, moves ``/World/Hand`` per cell and reads the camera's
image through a Replicator ``rgb`` annotator.

This module imports without Isaac Sim: Kit is started on the first ``load``. It needs Python
3.12, ``pip install '.[isaac]'`` and an NVIDIA RTX GPU (``mirrorbench renderers`` says which is
missing). Kit brings its own USD libraries, so Kit starts before anything here imports ``pxr``;
a process that rendered with Isaac must not import ``usd-core``'s ``pxr`` first.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulation.catalogue import Scene, Vec3
from simulation.dynamics import hand_position_mm
from simulation.renderer import (
    DEFAULT_SIZE,
    SCENE_BUILD_VERSION,
    USD_BUILD_VERSION,
    BackendError,
    BackendStatus,
    RenderError,
    package_version,
    validate_size,
)
from simulation.versions import FRAME_VERSION

if TYPE_CHECKING:
    import numpy as np

RENDER_MODE_ENV = "MIRRORBENCH_ISAAC_RENDER_MODE"
DEFAULT_RENDER_MODE = "RaytracedLighting"
RT_SUBFRAMES = 8
"""RTX subframes per image: enough for reflections and shadows to settle after the hand moves."""
WARMUP_UPDATES = 20
"""App updates after a stage opens, so materials and textures finish loading."""

_app: Any = None
"""The process's one Kit application (Kit cannot be started twice in a process)."""


def isaac_renderer_version() -> str:
    """Return the Isaac renderer's version: benchmark, Isaac Sim release, scene and USD builds.

    Needs only the installed ``isaacsim`` package, not a GPU.
    """
    try:
        isaac = package_version("isaacsim")
    except metadata.PackageNotFoundError:
        raise BackendError(
            "renderer 'isaac' has no version here: isaacsim is not installed "
            "(pip install '.[isaac]' under Python 3.12)"
        ) from None
    return f"{FRAME_VERSION}-isaacsim-{isaac}-scene{SCENE_BUILD_VERSION}-usd{USD_BUILD_VERSION}"


def render_mode() -> str:
    """Return the RTX mode Kit starts with (``MIRRORBENCH_ISAAC_RENDER_MODE``)."""
    return os.environ.get(RENDER_MODE_ENV, "").strip() or DEFAULT_RENDER_MODE


def kit_app(size: int = DEFAULT_SIZE) -> Any:
    """Return the process's Kit application, starting it headless on first use."""
    global _app
    if _app is None:
        status = isaac_status()
        if not status.available:
            raise BackendError(f"renderer 'isaac' is not available here: {status.detail}")
        from isaacsim import SimulationApp

        _app = SimulationApp(
            {"headless": True, "renderer": render_mode(), "width": size, "height": size}
        )
    return _app


class IsaacRenderer:
    """Renders scenes with Isaac Sim's RTX renderer, headless, from their OpenUSD stages."""

    def __init__(self, *, stage_dir: Path | None = None) -> None:
        self._stage_dir = Path(stage_dir) if stage_dir else None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._scene: Scene | None = None
        self._stage: Any = None
        self._products: dict[int, tuple[Any, Any]] = {}
        self._cell: Vec3 = (0, 0, 0)

    @property
    def version(self) -> str:
        return isaac_renderer_version() + (
            "" if render_mode() == DEFAULT_RENDER_MODE else f"-{render_mode()}"
        )

    @property
    def stage(self) -> Any:
        """The open ``Usd.Stage`` (Kit's), for checks such as hiding the mark."""
        if self._stage is None:
            raise RenderError("no scene loaded: call load(scene) first")
        return self._stage

    def _export_dir(self) -> Path:
        if self._stage_dir is not None:
            return self._stage_dir
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="mirrorbench-usd-")
        return Path(self._tmp.name)

    def load(self, scene: Scene, *, mirror: bool = True) -> None:
        app = kit_app()
        # Only now, with Kit's USD libraries on the path, may pxr be imported.
        import omni.usd
        from pxr import Usd

        from simulation.usd_export import (
            MIRROR_MATERIAL_PATH,
            RTX_SHADING,
            SHADING_VARIANT_SET,
            export_scene,
        )

        self._close_products()
        mirror = mirror and scene.shows_mirror
        out = self._export_dir() / ("mirror" if mirror else "no-mirror")
        path = export_scene(scene, out, mirror=mirror).path
        context = omni.usd.get_context()
        if not context.open_stage(str(path)):
            raise RenderError(f"Isaac Sim could not open {path}")
        stage: Usd.Stage = context.get_stage()
        if mirror:
            looks = stage.GetPrimAtPath(MIRROR_MATERIAL_PATH)
            looks.GetVariantSets().GetVariantSet(SHADING_VARIANT_SET).SetVariantSelection(
                RTX_SHADING
            )
        for _ in range(WARMUP_UPDATES):
            app.update()
        self._scene, self._stage = scene, stage
        self.set_hand((0, 0, 0))

    def set_hand(self, cell: Vec3) -> None:
        if self._scene is None:
            raise RenderError("no scene loaded: call load(scene) first")
        from simulation.usd_export import set_hand_translation

        self._cell = cell
        position = tuple(v / 1000 for v in hand_position_mm(self._scene, cell))
        set_hand_translation(self.stage, (position[0], position[1], position[2]))

    def _annotator(self, size: int) -> Any:
        if size not in self._products:
            import omni.replicator.core as rep

            from simulation.usd_export import CAMERA_PATH

            product = rep.create.render_product(CAMERA_PATH, (size, size))
            annotator = rep.AnnotatorRegistry.get_annotator("rgb")
            annotator.attach([product])
            self._products[size] = (product, annotator)
        return self._products[size][1]

    def render(self, size: int = DEFAULT_SIZE) -> np.ndarray:
        validate_size(size)
        if self._scene is None:
            raise RenderError("no scene loaded: call load(scene) first")
        # Here, not at the top: the site imports this module for the backend's status, and
        # numpy is a quarter of a second of every process that never renders.
        import numpy as np
        import omni.replicator.core as rep

        annotator = self._annotator(size)
        rep.orchestrator.step(rt_subframes=RT_SUBFRAMES)
        rgba = np.asarray(annotator.get_data())
        if rgba.shape[:2] != (size, size):
            raise RenderError(f"Isaac Sim returned an image of shape {rgba.shape}, not {size}")
        return np.ascontiguousarray(rgba[..., :3], dtype=np.uint8)

    def _close_products(self) -> None:
        for product, annotator in self._products.values():
            annotator.detach()
            product.destroy()
        self._products.clear()

    def close(self) -> None:
        """Release this renderer's render products; Kit keeps running until the process ends."""
        if self._products:
            self._close_products()
        self._scene = self._stage = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> IsaacRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


ISAAC_PYTHON = (3, 12)
"""Isaac Sim 6.x wheels exist for Python 3.12 only."""


RT_CORE_GPU = re.compile(r"^(RTX|(A10|A16|A40|L4|L20|L40|T4|T10)[A-Z]?)$")
"""A word of an NVIDIA GPU's name that marks RT cores (Isaac Sim renders only on those): any
RTX, and the data-centre L4, L40S, A10G, A40, T4...; A100, H100 and H200 have none."""


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


def isaac_status() -> BackendStatus:
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
