"""Headless OpenGL for MuJoCo: EGL (Mesa's software driver without a GPU) or OSMesa."""

from __future__ import annotations

import ctypes
import os

from simulation.renderer import RenderError

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


def ensure_gl_backend() -> None:
    """Choose the GL platform before MuJoCo loads; PyOpenGL must agree with MuJoCo."""
    backend = headless_backend()
    os.environ["MUJOCO_GL"] = backend
    os.environ.setdefault("PYOPENGL_PLATFORM", backend)
