"""Procedural human assets: four dressed mannequins and a floating human hand.

Everything is built from MuJoCo primitives (capsules, ellipsoids, boxes, cylinders and
spheres) added to an :class:`mujoco.MjSpec`, so the assets need no files and no downloads and
are the same on every call.

Conventions shared by every asset here:

* The world frame of the benchmark: x points forward (from the body towards the mirror), y to
  the body's left, z up, in metres.
* Every geom is purely visual (``contype = conaffinity = 0``); no joints are added, the
  renderer only runs ``mj_kinematics``.
* Every material and geom name starts with the asset id (``"male_0_skin"``,
  ``"mano_white_finger_index_1"``), so assets with different ids never clash in one spec.
  Adding the same id twice to one spec is an error (the names clash at compile time).
* No material reflects (``reflectance = 0``): MuJoCo only reflects in the first reflective
  geom, which must be the mirror.

Bodies stand on the floor (z = 0) at their parent's origin, face +x, and fit between
x = -0.15 and x = +0.15 (the body's depth in the benchmark is 0.3 m). Over the chest and belly
(z from 0.95 to 1.35, around the midline) their clothed front lies between x = 0.12 and
x = 0.15, so a flat mark placed at x = 0.15 sits on the clothes.

Hands are right hands with the fingers up (+z) and the palm facing -x (towards the body), so
the thumb is on the -y side; the parent's origin is the centre of the palm and the hand stays
within x = -0.05 .. +0.05 of it (the hand's depth in the benchmark is 0.1 m).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import mujoco

from simulation.catalogue import BODIES, HANDS

__all__ = [
    "BODY_HALF_DEPTH",
    "FINGER_NAMES",
    "HAND_HALF_DEPTH",
    "HUMAN_BODY_DESCRIPTIONS",
    "HUMAN_BODY_HEIGHTS",
    "HUMAN_BODY_IDS",
    "HUMAN_HAND_DESCRIPTIONS",
    "HUMAN_HAND_IDS",
    "HUMAN_HAND_RGB",
    "add_human_body",
    "add_human_hand",
    "finger_geom_name",
]

Vec3 = tuple[float, float, float]
RGB = tuple[float, float, float]

HUMAN_BODY_IDS = ("male_0", "male_1", "female_0", "female_1")
"""The human bodies of the benchmark, in catalogue order."""

HUMAN_BODY_HEIGHTS: dict[str, float] = {
    "male_0": 1.75,
    "male_1": 1.75,
    "female_0": 1.68,
    "female_1": 1.68,
}
"""Height of each body in metres: floor to the top of the head (hats and hair not included)."""

BODY_HALF_DEPTH = 0.15
"""Every body fits in x = -0.15 .. +0.15 around its parent's origin."""

HUMAN_BODY_DESCRIPTIONS: dict[str, tuple[str, str]] = {
    i: (BODIES[i].description, BODIES[i].short_description) for i in HUMAN_BODY_IDS
}
"""Body id -> (full description, short description), inserted verbatim in the prompts."""

HUMAN_HAND_IDS = ("mano_white", "mano_brown", "mano_purple")
"""The human hands of the benchmark: one hand model in three tints."""

HUMAN_HAND_RGB: dict[str, tuple[int, int, int]] = {
    i: rgb for i in HUMAN_HAND_IDS if (rgb := HANDS[i].rgb) is not None
}
"""Hand id -> the 8-bit RGB colour of the whole hand."""

HUMAN_HAND_DESCRIPTIONS: dict[str, str] = {i: HANDS[i].description for i in HUMAN_HAND_IDS}
"""Hand id -> its description, inserted verbatim in the prompts."""

HAND_HALF_DEPTH = 0.05
"""Every hand fits in x = -0.05 .. +0.05 around its parent's origin."""

FINGER_NAMES = ("thumb", "index", "middle", "ring", "little")
"""The hand's fingers; see :func:`finger_geom_name` for how their geoms are named."""

_BOX = mujoco.mjtGeom.mjGEOM_BOX
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_CYLINDER = mujoco.mjtGeom.mjGEOM_CYLINDER
_ELLIPSOID = mujoco.mjtGeom.mjGEOM_ELLIPSOID
_SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE
_IDENTITY = (1.0, 0.0, 0.0, 0.0)


def finger_geom_name(hand_id: str, finger: str, segment: int) -> str:
    """Return the geom name of one finger segment of a hand.

    Args:
        hand_id: One of :data:`HUMAN_HAND_IDS`.
        finger: One of :data:`FINGER_NAMES`.
        segment: 1 (next to the palm) to 3 (the fingertip).

    Returns:
        ``"{hand_id}_finger_{finger}_{segment}"``; every finger has exactly three segments.
    """
    return f"{hand_id}_finger_{finger}_{segment}"


def _rgb(r: int, g: int, b: int) -> RGB:
    return (r / 255.0, g / 255.0, b / 255.0)


def _quat_x(degrees: float) -> tuple[float, float, float, float]:
    """Rotation about the x axis."""
    half = math.radians(degrees) / 2
    return (math.cos(half), math.sin(half), 0.0, 0.0)


class _Builder:
    """Adds named materials and visual-only geoms to one body of a spec."""

    def __init__(self, spec: mujoco.MjSpec, body: mujoco.MjsBody, prefix: str) -> None:
        self._spec = spec
        self._body = body
        self._prefix = prefix
        self._uses: dict[str, int] = {}

    def material(self, key: str, rgb: RGB, specular: float = 0.15, shininess: float = 0.15) -> str:
        name = f"{self._prefix}_{key}"
        self._spec.add_material(
            name=name,
            rgba=[*rgb, 1.0],
            specular=specular,
            shininess=shininess,
            reflectance=0.0,
        )
        return name

    def _name(self, part: str) -> str:
        count = self._uses.get(part, 0) + 1
        self._uses[part] = count
        return f"{self._prefix}_{part}" if count == 1 else f"{self._prefix}_{part}_{count}"

    def _add(
        self,
        part: str,
        kind: mujoco.mjtGeom,
        size: Sequence[float],
        material: str,
        pos: Sequence[float] = (0.0, 0.0, 0.0),
        quat: Sequence[float] = _IDENTITY,
        fromto: Sequence[float] | None = None,
        exact_name: bool = False,
    ) -> None:
        name = f"{self._prefix}_{part}" if exact_name else self._name(part)
        geom = self._body.add_geom(
            name=name,
            type=kind,
            size=[*size, *([0.0] * (3 - len(size)))],
            pos=list(pos),
            quat=list(quat),
            material=material,
            contype=0,
            conaffinity=0,
        )
        if fromto is not None:
            geom.fromto = list(fromto)

    def capsule(
        self, part: str, a: Vec3, b: Vec3, radius: float, material: str, exact: bool = False
    ) -> None:
        self._add(part, _CAPSULE, [radius], material, fromto=[*a, *b], exact_name=exact)

    def cylinder(self, part: str, a: Vec3, b: Vec3, radius: float, material: str) -> None:
        self._add(part, _CYLINDER, [radius], material, fromto=[*a, *b])

    def ellipsoid(
        self,
        part: str,
        pos: Vec3,
        semi: Vec3,
        material: str,
        quat: Sequence[float] = _IDENTITY,
        exact: bool = False,
    ) -> None:
        self._add(part, _ELLIPSOID, semi, material, pos=pos, quat=quat, exact_name=exact)

    def sphere(self, part: str, pos: Vec3, radius: float, material: str) -> None:
        self._add(part, _SPHERE, [radius], material, pos=pos)

    def box(
        self, part: str, pos: Vec3, half: Vec3, material: str, quat: Sequence[float] = _IDENTITY
    ) -> None:
        self._add(part, _BOX, half, material, pos=pos, quat=quat)

    def slab(
        self,
        part: str,
        z0: float,
        z1: float,
        half_width: float,
        half_depth: float,
        corner: float,
        material: str,
        x: float = 0.0,
        round_top: bool = False,
    ) -> None:
        """A vertical prism with a rounded-rectangle cross-section (flat front and back).

        With ``round_top`` its top edges are rounded with the corner radius as well.
        """
        zt = z1 - corner if round_top else z1
        zc, hz = (z0 + zt) / 2, (zt - z0) / 2
        inner_d, inner_w = half_depth - corner, half_width - corner
        self.box(part, (x, 0.0, zc), (half_depth, inner_w, hz), material)
        self.box(part, (x, 0.0, zc), (inner_d, half_width, hz), material)
        for sx in (-1.0, 1.0):
            for sy in (-1.0, 1.0):
                cx = x + sx * inner_d
                cy = sy * inner_w
                self.cylinder(part, (cx, cy, z0), (cx, cy, zt), corner, material)
        if not round_top:
            return
        self.box(part, (x, 0.0, zt + corner / 2), (inner_d, inner_w, corner / 2), material)
        for s in (-1.0, 1.0):
            self.capsule(
                part,
                (x + s * inner_d, -inner_w, zt),
                (x + s * inner_d, inner_w, zt),
                corner,
                material,
            )
            self.capsule(
                part,
                (x - inner_d, s * inner_w, zt),
                (x + inner_d, s * inner_w, zt),
                corner,
                material,
            )


# ---------------------------------------------------------------------------------------------
# Bodies
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Anatomy:
    """Body proportions. Heights are given for a 1.75 m figure and scaled by ``height``."""

    height: float
    female: bool
    shoulder_y: float
    hip_hw: float
    chest_hw: float
    trunk_hd: float
    upper_arm_r: float
    forearm_r: float
    thigh_r: float
    calf_r: float
    neck_r: float
    head: Vec3

    @property
    def scale(self) -> float:
        return self.height / 1.75

    def z(self, z_at_175: float) -> float:
        return z_at_175 * self.scale


_MALE = _Anatomy(
    height=1.75,
    female=False,
    shoulder_y=0.195,
    hip_hw=0.172,
    chest_hw=0.185,
    trunk_hd=0.13,
    upper_arm_r=0.046,
    forearm_r=0.039,
    thigh_r=0.079,
    calf_r=0.057,
    neck_r=0.056,
    head=(0.1, 0.078, 0.115),
)

_FEMALE = _Anatomy(
    height=1.68,
    female=True,
    shoulder_y=0.178,
    hip_hw=0.182,
    chest_hw=0.168,
    trunk_hd=0.125,
    upper_arm_r=0.04,
    forearm_r=0.034,
    thigh_r=0.078,
    calf_r=0.053,
    neck_r=0.048,
    head=(0.095, 0.073, 0.11),
)

_TRUNK_X = 0.012  # the trunk is centred a little forward of the feet's axis
_TRUNK_CORNER = 0.07  # radius of the trunk's rounded edges
_HEAD_X = 0.015
_HEAD_Z = 1.635  # head centre of the 1.75 m figure; top of the head at 1.75 m


@dataclass(frozen=True)
class _Outfit:
    """Material names for the parts of a figure."""

    skin: str
    hair: str
    lips: str
    eyes: str
    eye_white: str
    trunk: tuple[tuple[float, float, str], ...]  # (z0, z1, material) from hips to chest top
    trunk_top: str  # chest top and shoulder straps
    shoulder: str  # deltoids
    collar: str
    upper_arm: str
    sleeve: str | None  # short sleeve material (upper arm is then skin) or None
    forearm: str
    thigh: str
    shin: str
    shoe: str
    long_hair: bool


def _trunk_half_width(anatomy: _Anatomy, z_mid: float) -> float:
    return anatomy.hip_hw if z_mid < 1.0 else anatomy.chest_hw


def _head_surface_x(anatomy: _Anatomy, y: float, z: float) -> float:
    """x of the front of the head ellipsoid at (y, z) (z of the scaled figure)."""
    a, b, c = anatomy.head
    dz = z - anatomy.z(_HEAD_Z)
    inside = max(0.0, 1.0 - (y / b) ** 2 - (dz / c) ** 2)
    return _HEAD_X + a * math.sqrt(inside)


def _front_x(anatomy: _Anatomy) -> float:
    return _TRUNK_X + anatomy.trunk_hd


def _build_figure(bld: _Builder, an: _Anatomy, out: _Outfit) -> None:
    """The shared mannequin: legs, trunk, arms, neck, head, face and hair."""
    z = an.z
    hd = an.trunk_hd
    # Legs and shoes.
    for side in (-1.0, 1.0):
        hip: Vec3 = (0.0, side * 0.09, z(0.9))
        knee: Vec3 = (0.01, side * 0.095, z(0.5))
        ankle: Vec3 = (0.0, side * 0.1, z(0.1))
        bld.capsule("thigh", hip, knee, an.thigh_r, out.thigh)
        bld.capsule("shin", knee, ankle, an.calf_r, out.shin)
        foot_y = side * 0.1
        bld.ellipsoid("shoe", (0.02, foot_y, 0.045), (0.125, 0.05, 0.045), out.shoe)
        bld.box("sole", (0.02, foot_y, 0.012), (0.12, 0.048, 0.012), out.shoe)
    # Trunk: stacked rounded slabs with a flat front, buttocks, chest top.
    for i, (z0, z1, material) in enumerate(out.trunk):
        hw = _trunk_half_width(an, (z0 + z1) / 2)
        last = i == len(out.trunk) - 1
        bld.slab("trunk", z(z0), z(z1), hw, hd, _TRUNK_CORNER, material, x=_TRUNK_X, round_top=last)
    if an.female:
        front = _front_x(an)
        for side in (-1.0, 1.0):
            bld.ellipsoid(
                "bust",
                (front - 0.045, side * 0.072, z(1.245)),
                (0.051, 0.062, 0.058),
                out.trunk[-1][2],
            )
    # Shoulders and arms, hanging at the sides, a little away from the trunk.
    sy = an.shoulder_y
    for side in (-1.0, 1.0):
        bld.capsule(
            "shoulder_strap",
            (-0.01, side * 0.05, z(1.45)),
            (0.0, side * (sy - 0.03), z(1.415)),
            0.05,
            out.trunk_top,
        )
        shoulder: Vec3 = (0.0, side * (sy + 0.005), z(1.4))
        elbow: Vec3 = (0.0, side * (sy + 0.04), z(1.1))
        wrist: Vec3 = (0.03, side * (sy + 0.05), z(0.85))
        bld.sphere("deltoid", shoulder, an.upper_arm_r + 0.012, out.shoulder)
        bld.capsule("upper_arm", shoulder, elbow, an.upper_arm_r, out.upper_arm)
        if out.sleeve is not None:
            cuff: Vec3 = (0.0, side * (sy + 0.025), z(1.24))
            bld.capsule("sleeve", shoulder, cuff, an.upper_arm_r + 0.007, out.sleeve)
        bld.capsule("forearm", elbow, wrist, an.forearm_r, out.forearm)
        hand_y = side * (sy + 0.055)
        bld.ellipsoid("hand", (0.035, hand_y, z(0.775)), (0.045, 0.018, 0.08), out.skin)
        bld.capsule(
            "thumb",
            (0.055, hand_y - side * 0.01, z(0.83)),
            (0.078, hand_y - side * 0.012, z(0.775)),
            0.011,
            out.skin,
        )
    # Neck, collar and head.
    bld.capsule("neck", (0.0, 0.0, z(1.4)), (0.01, 0.0, z(1.57)), an.neck_r, out.skin)
    bld.cylinder("collar", (0.0, 0.0, z(1.42)), (0.0, 0.0, z(1.455)), an.neck_r + 0.008, out.collar)
    head_z = z(_HEAD_Z)
    a, b, c = an.head
    bld.ellipsoid("head", (_HEAD_X, 0.0, head_z), an.head, out.skin, exact=True)
    jaw_x, jaw_z = _HEAD_X + 0.015, head_z - 0.075
    jaw = (a - 0.035, b - 0.02, 0.05)
    bld.ellipsoid("jaw", (jaw_x, 0.0, jaw_z), jaw, out.skin)
    if not out.long_hair:  # long hair covers the ears
        for side in (-1.0, 1.0):
            bld.ellipsoid("ear", (0.005, side * b, head_z - 0.005), (0.02, 0.012, 0.03), out.skin)
    # Face: eyes (white and pupil), brows, nose and mouth, set on the surface of the head.
    eye_z = head_z + 0.02
    for side in (-1.0, 1.0):
        ey = side * 0.032
        ex = _head_surface_x(an, ey, eye_z)
        bld.ellipsoid("eye_white", (ex - 0.002, ey, eye_z), (0.006, 0.014, 0.008), out.eye_white)
        bld.sphere("eye", (ex - 0.002, ey, eye_z), 0.0075, out.eyes)
        brow_z = eye_z + 0.022
        brow_x = _head_surface_x(an, side * 0.033, brow_z)
        bld.capsule(
            "brow",
            (brow_x, side * 0.014, brow_z),
            (brow_x - 0.006, side * 0.05, brow_z - 0.003),
            0.0045,
            out.hair,
        )
    nose_z = head_z - 0.014
    nose_x = _head_surface_x(an, 0.0, nose_z)
    bld.ellipsoid("nose", (nose_x - 0.004, 0.0, nose_z), (0.016, 0.011, 0.019), out.skin)
    mouth_z = head_z - 0.052
    jaw_front = jaw_x + jaw[0] * math.sqrt(1.0 - ((mouth_z - jaw_z) / jaw[2]) ** 2)
    mouth_x = max(jaw_front, _head_surface_x(an, 0.0, mouth_z)) - 0.003
    bld.capsule("mouth", (mouth_x, -0.017, mouth_z), (mouth_x, 0.017, mouth_z), 0.005, out.lips)
    # Hair: a cap over the top and back of the head; long hair adds locks down the back.
    bld.ellipsoid(
        "hair", (_HEAD_X - 0.015, 0.0, head_z + 0.03), (a + 0.005, b + 0.006, c - 0.015), out.hair
    )
    if out.long_hair:
        bld.ellipsoid("hair_long", (-0.06, 0.0, head_z - 0.12), (0.055, b + 0.012, 0.2), out.hair)
        for side in (-1.0, 1.0):
            bld.ellipsoid(
                "hair_lock",
                (-0.02, side * (b + 0.004), head_z - 0.07),
                (0.05, 0.022, 0.12),
                out.hair,
            )


def _flat_front_top(an: _Anatomy, out: _Outfit) -> float:
    """z where the flat front of the chest ends and the rounded shoulders begin."""
    return an.z(out.trunk[-1][1]) - _TRUNK_CORNER


def _open_front(
    bld: _Builder,
    an: _Anatomy,
    shirt: str,
    panel: str,
    v_bottom: float,
    v_top: float,
    top_half: float,
    strip_half: float = 0.0,
    strip_bottom: float | None = None,
    lapel: str | None = None,
) -> None:
    """An open jacket or vest front: the shirt shows in a V (and a strip below it).

    The shirt is a thin plate on the chest; two panels of the garment's material, tilted to
    form the V, cover it except between their inner edges, which run from (+-strip_half,
    v_bottom) up to (+-top_half, v_top). Below the V a strip of half width ``strip_half`` stays
    open down to ``strip_bottom`` (if given). Heights are those of the scaled figure.
    """
    front = _front_x(an)
    bottom = v_bottom if strip_bottom is None else strip_bottom
    bld.box(
        "shirt_front",
        (front + 0.001, 0.0, (bottom + v_top) / 2),
        (0.002, top_half, (v_top - bottom) / 2),
        shirt,
    )
    theta = math.atan2(top_half - strip_half, v_top - v_bottom)
    half_len = math.hypot(top_half - strip_half, v_top - v_bottom) / 2
    width = 0.065
    for side in (-1.0, 1.0):
        phi = -side * theta
        ly = (math.cos(phi), math.sin(phi))  # the panel's local y axis in the (y, z) plane
        mid_y = side * (strip_half + top_half) / 2
        mid_z = (v_bottom + v_top) / 2
        center = (front + 0.0035, mid_y + side * width * ly[0], mid_z + side * width * ly[1])
        bld.box(
            "front_panel", center, (0.002, width, half_len), panel, quat=_quat_x(math.degrees(phi))
        )
        if lapel is not None:
            edge = (front + 0.005, mid_y + side * 0.012 * ly[0], mid_z + side * 0.012 * ly[1])
            bld.box("lapel", edge, (0.002, 0.012, half_len), lapel, quat=_quat_x(math.degrees(phi)))
        if strip_bottom is not None:
            bld.box(
                "front_panel",
                (front + 0.0035, side * (strip_half + 0.03), (strip_bottom + v_bottom) / 2),
                (0.002, 0.03, (v_bottom - strip_bottom) / 2),
                panel,
            )


def _male_0(bld: _Builder) -> None:
    an = _MALE
    skin = bld.material("skin", _rgb(224, 172, 140), specular=0.2, shininess=0.2)
    shirt = bld.material("shirt", _rgb(40, 70, 130))
    vest = bld.material("vest", _rgb(255, 110, 10), specular=0.25)
    stripe = bld.material("stripe", _rgb(205, 210, 205), specular=0.5, shininess=0.5)
    trousers = bld.material("trousers", _rgb(95, 95, 92))
    out = _Outfit(
        skin=skin,
        hair=bld.material("hair", _rgb(70, 48, 30)),
        lips=bld.material("lips", _rgb(180, 110, 100)),
        eyes=bld.material("eyes", _rgb(35, 25, 20), specular=0.5, shininess=0.6),
        eye_white=bld.material("eye_white", _rgb(235, 235, 230)),
        trunk=((0.84, 0.98, trousers), (0.98, 1.43, vest)),
        trunk_top=vest,
        shoulder=shirt,
        collar=shirt,
        upper_arm=shirt,
        sleeve=None,
        forearm=shirt,
        thigh=trousers,
        shin=trousers,
        shoe=bld.material("boots", _rgb(105, 65, 30)),
        long_hair=False,
    )
    _build_figure(bld, an, out)
    # Work boots: the boot shaft covers the ankles.
    for side in (-1.0, 1.0):
        bld.capsule(
            "boot_shaft",
            (0.0, side * 0.1, 0.075),
            (0.0, side * 0.1, 0.17),
            an.calf_r + 0.008,
            out.shoe,
        )
    # Reflective bands around the vest and up over the shoulders at the front.
    for z0 in (1.04, 1.24):
        bld.slab(
            "stripe",
            an.z(z0),
            an.z(z0 + 0.045),
            an.chest_hw + 0.003,
            an.trunk_hd + 0.003,
            _TRUNK_CORNER + 0.003,
            stripe,
            x=_TRUNK_X,
        )
    front = _front_x(an)
    for side in (-1.0, 1.0):
        bld.box(
            "stripe_front", (front + 0.002, side * 0.085, an.z(1.3)), (0.002, 0.022, 0.06), stripe
        )
    # Red hard hat: dome, brim and a ridge from front to back.
    hat = bld.material("hard_hat", _rgb(205, 25, 25), specular=0.4, shininess=0.5)
    hat_z = an.z(_HEAD_Z) + 0.068
    bld.ellipsoid("hat_dome", (_HEAD_X, 0.0, hat_z), (0.105, 0.088, 0.08), hat)
    bld.ellipsoid("hat_brim", (_HEAD_X, 0.0, hat_z), (0.13, 0.108, 0.008), hat)
    bld.ellipsoid("hat_ridge", (_HEAD_X, 0.0, hat_z + 0.004), (0.099, 0.016, 0.084), hat)


def _male_1(bld: _Builder) -> None:
    an = _MALE
    jacket = bld.material("jacket", _rgb(120, 75, 40))
    lapel = bld.material("lapel", _rgb(95, 58, 30))
    shirt = bld.material("shirt", _rgb(150, 150, 150))
    trousers = bld.material("trousers", _rgb(35, 45, 75))
    out = _Outfit(
        skin=bld.material("skin", _rgb(170, 120, 90), specular=0.2, shininess=0.2),
        hair=bld.material("hair", _rgb(20, 18, 16)),
        lips=bld.material("lips", _rgb(130, 75, 65)),
        eyes=bld.material("eyes", _rgb(25, 18, 14), specular=0.5, shininess=0.6),
        eye_white=bld.material("eye_white", _rgb(235, 235, 230)),
        trunk=((0.84, 0.9, trousers), (0.9, 1.43, jacket)),
        trunk_top=jacket,
        shoulder=jacket,
        collar=shirt,
        upper_arm=jacket,
        sleeve=None,
        forearm=jacket,
        thigh=trousers,
        shin=trousers,
        shoe=bld.material("shoes", _rgb(22, 22, 22), specular=0.4, shininess=0.5),
        long_hair=False,
    )
    _build_figure(bld, an, out)
    # The open jacket shows the grey shirt in a V between two lapels; two buttons below it.
    top = _flat_front_top(an, out) - 0.005
    _open_front(bld, an, shirt, jacket, an.z(1.17), top, 0.06, lapel=lapel)
    front = _front_x(an)
    button = bld.material("button", _rgb(40, 28, 18))
    for zb in (1.05, 1.0):
        bld.sphere("button", (front - 0.002, 0.0, an.z(zb)), 0.008, button)
    # Jacket collar behind the neck.
    bld.ellipsoid("jacket_collar", (-0.035, 0.0, an.z(1.455)), (0.045, 0.085, 0.035), jacket)


def _female_0(bld: _Builder) -> None:
    an = _FEMALE
    shirt = bld.material("shirt", _rgb(70, 115, 190))
    navy = bld.material("navy", _rgb(22, 28, 55))
    skin = bld.material("skin", _rgb(232, 190, 160), specular=0.2, shininess=0.2)
    belt = bld.material("belt", _rgb(15, 15, 15), specular=0.4, shininess=0.5)
    gold = bld.material("gold", _rgb(220, 175, 50), specular=0.6, shininess=0.6)
    out = _Outfit(
        skin=skin,
        hair=bld.material("hair", _rgb(95, 60, 35)),
        lips=bld.material("lips", _rgb(190, 90, 95)),
        eyes=bld.material("eyes", _rgb(40, 30, 25), specular=0.5, shininess=0.6),
        eye_white=bld.material("eye_white", _rgb(235, 235, 230)),
        trunk=((0.84, 0.97, navy), (0.97, 1.01, belt), (1.01, 1.44, shirt)),
        trunk_top=shirt,
        shoulder=shirt,
        collar=shirt,
        upper_arm=skin,
        sleeve=shirt,
        forearm=skin,
        thigh=navy,
        shin=navy,
        shoe=bld.material("shoes", _rgb(18, 18, 18), specular=0.4, shininess=0.5),
        long_hair=True,
    )
    _build_figure(bld, an, out)
    front = _front_x(an)
    # Tie, badge, belt buckle and epaulettes.
    bld.box("tie", (front + 0.002, 0.0, an.z(1.3)), (0.002, 0.014, an.z(0.095)), navy)
    for side in (-1.0, 1.0):
        bld.box(
            "epaulette",
            (0.0, side * (an.shoulder_y - 0.045), an.z(1.435)),
            (0.025, 0.055, 0.006),
            navy,
            quat=_quat_x(-side * 14.0),
        )
    bld.ellipsoid("badge", (front + 0.003, 0.07, an.z(1.34)), (0.004, 0.018, 0.022), gold)
    bld.box("buckle", (front + 0.003, 0.0, an.z(0.99)), (0.003, 0.022, 0.016), gold)
    # Peaked police cap: band, crown, visor and badge.
    head_z = an.z(_HEAD_Z)
    bld.cylinder(
        "cap_band", (_HEAD_X, 0.0, head_z + 0.045), (_HEAD_X, 0.0, head_z + 0.085), 0.09, navy
    )
    bld.ellipsoid("cap_crown", (_HEAD_X - 0.005, 0.0, head_z + 0.095), (0.11, 0.1, 0.03), navy)
    bld.ellipsoid(
        "cap_visor",
        (_HEAD_X + 0.065, 0.0, head_z + 0.045),
        (0.065, 0.08, 0.008),
        belt,
        quat=(math.cos(math.radians(-8)), 0.0, math.sin(math.radians(-8)), 0.0),
    )
    bld.ellipsoid("cap_badge", (_HEAD_X + 0.094, 0.0, head_z + 0.07), (0.004, 0.014, 0.016), gold)


def _female_1(bld: _Builder) -> None:
    an = _FEMALE
    vest = bld.material("vest", _rgb(110, 45, 140))
    shirt = bld.material("shirt", _rgb(60, 150, 70))
    trousers = bld.material("trousers", _rgb(45, 45, 50))
    out = _Outfit(
        skin=bld.material("skin", _rgb(150, 100, 70), specular=0.2, shininess=0.2),
        hair=bld.material("hair", _rgb(15, 12, 12)),
        lips=bld.material("lips", _rgb(140, 70, 70)),
        eyes=bld.material("eyes", _rgb(20, 15, 12), specular=0.5, shininess=0.6),
        eye_white=bld.material("eye_white", _rgb(235, 235, 230)),
        trunk=((0.84, 0.95, trousers), (0.95, 1.44, vest)),
        trunk_top=vest,
        shoulder=shirt,
        collar=shirt,
        upper_arm=shirt,
        sleeve=None,
        forearm=shirt,
        thigh=trousers,
        shin=trousers,
        shoe=bld.material("shoes", _rgb(20, 20, 20), specular=0.4, shininess=0.5),
        long_hair=True,
    )
    _build_figure(bld, an, out)
    # The open vest shows the green shirt in a V and a strip down the front.
    top = _flat_front_top(an, out) - 0.005
    _open_front(
        bld, an, shirt, vest, an.z(1.22), top, 0.055, strip_half=0.018, strip_bottom=an.z(0.96)
    )


_BODY_BUILDERS = {
    "male_0": _male_0,
    "male_1": _male_1,
    "female_0": _female_0,
    "female_1": _female_1,
}


def add_human_body(spec: mujoco.MjSpec, parent: mujoco.MjsBody, body_id: str) -> None:
    """Add a dressed human mannequin to ``parent``.

    The figure stands on the floor (z = 0 of ``parent``) at ``parent``'s origin, faces +x with
    its arms hanging at its sides, and fits in x = -0.15 .. +0.15. Its chest and belly front
    (z = 0.95 .. 1.35 near the midline) lies between x = 0.12 and 0.15. Its height is
    :data:`HUMAN_BODY_HEIGHTS` ``[body_id]`` and it is dressed as
    :data:`HUMAN_BODY_DESCRIPTIONS` ``[body_id]`` says. Only visual geoms and non-reflective
    materials are added, all named with the prefix ``f"{body_id}_"``.

    Args:
        spec: The spec that receives the materials.
        parent: The body that receives the geoms.
        body_id: One of :data:`HUMAN_BODY_IDS`.

    Raises:
        KeyError: ``body_id`` is not one of :data:`HUMAN_BODY_IDS`.
    """
    if body_id not in _BODY_BUILDERS:
        raise KeyError(f"unknown human body {body_id!r}; valid ids: {', '.join(HUMAN_BODY_IDS)}")
    _BODY_BUILDERS[body_id](_Builder(spec, parent, body_id))


# ---------------------------------------------------------------------------------------------
# Hands
# ---------------------------------------------------------------------------------------------

# Per finger: y of the knuckle, z of the knuckle, segment lengths, radius at the knuckle and
# the sideways spread (degrees, positive towards +y).
_FINGERS: dict[str, tuple[float, float, tuple[float, float, float], float, float]] = {
    "index": (-0.0275, 0.047, (0.04, 0.024, 0.019), 0.0092, -6.0),
    "middle": (-0.009, 0.05, (0.045, 0.028, 0.021), 0.0095, -1.0),
    "ring": (0.0095, 0.047, (0.042, 0.026, 0.02), 0.009, 4.0),
    "little": (0.0275, 0.04, (0.032, 0.02, 0.018), 0.008, 10.0),
}
_CURL_DEG = (6.0, 10.0, 10.0)  # bend towards the palm (-x) at each finger joint


def add_human_hand(spec: mujoco.MjSpec, parent: mujoco.MjsBody, hand_id: str) -> None:
    """Add a floating human right hand (no arm, a short wrist) to ``parent``.

    The fingers point up (+z) and the palm faces -x, so the thumb is on the -y side.
    ``parent``'s origin is the centre of the palm; the wrist is about 0.045 m below it and the
    tip of the middle finger about 0.15 m above it (0.19 m from wrist to fingertip); the palm
    is 0.085 m wide. The hand stays within x = -0.05 .. +0.05 of the origin. The whole hand has
    the colour :data:`HUMAN_HAND_RGB` ``[hand_id]`` (one non-reflective material named
    ``f"{hand_id}_skin"``); every finger has three capsule segments named by
    :func:`finger_geom_name`. All geoms are visual only and named with the prefix
    ``f"{hand_id}_"``.

    Args:
        spec: The spec that receives the material.
        parent: The body that receives the geoms (the renderer moves it).
        hand_id: One of :data:`HUMAN_HAND_IDS`.

    Raises:
        KeyError: ``hand_id`` is not one of :data:`HUMAN_HAND_IDS`.
    """
    if hand_id not in HUMAN_HAND_RGB:
        raise KeyError(f"unknown human hand {hand_id!r}; valid ids: {', '.join(HUMAN_HAND_IDS)}")
    bld = _Builder(spec, parent, hand_id)
    skin = bld.material("skin", _rgb(*HUMAN_HAND_RGB[hand_id]), specular=0.2, shininess=0.25)
    # Palm: a rounded plate, with the heel of the hand and the knuckle line rounded off.
    bld.box("palm", (0.0, 0.0, 0.002), (0.0125, 0.03, 0.043), skin)
    for side in (-1.0, 1.0):
        bld.capsule("palm_edge", (0.0, side * 0.03, -0.038), (0.0, side * 0.03, 0.04), 0.0125, skin)
    bld.capsule("knuckles", (0.0, -0.03, 0.045), (0.0, 0.03, 0.04), 0.0125, skin)
    bld.capsule("palm_heel", (-0.002, -0.028, -0.04), (-0.002, 0.028, -0.04), 0.0135, skin)
    bld.ellipsoid("thenar", (-0.008, -0.022, -0.018), (0.012, 0.022, 0.032), skin)
    # Wrist stub: narrower and a little thicker than the palm.
    bld.ellipsoid("wrist", (0.0, 0.0, -0.078), (0.018, 0.031, 0.042), skin)
    # Four fingers, curling slightly towards the palm.
    for finger, (y, z, lengths, radius, spread) in _FINGERS.items():
        point = (0.0, y, z)
        pitch = 0.0
        yaw = math.radians(spread)
        for segment, (length, curl) in enumerate(zip(lengths, _CURL_DEG, strict=True), start=1):
            pitch += math.radians(curl)
            direction = (
                -math.sin(pitch) * math.cos(yaw),
                math.sin(yaw) * math.cos(pitch),
                math.cos(pitch) * math.cos(yaw),
            )
            end = tuple(p + length * d for p, d in zip(point, direction, strict=True))
            seg_r = radius * (1.0 - 0.07 * (segment - 1))
            bld.capsule(
                f"finger_{finger}_{segment}",
                point,
                (end[0], end[1], end[2]),
                seg_r,
                skin,
                exact=True,
            )
            point = (end[0], end[1], end[2])
    # Thumb: from the base of the palm on the -y side, up and outwards, a little in front of
    # the palm (towards -x).
    thumb = [
        (-0.006, -0.024, -0.03),
        (-0.016, -0.05, 0.0),
        (-0.022, -0.066, 0.027),
        (-0.025, -0.075, 0.05),
    ]
    radii = (0.0125, 0.011, 0.0095)
    for segment in range(1, 4):
        bld.capsule(
            f"finger_thumb_{segment}",
            thumb[segment - 1],
            thumb[segment],
            radii[segment - 1],
            skin,
            exact=True,
        )
