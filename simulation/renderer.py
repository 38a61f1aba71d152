"""What every rendering backend shares: the Renderer protocol, image sizes, frame keys,
the build versions frame keys depend on, and the errors a backend raises.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Protocol

from simulation.catalogue import (
    MAIN,
    NO_MIRROR,
    Scene,
    Vec3,
)
from simulation.versions import FRAME_VERSION

if TYPE_CHECKING:
    import numpy as np

DEFAULT_SIZE = 1024


MAX_SIZE = 4096


SCENE_BUILD_VERSION = "6"
"""Bump whenever the scene construction (or the MuJoCo renderer's set-up) changes the pixels:
frame keys depend on it. 3: the shadow map scales with the frame (``shadow_size``), so frames
under 1024 px changed; 1024 px frames are the same as in 2. 4: the robots' meshes are
simplified without turning the faces of thin shells over (``simulation.assets.meshes``), so
every robot frame changed; human frames are the same as in 3. 5: a light halo card behind each
robot hand (``simulation.assets.robots._add_halo``) outlines it where the mirror shows it, so
every robot frame changed again; human frames are the same as in 3. 6: the round shapes
(spheres, capsules, cylinders, ellipsoids: every part of a human, none of a robot) have fewer
slices in frames under 513 px (``simulation.mujoco_backend.shape_detail``), so human frames
under 513 px changed; frames of 513 px and more, and every robot frame, are the same as in 5."""


USD_BUILD_VERSION = "1"
"""Bump whenever the OpenUSD stage of a scene changes (``simulation.usd_export``): the Isaac
renderer's frame keys depend on it."""


@functools.cache
def package_version(name: str) -> str:
    """Return an installed package's version, read once per process: reading it takes about
    3 ms, and every frame key needs the renderer's (a gallery page names 198 frames)."""
    return metadata.version(name)


def mujoco_renderer_version() -> str:
    """Return the MuJoCo renderer's version: frame version, MuJoCo release, scene build."""
    return f"{FRAME_VERSION}-mujoco-{package_version('mujoco')}-scene{SCENE_BUILD_VERSION}"


def frame_key(
    version: str,
    scene_id: str,
    cell: Vec3,
    size: int,
    *,
    mirror: bool = True,
    condition: str = MAIN,
) -> str:
    """Return the content key of a frame: same inputs, same pixels, same key.

    A frame of the paper's protocol (``main``, with the mirror) has the key it always had; any
    other names its condition. The ``no-mirror`` condition is the scene without its mirror, so
    its frames are those of ``mirror=False`` and share their keys.
    """
    parts = [version, scene_id, ",".join(str(c) for c in cell), str(size)]
    if not mirror or condition == NO_MIRROR:
        parts.append(NO_MIRROR)
    if condition not in (MAIN, NO_MIRROR):
        parts.append(condition)
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:40]


class RenderError(RuntimeError):
    """Rendering could not be set up or a request is out of range."""


class Renderer(Protocol):
    """A backend that renders MirrorBench scenes from the camera behind the body."""

    @property
    def version(self) -> str:
        """Identifies the pixels this backend produces (part of every frame key)."""
        ...

    def load(self, scene: Scene, *, mirror: bool = True) -> None:
        """Build ``scene`` as its condition has it (``scene.shows_mirror``, ``shows_mark``;
        ``mirror=False`` removes the mirror whatever the condition); the hand starts at its
        start cell."""

    def set_hand(self, cell: Vec3) -> None:
        """Move the hand to a grid offset from its start."""

    def render(self, size: int = DEFAULT_SIZE) -> np.ndarray:
        """Return the current view as ``uint8 (size, size, 3)`` RGB."""
        ...

    def close(self) -> None:
        """Release the rendering context."""


def validate_size(size: int) -> int:
    """Return ``size`` if it is a valid image side, or raise RenderError."""
    if not isinstance(size, int) or not 16 <= size <= MAX_SIZE:
        raise RenderError(f"size must be an integer from 16 to {MAX_SIZE}, got {size!r}")
    return size


class BackendError(RenderError):
    """A backend that is unknown or cannot run on this machine."""


@dataclass(frozen=True)
class BackendStatus:
    """Whether a backend can render here, and why not."""

    name: str
    available: bool
    detail: str
    """What it runs on when available; every reason it cannot run otherwise."""
