"""Check that a scene shows what the task needs: the reflected mark and the reflected hand.

A probe render paints every geom black except the mark (magenta) and the hand (green), all
unlit, and counts those colours in the image with and without the mirror. Reflected pixels are
those that appear only when the mirror is there; the mark faces the mirror, so without it the
camera must not see any of the mark.
"""

from __future__ import annotations

import threading

import numpy as np

from simulation.catalogue import Scene
from simulation.mujoco_backend import (
    CAMERA_NAME,
    HAND_BODY,
    MARK_THICKNESS,
    MAX_GEOMS,
    build_spec,
    compiled_model,
    mujoco,
    shape_detail,
)
from simulation.renderer import RenderError, validate_size

_MAGENTA = (1.0, 0.0, 1.0, 1.0)
_GREEN = (0.0, 1.0, 0.0, 1.0)


def _probe_frame(scene: Scene, *, mirror: bool, size: int) -> np.ndarray:
    model = build_spec(scene, mirror=mirror, max_size=max(size, 64)).compile()
    hand_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, HAND_BODY)
    hand_bodies = {b for b in range(model.nbody) if _descends_from(model, b, hand_id)}
    for g in range(model.ngeom):
        name = model.geom(g).name
        if name == "mirror/glass":
            continue
        model.geom_matid[g] = -1
        if name == "mark/plate":
            model.geom_rgba[g] = _MAGENTA
        elif model.geom_bodyid[g] in hand_bodies:
            model.geom_rgba[g] = _GREEN
        else:
            model.geom_rgba[g] = (0.0, 0.0, 0.0, 1.0)
    for light in range(model.nlight):
        model.light_active[light] = 0
    model.vis.headlight.ambient = (1.0, 1.0, 1.0)
    model.vis.headlight.diffuse = (0.0, 0.0, 0.0)
    model.vis.headlight.specular = (0.0, 0.0, 0.0)
    model.vis.quality.shadowsize = 0  # drawn without shadows: no shadow map to make
    # The round shapes as the renderer draws them in a frame of this size.
    model.vis.quality.numslices, model.vis.quality.numstacks = shape_detail(size)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    mujoco.mj_camlight(model, data)
    _probe_gl(size).make_current()
    context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_50)
    try:
        # As the renderer's: allocating room for 10,000 geoms cost a fifth of a probe frame.
        view = mujoco.MjvScene(model, maxgeom=MAX_GEOMS)
        camera = mujoco.MjvCamera()
        camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        camera.fixedcamid = model.camera(CAMERA_NAME).id
        mujoco.mjv_updateScene(
            model, data, mujoco.MjvOption(), None, camera, mujoco.mjtCatBit.mjCAT_ALL, view
        )
        view.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, context)
        rect = mujoco.MjrRect(0, 0, size, size)
        if view.ngeom >= view.maxgeom:
            raise RenderError(f"{scene.id} has more than {MAX_GEOMS} geoms to draw")
        mujoco.mjr_render(rect, view, context)
        pixels = np.empty((size, size, 3), dtype=np.uint8)
        mujoco.mjr_readPixels(pixels, None, rect, context)
    finally:
        context.free()
    return pixels[::-1]  # OpenGL's rows start at the bottom


_PROBE_GL = threading.local()


def _probe_gl(size: int) -> mujoco.GLContext:
    """This thread's OpenGL context for probe frames, kept between probes: making one took
    about 0.1 s of the 0.16 s a probe frame cost (a scene's check draws six)."""
    gl: mujoco.GLContext | None = getattr(_PROBE_GL, "gl", None)
    if gl is None or _PROBE_GL.size < size:
        if gl is not None:
            gl.free()
        gl = _PROBE_GL.gl = mujoco.GLContext(size, size)
        _PROBE_GL.size = size
    return gl


def _descends_from(model: mujoco.MjModel, body: int, ancestor: int) -> bool:
    while body > 0:
        if body == ancestor:
            return True
        body = int(model.body_parentid[body])
    return False


def _mask(image: np.ndarray, rgb: tuple[float, ...]) -> np.ndarray:
    """Pixels within 60 of ``rgb`` in every channel (small integers: a float or int64 copy of
    the frame cost as much as drawing it)."""
    target = (np.array(rgb[:3]) * 255).astype(np.int16)
    return (np.abs(image.astype(np.int16) - target) < 60).all(axis=2)


def _frames(scene: Scene, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The probe frames of ``scene`` with and without the mirror. A scene without a mirror
    (its condition leaves it out) is drawn once: both frames are the same."""
    validate_size(size)
    without = _probe_frame(scene, mirror=False, size=size)
    if not scene.shows_mirror:
        return without, without
    return _probe_frame(scene, mirror=True, size=size), without


def visible_pixels(scene: Scene, size: int = 256) -> dict[str, int]:
    """Return how many pixels of the reflected mark and hand the camera sees at ``size``.

    Keys: ``mark`` and ``hand`` (seen only thanks to the mirror), ``mark_direct`` (mark pixels
    without the mirror, which must be 0) and ``hand_direct`` (the real hand seen directly).
    """
    with_mirror, without = _frames(scene, size)
    mark_with, mark_without = _mask(with_mirror, _MAGENTA), _mask(without, _MAGENTA)
    hand_with, hand_without = _mask(with_mirror, _GREEN), _mask(without, _GREEN)
    return {
        "mark": int(np.count_nonzero(mark_with & ~mark_without)),
        "mark_direct": int(np.count_nonzero(mark_without)),
        "hand": int(np.count_nonzero(hand_with & ~hand_without)),
        "hand_direct": int(np.count_nonzero(hand_without)),
    }


def reflected_mark_mask(scene: Scene, size: int = 256) -> np.ndarray:
    """Return the ``(size, size)`` mask of the pixels that show the mark's reflection."""
    with_mirror, without = (_mask(frame, _MAGENTA) for frame in _frames(scene, size))
    return with_mirror & ~without


def camera_pixel(
    scene: Scene, point_m: tuple[float, float, float], size: int
) -> tuple[float, float]:
    """Return where ``point_m`` lands (column, row from the top left) in a MuJoCo frame.

    Computed from the compiled model's camera (its pose and ``fovy``), as MuJoCo renders it.
    """
    model = compiled_model(scene, mirror=True, max_size=1024, antialias=False)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    mujoco.mj_camlight(model, data)
    camera = data.cam(CAMERA_NAME)
    local = np.array(camera.xmat).reshape(3, 3).T @ (np.asarray(point_m) - camera.xpos)
    if local[2] >= 0:
        raise ValueError(f"{point_m} is behind the camera")
    focal = size / 2 / np.tan(np.radians(model.cam(CAMERA_NAME).fovy[0]) / 2)
    return (
        float(size / 2 + focal * local[0] / -local[2]),
        float(size / 2 - focal * local[1] / -local[2]),
    )


MARK_BACKING_MM = 100
"""How far behind the mark's face the body's surface may lie for the mark to sit on it."""


def mark_sits_on_body(scene: Scene) -> bool:
    """Return whether the mark of ``scene`` sits on its body's front.

    Rays cast towards the body (-x) through the mark's centre and the corners of its middle
    half must each meet the body within ``MARK_BACKING_MM`` behind the mark's face, and none
    may meet the body in front of that face (where the body would hide the mark).
    """
    model = compiled_model(scene, mirror=False, max_size=64, antialias=False)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    root = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "body")
    front = scene.body.front_x_mm / 1000
    quarter = scene.mark.side_mm / 4000
    _, y, z = (v / 1000 for v in scene.mark_center_mm)
    start_x = front + 0.04  # in front of the body, behind any place the hand may be
    for dy, dz in ((0, 0), (-1, -1), (-1, 1), (1, -1), (1, 1)):
        point = np.array([start_x, y + dy * quarter, z + dz * quarter])
        geom = np.array([-1], dtype=np.int32)
        # bodyexclude 0: the world's own geoms (the mark's plate, the room) are not the body.
        distance = mujoco.mj_ray(model, data, point, np.array([-1.0, 0.0, 0.0]), None, 1, 0, geom)
        if geom[0] < 0 or not _descends_from(model, int(model.geom_bodyid[geom[0]]), root):
            return False
        hit_x = start_x - distance
        if hit_x > front + MARK_THICKNESS or hit_x < front - MARK_BACKING_MM / 1000:
            return False
    return True
