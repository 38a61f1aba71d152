"""The MuJoCo rendering backend: scene construction and offscreen rendering on the CPU."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from simulation.caching import single_flight
from simulation.camera import CAMERA_EYE, CAMERA_TARGET, camera_fovy_deg, look_at_quat
from simulation.catalogue import (
    MIRROR_CENTER_MM,
    MIRROR_FACE_X_MM,
    MIRROR_SIZE_MM,
    Scene,
    Vec3,
)
from simulation.dynamics import hand_position_mm
from simulation.gl import ensure_gl_backend
from simulation.renderer import DEFAULT_SIZE, RenderError, mujoco_renderer_version, validate_size

ensure_gl_backend()
import mujoco  # noqa: E402  (the GL platform must be chosen before MuJoCo loads)

from simulation.assets import humans, marks, robots  # noqa: E402

CAMERA_NAME = "behind"
HAND_BODY = "hand"
ROOM_HALF_X = (-3.0, 3.2)
ROOM_HALF_Y = 3.0
ROOM_HEIGHT = 3.0
MARK_THICKNESS = 0.002
MSAA_SAMPLES = 4
MAX_GEOMS = 1000
"""The most geoms one view holds: a scene has about 100 (MuJoCo's renderer allows 10,000, which
costs 5 MB per kept scene); ``render`` refuses a scene with more."""
# Rotations that turn a plane's normal (+z) to face -x (the mirror) or +x (the mark).
_FACE_MINUS_X = [math.sqrt(0.5), 0.0, -math.sqrt(0.5), 0.0]
_FACE_PLUS_X = [math.sqrt(0.5), 0.0, math.sqrt(0.5), 0.0]


def _m(mm: float) -> float:
    return mm / 1000.0


def _add_material(
    spec: mujoco.MjSpec, name: str, rgb: tuple[float, float, float], **kw: float
) -> str:
    spec.add_material(name=name, rgba=[*rgb, 1.0], reflectance=0.0, **kw)
    return name


def _add_room(spec: mujoco.MjSpec) -> None:
    """A plain indoor room around the scene, so the mirror never reflects a void."""
    world = spec.worldbody
    floor = spec.add_texture(
        name="room/floor",
        type=mujoco.mjtTexture.mjTEXTURE_2D,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
        rgb1=[0.62, 0.58, 0.52],
        rgb2=[0.56, 0.52, 0.46],
        width=256,
        height=256,
    )
    mat = spec.add_material(name="room/floor", texrepeat=[8, 8], reflectance=0.0)
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = floor.name
    x0, x1 = ROOM_HALF_X
    cx, hx = (x0 + x1) / 2, (x1 - x0) / 2
    world.add_geom(
        name="room/floor",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        size=[hx, ROOM_HALF_Y, 0.1],
        pos=[cx, 0, 0],
        material="room/floor",
        contype=0,
        conaffinity=0,
    )
    _add_material(spec, "room/wall", (0.86, 0.85, 0.82))
    _add_material(spec, "room/wall_back", (0.78, 0.82, 0.86))
    _add_material(spec, "room/ceiling", (0.95, 0.95, 0.95))
    _add_material(spec, "room/skirting", (0.35, 0.3, 0.26))
    t = 0.05
    h = ROOM_HEIGHT / 2
    walls = [
        ("front", [x1 + t, 0, h], [t, ROOM_HALF_Y, h], "room/wall"),
        ("back", [x0 - t, 0, h], [t, ROOM_HALF_Y, h], "room/wall_back"),
        ("left", [cx, ROOM_HALF_Y + t, h], [hx, t, h], "room/wall"),
        ("right", [cx, -ROOM_HALF_Y - t, h], [hx, t, h], "room/wall"),
        ("ceiling", [cx, 0, ROOM_HEIGHT + t], [hx, ROOM_HALF_Y, t], "room/ceiling"),
    ]
    for name, pos, size, material in walls:
        world.add_geom(
            name=f"room/{name}",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=size,
            pos=pos,
            material=material,
            contype=0,
            conaffinity=0,
        )
    # Skirting boards give the walls a visible base, which helps read depth in the reflection.
    for name, pos, size in [
        ("front", [x1 - 0.01, 0, 0.05], [0.01, ROOM_HALF_Y, 0.05]),
        ("back", [x0 + 0.01, 0, 0.05], [0.01, ROOM_HALF_Y, 0.05]),
        ("left", [cx, ROOM_HALF_Y - 0.01, 0.05], [hx, 0.01, 0.05]),
        ("right", [cx, -ROOM_HALF_Y + 0.01, 0.05], [hx, 0.01, 0.05]),
    ]:
        world.add_geom(
            name=f"room/skirting_{name}",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=size,
            pos=pos,
            material="room/skirting",
            contype=0,
            conaffinity=0,
        )


SHADOW_SIZE = 2048
"""The key light's shadow map side for a full-size (1024 px) frame: two texels per pixel."""
_SMALLEST_SHADOW = 64


def shadow_size(size: int) -> int:
    """Return the shadow map side used for a ``size`` px frame.

    Two texels per frame pixel (the power of two at or above ``2 * size``), at most
    ``SHADOW_SIZE``: a shadow's edge looks the same at every size, and a small frame does not
    pay for a 2048 px depth pass, which on a CPU renderer cost about 90 ms whatever the frame's
    size (a 32 px frame took 119 ms, 28 ms without shadows).
    """
    return min(max(_power_of_two_from(2 * size), _SMALLEST_SHADOW), SHADOW_SIZE)


def _power_of_two_from(n: int) -> int:
    """The smallest power of two at or above ``n`` (at least 1)."""
    return 1 << max(n - 1, 0).bit_length()


FULL_DETAIL = (28, 16)
"""The slices and stacks of MuJoCo's built-in round shapes at full size (1024 px): MuJoCo's own
``numslices`` and ``numstacks``."""
_FEWEST_SLICES = 12


def shape_detail(size: int) -> tuple[int, int]:
    """Return the slices and stacks of the built-in round shapes (spheres, capsules, cylinders,
    ellipsoids: a human body's every part) drawn in a ``size`` px frame.

    A polygon of ``n`` slices strays from a circle ``r`` px across by about ``r (pi / n)^2 / 2``
    px: ``r`` grows with the frame's side, so slices in proportion to the square root of the
    side keep that gap, in pixels, at most what it is in a 1024 px frame, at every size. The
    side is rounded up to a power of two, as for the shadow map; stacks in MuJoCo's
    proportion (16 to 28), and MuJoCo's own 28 x 16 from 513 px up, so frames of 513 to
    1024 px and larger are drawn as before. At least 12 slices: with 8, the shading of the
    largest shapes (lit at their corners) showed patches at 64 px. On a CPU renderer a small
    human frame is all vertex work (about 110 shapes of up to 900 triangles each, drawn three
    times: shadow map, reflection, view): at 32 px, 12 x 7 draws it in 18 ms instead of 38 ms
    (``make bench``, shadows on).
    """
    side = _power_of_two_from(size)
    if side >= DEFAULT_SIZE:
        return FULL_DETAIL
    slices, stacks = FULL_DETAIL
    fewer = max(_FEWEST_SLICES, math.ceil(slices * math.sqrt(side / DEFAULT_SIZE)))
    return fewer, math.ceil(fewer * stacks / slices)


def _add_lights(spec: mujoco.MjSpec) -> None:
    world = spec.worldbody
    world.add_light(
        name="light/key",
        pos=[-0.6, -0.8, 2.9],
        dir=[0.35, 0.25, -1.0],
        castshadow=True,
        diffuse=[0.55, 0.55, 0.55],
        specular=[0.1, 0.1, 0.1],
        cutoff=70,
        exponent=1,
    )
    world.add_light(
        name="light/fill",
        pos=[1.0, 0.6, 2.9],
        dir=[-0.2, -0.2, -1.0],
        castshadow=False,
        diffuse=[0.35, 0.35, 0.35],
        specular=[0.0, 0.0, 0.0],
        cutoff=80,
        exponent=1,
    )
    spec.visual.headlight.ambient = [0.3, 0.3, 0.3]
    spec.visual.headlight.diffuse = [0.25, 0.25, 0.25]
    spec.visual.headlight.specular = [0.0, 0.0, 0.0]
    spec.visual.quality.shadowsize = SHADOW_SIZE


def _add_mirror(spec: mujoco.MjSpec) -> None:
    """A real planar mirror: the first (and only) reflective geom, at the mirror's face."""
    world = spec.worldbody
    depth, width, height = (_m(v) for v in MIRROR_SIZE_MM)
    cx, cy, cz = (_m(v) for v in MIRROR_CENTER_MM)
    spec.add_material(
        name="mirror/glass",
        rgba=[0.02, 0.02, 0.02, 1.0],
        reflectance=1.0,
        specular=0.0,
        shininess=0.0,
    )
    world.add_geom(
        name="mirror/glass",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        size=[height / 2, width / 2, 0.01],
        pos=[_m(MIRROR_FACE_X_MM), cy, cz],
        quat=_FACE_MINUS_X,
        material="mirror/glass",
        contype=0,
        conaffinity=0,
    )
    # The slab behind the glass and a thin frame, so the mirror reads as an object in the room.
    _add_material(spec, "mirror/frame", (0.25, 0.2, 0.16))
    world.add_geom(
        name="mirror/slab",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[depth / 2, width / 2, height / 2],
        pos=[cx + 0.001, cy, cz],
        material="mirror/frame",
        contype=0,
        conaffinity=0,
    )
    f = 0.03
    for name, pos, size in [
        ("top", [cx, cy, cz + height / 2 + f / 2], [0.02, width / 2 + f, f / 2]),
        ("bottom", [cx, cy, cz - height / 2 - f / 2], [0.02, width / 2 + f, f / 2]),
        ("left", [cx, cy + width / 2 + f / 2, cz], [0.02, f / 2, height / 2]),
        ("right", [cx, cy - width / 2 - f / 2, cz], [0.02, f / 2, height / 2]),
    ]:
        world.add_geom(
            name=f"mirror/frame_{name}",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=size,
            pos=pos,
            material="mirror/frame",
            contype=0,
            conaffinity=0,
        )


def _add_mark(spec: mujoco.MjSpec, scene: Scene, texture_px: int = 256) -> None:
    """The mark: a textured square on the body's front surface, facing the mirror."""
    image = marks.mark_texture(scene.mark.id, texture_px)
    tex = spec.add_texture(
        name="mark/texture",
        type=mujoco.mjtTexture.mjTEXTURE_2D,
        width=image.shape[1],
        height=image.shape[0],
        nchannel=3,
    )
    # Seen from the mirror side the plane's local x runs along world -z after the rotation,
    # so the image is laid out to read upright (row 0 at the top) in front of the mark.
    tex.data = np.ascontiguousarray(np.rot90(image, k=1)).tobytes()
    mat = spec.add_material(
        name="mark/material", texrepeat=[1, 1], texuniform=False, reflectance=0.0, emission=0.15
    )
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = tex.name
    half = _m(scene.mark.side_mm) / 2
    x, y, z = scene.mark_center_mm
    spec.worldbody.add_geom(
        name="mark/plate",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[half, half, MARK_THICKNESS],
        pos=[_m(x) + MARK_THICKNESS, _m(y), _m(z)],
        quat=_FACE_PLUS_X,
        material="mark/material",
        contype=0,
        conaffinity=0,
    )


def _body_adder(scene: Scene) -> Callable[[mujoco.MjSpec, mujoco.MjsBody, str], None]:
    return humans.add_human_body if scene.track == "Human" else robots.add_robot_body


def _hand_adder(scene: Scene) -> Callable[[mujoco.MjSpec, mujoco.MjsBody, str], None]:
    return humans.add_human_hand if scene.track == "Human" else robots.add_robot_hand


def build_spec(
    scene: Scene, *, mirror: bool = True, max_size: int = DEFAULT_SIZE, antialias: bool = False
) -> mujoco.MjSpec:
    """Return the MjSpec of ``scene``: room, mirror, body, mark, hand and camera.

    The scene's condition may leave out the mirror or the mark; ``mirror=False`` leaves out
    the mirror in any condition.

    ``antialias`` turns on 4x multisampling: smoother edges at about twice the time per frame
    on a CPU renderer.
    """
    spec = mujoco.MjSpec()
    spec.modelname = scene.id
    spec.option.gravity = [0.0, 0.0, 0.0]
    spec.visual.global_.offwidth = max_size
    spec.visual.global_.offheight = max_size
    spec.visual.quality.offsamples = MSAA_SAMPLES if antialias else 0
    _add_room(spec)
    _add_lights(spec)
    mirror = mirror and scene.shows_mirror
    if mirror:
        _add_mirror(spec)
    bx, by, _ = scene.body.offset_mm
    body = spec.worldbody.add_body(name="body", pos=[_m(bx), _m(by), 0.0])
    _body_adder(scene)(spec, body, scene.body.id)
    if scene.shows_mark:
        _add_mark(spec, scene)
    hand = spec.worldbody.add_body(
        name=HAND_BODY, mocap=True, pos=[_m(v) for v in hand_position_mm(scene, (0, 0, 0))]
    )
    _hand_adder(scene)(spec, hand, scene.hand.id)
    spec.worldbody.add_camera(
        name=CAMERA_NAME,
        pos=list(CAMERA_EYE),
        quat=look_at_quat(CAMERA_EYE, CAMERA_TARGET),
        fovy=camera_fovy_deg(scene.body.id),
    )
    _strip_other_reflections(spec, keep="mirror/glass" if mirror else None)
    return spec


@single_flight
@lru_cache(maxsize=16)
def compiled_model(scene: Scene, *, mirror: bool, max_size: int, antialias: bool) -> mujoco.MjModel:
    """Return the compiled model of ``scene``, built once per process for the last few scenes.

    Compiling takes about a second (meshes, textures); a model is never changed after it is
    compiled (the hand moves in each renderer's own MjData), so renderers of one scene share it,
    across threads too; threads asking for a scene being compiled wait for it.
    """
    return build_spec(scene, mirror=mirror, max_size=max_size, antialias=antialias).compile()


def _strip_other_reflections(spec: mujoco.MjSpec, keep: str | None) -> None:
    """MuJoCo reflects only in the first reflective geom: no material but the mirror's reflects."""
    for material in spec.materials:
        if material.name != keep:
            material.reflectance = 0.0


_BUFFER_FIELDS = (
    "offWidth",
    "offHeight",
    "offSamples",
    "offFBO",
    "offFBO_r",
    "offColor",
    "offColor_r",
    "offDepthStencil",
    "offDepthStencil_r",
)
_SHADOW_FIELDS = ("shadowSize", "shadowFBO", "shadowTex")
_TARGET_FIELDS = _BUFFER_FIELDS + _SHADOW_FIELDS
"""The fields of an ``MjrContext`` that name its frame buffers and shadow map: the render
target, which does not depend on the scene. A renderer has one set of frame buffers and one
shadow map per shadow size (``shadow_size``), each made in a context of its own."""
_BUFFER_SIZE_LOCK = threading.Lock()

TargetKey = tuple[int, int, int, int]


def _target_key(model: mujoco.MjModel) -> TargetKey:
    """What a model asks of its render target: offscreen size, samples and shadow map size."""
    return (
        int(model.vis.global_.offwidth),
        int(model.vis.global_.offheight),
        int(model.vis.quality.offsamples),
        int(model.vis.quality.shadowsize),
    )


def _make_target(key: TargetKey) -> mujoco.MjrContext:
    """A context that holds nothing but a render target (and MuJoCo's built-in shapes)."""
    width, height, samples, shadow = key
    spec = mujoco.MjSpec()
    spec.visual.global_.offwidth = width
    spec.visual.global_.offheight = height
    spec.visual.quality.offsamples = samples
    spec.visual.quality.shadowsize = shadow
    return mujoco.MjrContext(spec.compile(), mujoco.mjtFontScale.mjFONTSCALE_150)


def _make_scene_context(model: mujoco.MjModel, detail: tuple[int, int]) -> mujoco.MjrContext:
    """The scene's meshes and textures in the current OpenGL context, its built-in round shapes
    with ``detail``'s slices and stacks (``shape_detail``), with a 1 x 1 frame buffer and no
    shadow map of its own (``_LoadedScene.borrow`` lends it the renderer's).

    ``mjr_makeContext`` sizes the buffers and shapes from the model, so those are set for the
    call and then put back; the lock keeps two threads from restoring a changed value.
    Meanwhile the shared model (``compiled_model``) shows the changed values to other threads:
    only code making an OpenGL context from it reads them, which in this project is this
    function alone (``mujoco.Renderer`` is used on it in tests only, single-threaded)."""
    vis = model.vis
    with _BUFFER_SIZE_LOCK:
        saved = (
            vis.global_.offwidth,
            vis.global_.offheight,
            vis.quality.shadowsize,
            vis.quality.numslices,
            vis.quality.numstacks,
        )
        vis.global_.offwidth = vis.global_.offheight = 1
        vis.quality.shadowsize = 0
        vis.quality.numslices, vis.quality.numstacks = detail
        try:
            return mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
        finally:
            (
                vis.global_.offwidth,
                vis.global_.offheight,
                vis.quality.shadowsize,
                vis.quality.numslices,
                vis.quality.numstacks,
            ) = saved


@dataclass
class _LoadedScene:
    """A scene ready to render: its model, the hand's state, and (after the first frame) the
    GPU-side copy of the model in the renderer's OpenGL context, with the round shapes' detail
    of the frame size it was made for (``shape_detail``).

    The context draws into the renderer's render target (``borrow``): frame buffers and shadow
    map (about 24 MB at 1024 px) are made once per renderer, not once per scene, so a kept
    scene costs its meshes and textures alone and setting one up skips the allocation."""

    model: mujoco.MjModel
    data: mujoco.MjData
    view: mujoco.MjvScene | None = None
    context: mujoco.MjrContext | None = None
    detail: tuple[int, int] | None = None
    own_target: dict[str, int] | None = None
    target: tuple[mujoco.MjrContext, mujoco.MjrContext] | None = None

    def borrow(self, buffers: mujoco.MjrContext, shadows: mujoco.MjrContext) -> None:
        """Draw into ``buffers``' frame buffers with ``shadows``' shadow map from now on
        (called before every frame: the context's own are saved the first time only, to be put
        back before it is freed)."""
        assert self.context is not None
        if self.target == (buffers, shadows):
            return
        if self.own_target is None:
            self.own_target = {name: getattr(self.context, name) for name in _TARGET_FIELDS}
        for name in _BUFFER_FIELDS:
            setattr(self.context, name, getattr(buffers, name))
        for name in _SHADOW_FIELDS:
            setattr(self.context, name, getattr(shadows, name))
        self.target = (buffers, shadows)

    def free(self) -> None:
        """Free the context's own objects (never the borrowed target); the GL context must be
        current."""
        if self.context is not None:
            if self.own_target is not None:
                for name, value in self.own_target.items():
                    setattr(self.context, name, value)
            self.context.free()
        self.context = self.view = self.target = self.detail = None
        self.own_target = None


class MujocoRenderer:
    """Renders scenes with MuJoCo's OpenGL renderer, offscreen (EGL or OSMesa) on the CPU.

    A renderer keeps one OpenGL context for its whole life, made on its first frame in the
    thread that renders (a context belongs to one thread at a time). In it, the last
    ``keep_scenes`` scenes it drew stay set up (meshes and textures uploaded, about 16 MB for
    a robot): switching back to one costs nothing. They all draw into one render target per
    renderer (frame buffers and shadow map, about 24 MB at 1024 px). Up to ``keep_models``
    scenes stay compiled with their state beyond those (a robot's model is about 14 MB):
    setting one up again costs 5-25 ms instead of the compile (``compiled_model``).
    """

    def __init__(
        self,
        *,
        shadows: bool = True,
        antialias: bool = False,
        keep_scenes: int = 1,
        keep_models: int | None = None,
    ) -> None:
        if keep_scenes < 1:
            raise ValueError(f"keep_scenes must be at least 1, got {keep_scenes!r}")
        self.shadows = shadows
        self.antialias = antialias
        self.keep_scenes = keep_scenes
        self.keep_models = max(keep_scenes, keep_models or keep_scenes)
        self._scene: Scene | None = None
        self._mirror = True
        self._loaded: OrderedDict[tuple[str, bool], _LoadedScene] = OrderedDict()
        self._current: _LoadedScene | None = None
        self._gl: mujoco.GLContext | None = None
        self._targets: dict[TargetKey, mujoco.MjrContext] = {}
        self._max_size = DEFAULT_SIZE
        self._cell: Vec3 = (0, 0, 0)
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self._option = mujoco.MjvOption()
        self.loads = 0
        """How many times a scene was set up in the context (not found among the kept ones)."""

    @property
    def version(self) -> str:
        # Shadows and multisampling change the pixels, so they are part of the version.
        options = ("" if self.shadows else "-noshadow") + (
            f"-msaa{MSAA_SAMPLES}" if self.antialias else ""
        )
        return mujoco_renderer_version() + options

    @property
    def model(self) -> mujoco.MjModel:
        if self._current is None:
            raise RenderError("no scene loaded: call load(scene) first")
        return self._current.model

    @property
    def loaded_scenes(self) -> list[str]:
        """The ids of the scenes set up in the context, least recently used first (a control
        condition's as ``Scene.variant_id``)."""
        return [scene_id for (scene_id, _), kept in self._loaded.items() if kept.context]

    @property
    def compiled_scenes(self) -> list[str]:
        """The ids of every scene kept (set up or only compiled), least recently used first."""
        return [scene_id for scene_id, _ in self._loaded]

    def load(self, scene: Scene, *, mirror: bool = True) -> None:
        key = (scene.variant_id, mirror)
        loaded = self._loaded.get(key)
        if loaded is None:
            model = compiled_model(
                scene, mirror=mirror, max_size=self._max_size, antialias=self.antialias
            )
            loaded = _LoadedScene(model, mujoco.MjData(model))
            self._loaded[key] = loaded
            while len(self._loaded) > self.keep_models:
                _, evicted = self._loaded.popitem(last=False)
                self._free(evicted)
        self._loaded.move_to_end(key)
        self._scene, self._mirror, self._current = scene, mirror, loaded
        self.set_hand((0, 0, 0))

    def prepare(self, scene: Scene, *, mirror: bool = True) -> None:
        """Compile ``scene`` ahead of its ``load`` (any thread: no OpenGL is involved)."""
        compiled_model(scene, mirror=mirror, max_size=self._max_size, antialias=self.antialias)

    def set_hand(self, cell: Vec3) -> None:
        if self._scene is None or self._current is None:
            raise RenderError("no scene loaded: call load(scene) first")
        self._cell = cell
        model, data = self._current.model, self._current.data
        data.mocap_pos[0] = [_m(v) for v in hand_position_mm(self._scene, cell)]
        mujoco.mj_kinematics(model, data)
        mujoco.mj_camlight(model, data)

    def render(self, size: int = DEFAULT_SIZE) -> np.ndarray:
        validate_size(size)
        if self._scene is None or self._current is None:
            raise RenderError("no scene loaded: call load(scene) first")
        if size > self._max_size:
            # The offscreen buffer is sized when a model is compiled: rebuild with a larger one.
            scene, mirror, cell = self._scene, self._mirror, self._cell
            self._free_all()
            self._max_size = size
            self.load(scene, mirror=mirror)
            self.set_hand(cell)
        loaded = self._current
        assert loaded is not None
        if self._gl is None:
            self._gl = mujoco.GLContext(self._max_size, self._max_size)
        self._gl.make_current()
        detail = shape_detail(size)
        if loaded.context is not None and loaded.detail != detail:
            # Drawn at another size before: its round shapes are made again for this one.
            self._free(loaded)
        if loaded.context is None:
            self._free_beyond(self.keep_scenes - 1)
            self._gl.make_current()
            loaded.view = mujoco.MjvScene(loaded.model, maxgeom=MAX_GEOMS)
            loaded.context = _make_scene_context(loaded.model, detail)
            loaded.detail = detail
            self.loads += 1
        assert loaded.view is not None
        # The renderer's frame buffers, and the shadow map the frame's size asks for.
        width, height, samples, _ = _target_key(loaded.model)
        loaded.borrow(
            self._target((width, height, samples, 0)), self._target((1, 1, 0, shadow_size(size)))
        )
        # Several scenes share the OpenGL context: bind this one's offscreen buffer.
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, loaded.context)
        self._camera.fixedcamid = loaded.model.camera(CAMERA_NAME).id
        mujoco.mjv_updateScene(
            loaded.model,
            loaded.data,
            self._option,
            None,
            self._camera,
            mujoco.mjtCatBit.mjCAT_ALL,
            loaded.view,
        )
        if loaded.view.ngeom >= loaded.view.maxgeom:
            raise RenderError(f"{self._scene.id} has more than {MAX_GEOMS} geoms to draw")
        loaded.view.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = int(self.shadows)
        loaded.view.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 1
        rect = mujoco.MjrRect(0, 0, size, size)
        mujoco.mjr_render(rect, loaded.view, loaded.context)
        pixels = np.empty((size, size, 3), dtype=np.uint8)
        mujoco.mjr_readPixels(pixels, None, rect, loaded.context)
        # OpenGL's rows start at the bottom of the image.
        return np.ascontiguousarray(pixels[::-1])

    def _target(self, key: TargetKey) -> mujoco.MjrContext:
        if key not in self._targets:
            self._targets[key] = _make_target(key)
        return self._targets[key]

    def _free_beyond(self, count: int) -> None:
        """Free the contexts of all but the ``count`` most recently used set-up scenes (the
        scenes stay compiled)."""
        warm = [kept for kept in self._loaded.values() if kept.context is not None]
        for kept in warm[: max(0, len(warm) - count)]:
            self._free(kept)

    def unload(self, scene_id: str, *, mirror: bool = True) -> None:
        """Forget a kept scene, set up or compiled (nothing if it is not kept); never the
        loaded one. ``scene_id`` is the scene's ``variant_id``."""
        key = (scene_id, mirror)
        loaded = self._loaded.get(key)
        if loaded is None or loaded is self._current:
            return
        del self._loaded[key]
        self._free(loaded)

    def _free(self, loaded: _LoadedScene) -> None:
        if loaded.context is not None and self._gl is not None:
            self._gl.make_current()
        loaded.free()

    def _free_all(self) -> None:
        for loaded in self._loaded.values():
            self._free(loaded)
        self._loaded.clear()
        self._current = None
        if self._targets and self._gl is not None:
            self._gl.make_current()
            for target in self._targets.values():
                target.free()
        self._targets.clear()

    def close(self) -> None:
        self._free_all()
        if self._gl is not None:
            self._gl.free()
            self._gl = None
        self._scene = None

    def __enter__(self) -> MujocoRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
