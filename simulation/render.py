"""Rendering MirrorBench scenes.

``Renderer`` is the contract every backend meets (MuJoCo here; Isaac Sim can sit behind the
same interface). ``MujocoRenderer`` builds each scene procedurally with ``mujoco.MjSpec``: a
plain room, a real planar mirror (a reflective plane exactly at the mirror's face), the body,
the mark on the body's front facing the mirror, a floating hand moved by setting its pose, and
a camera behind the body. Rendering is headless (``MUJOCO_GL=egl``, or ``osmesa``).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import math
import os
from importlib import metadata
from typing import Protocol

import numpy as np

from simulation.catalogue import (
    Scene,
    Vec3,
)
from simulation.versions import FRAME_VERSION

DEFAULT_SIZE = 1024
MAX_SIZE = 4096
SCENE_BUILD_VERSION = "2"
"""Bump whenever the scene construction changes the pixels: frame keys depend on it."""
USD_BUILD_VERSION = "1"
"""Bump whenever the OpenUSD stage of a scene changes (``simulation.usd_export``): the Isaac
renderer's frame keys depend on it."""

CAMERA_EYE = (-1.1, 0.0, 2.0)
CAMERA_TARGET = (0.0, 0.0, 1.7)
REFERENCE_APERTURE = 2.0955
"""The reference camera's aperture (Isaac's default 20.955 mm, in the focal length's units)."""
REFERENCE_FOCAL_LENGTH = 3.0
WIDE_REFERENCE_FOCAL_LENGTH = 2.0
"""The wheeled robot's shorter focal length in the reference: a wider view."""
WIDE_VIEW_BODIES = frozenset({"nova_carter"})


def fov_deg(focal_length: float, aperture: float = REFERENCE_APERTURE) -> float:
    """Return the field of view, in degrees, of a pinhole camera; images are square."""
    return 2 * math.degrees(math.atan(aperture / (2 * focal_length)))


CAMERA_FOVY_DEG = fov_deg(REFERENCE_FOCAL_LENGTH)
"""About 38.5 degrees. No body needs a wider view to keep its reflected mark and hand in the
image (``simulation.visibility`` checks every scene), so no body overrides the reference's."""
WIDE_CAMERA_FOVY_DEG = fov_deg(WIDE_REFERENCE_FOCAL_LENGTH)
"""About 55.3 degrees, for the bodies in ``WIDE_VIEW_BODIES``."""


def camera_fovy_deg(body_id: str) -> float:
    """Return the camera's field of view, in degrees, in the scenes of ``body_id``."""
    return WIDE_CAMERA_FOVY_DEG if body_id in WIDE_VIEW_BODIES else CAMERA_FOVY_DEG


def renderer_version() -> str:
    """Return the version of what is rendered by this process's renderer.

    The renderer is the backend ``MIRRORBENCH_RENDERER`` names (``simulation.backends``;
    MuJoCo by default, whose version is ``mujoco_renderer_version()``). Frame keys and results
    bundles carry it, so frames of different frame versions (``simulation.versions.FRAME_VERSION``,
    what the pixels depend on) or backends never share a key.
    """
    from simulation.backends import configured_renderer_version

    return configured_renderer_version()


@functools.cache
def package_version(name: str) -> str:
    """Return an installed package's version, read once per process: reading it takes about
    3 ms, and every frame key needs the renderer's (a gallery page names 198 frames)."""
    return metadata.version(name)


def mujoco_renderer_version() -> str:
    """Return the MuJoCo renderer's version: frame version, MuJoCo release, scene build."""
    return f"{FRAME_VERSION}-mujoco-{package_version('mujoco')}-scene{SCENE_BUILD_VERSION}"


def frame_key(version: str, scene_id: str, cell: Vec3, size: int, *, mirror: bool = True) -> str:
    """Return the content key of a frame: same inputs, same pixels, same key."""
    parts = [version, scene_id, ",".join(str(c) for c in cell), str(size)]
    if not mirror:
        parts.append("no-mirror")
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
        """Build ``scene``; the hand starts at its start cell."""

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


_GL_LIBRARIES = {"egl": ("libEGL.so.1", "libEGL.so"), "osmesa": ("libOSMesa.so.8", "libOSMesa.so")}


def headless_backend() -> str:
    """Return the headless OpenGL platform to use: ``MUJOCO_GL`` if set, else EGL, else OSMesa.

    EGL (Mesa's software driver on a machine without a GPU) is preferred; OSMesa is the fallback
    when no EGL library can be loaded. ``make install`` installs both on Debian and Ubuntu.
    """
    chosen = os.environ.get("MUJOCO_GL")
    if chosen:
        return chosen
    for backend, names in _GL_LIBRARIES.items():
        for name in names:
            try:
                ctypes.CDLL(name)
            except OSError:
                continue
            return backend
    raise RenderError(
        "no headless OpenGL library found (libEGL or libOSMesa): run `make system-deps`, or "
        "apt-get install libegl1 libgl1-mesa-dri libosmesa6"
    )


def _ensure_gl_backend() -> None:
    """Choose the GL platform before MuJoCo loads; PyOpenGL must agree with MuJoCo."""
    backend = headless_backend()
    os.environ["MUJOCO_GL"] = backend
    os.environ.setdefault("PYOPENGL_PLATFORM", backend)


def look_at_quat(
    eye: tuple[float, float, float], target: tuple[float, float, float]
) -> list[float]:
    """Return the quaternion (w, x, y, z) of a camera at ``eye`` looking at ``target``, z up.

    A MuJoCo camera looks along its local -z with +x to the right and +y up in the image.
    """
    forward = np.subtract(target, eye).astype(float)
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, (0.0, 0.0, 1.0))
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    rot = np.column_stack([right, up, -forward])
    w = math.sqrt(max(0.0, 1.0 + rot[0, 0] + rot[1, 1] + rot[2, 2])) / 2
    x = math.copysign(
        math.sqrt(max(0.0, 1.0 + rot[0, 0] - rot[1, 1] - rot[2, 2])) / 2, rot[2, 1] - rot[1, 2]
    )
    y = math.copysign(
        math.sqrt(max(0.0, 1.0 - rot[0, 0] + rot[1, 1] - rot[2, 2])) / 2, rot[0, 2] - rot[2, 0]
    )
    z = math.copysign(
        math.sqrt(max(0.0, 1.0 - rot[0, 0] - rot[1, 1] + rot[2, 2])) / 2, rot[1, 0] - rot[0, 1]
    )
    return [w, x, y, z]
