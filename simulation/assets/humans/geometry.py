"""Geometry of the shared mannequin, one function per body part, dressed from an outfit.

:func:`_build_mannequin` adds an outfit's materials, then the figure part by part (legs, trunk,
arms, head, face, hair), then the outfit's accessories. Each part takes the outfit and the
material names by key; the order of the geoms (and so their names) is fixed by the order of
the calls.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from simulation.assets.humans.accessories import _add_accessory
from simulation.assets.humans.anatomy import (
    _HEAD_X,
    _HEAD_Z,
    _TRUNK_CORNER,
    _TRUNK_X,
    _Anatomy,
    _front_x,
    _head_surface_x,
    _trunk_half_width,
)
from simulation.assets.humans.builder import Vec3, _Builder, _rgb
from simulation.assets.humans.outfits import _Outfit


def _build_mannequin(bld: _Builder, outfit: _Outfit) -> None:
    """The dressed figure: materials, legs, trunk, arms, neck, head, face, hair, accessories."""
    mat = {
        key: bld.material(key, _rgb(*paint.rgb), specular=paint.specular, shininess=paint.shininess)
        for key, paint in outfit.paints.items()
    }
    _legs(bld, outfit, mat)
    _trunk(bld, outfit, mat)
    _arms(bld, outfit, mat)
    _head(bld, outfit, mat)
    _face(bld, outfit, mat)
    _hair(bld, outfit, mat)
    for accessory in outfit.accessories:
        _add_accessory(bld, outfit, mat, accessory)


def _legs(bld: _Builder, outfit: _Outfit, mat: Mapping[str, str]) -> None:
    """Legs and shoes."""
    an = outfit.anatomy
    z = an.z
    for side in (-1.0, 1.0):
        hip: Vec3 = (0.0, side * 0.09, z(0.9))
        knee: Vec3 = (0.01, side * 0.095, z(0.5))
        ankle: Vec3 = (0.0, side * 0.1, z(0.1))
        bld.capsule("thigh", hip, knee, an.thigh_r, mat[outfit.thigh])
        bld.capsule("shin", knee, ankle, an.calf_r, mat[outfit.shin])
        foot_y = side * 0.1
        bld.ellipsoid("shoe", (0.02, foot_y, 0.045), (0.125, 0.05, 0.045), mat[outfit.shoe])
        bld.box("sole", (0.02, foot_y, 0.012), (0.12, 0.048, 0.012), mat[outfit.shoe])


def _trunk(bld: _Builder, outfit: _Outfit, mat: Mapping[str, str]) -> None:
    """Trunk: stacked rounded slabs with a flat front, buttocks, chest top (and bust)."""
    an = outfit.anatomy
    z = an.z
    hd = an.trunk_hd
    for i, (z0, z1, key) in enumerate(outfit.trunk):
        hw = _trunk_half_width(an, (z0 + z1) / 2)
        last = i == len(outfit.trunk) - 1
        bld.slab("trunk", z(z0), z(z1), hw, hd, _TRUNK_CORNER, mat[key], x=_TRUNK_X, round_top=last)
    if an.female:
        front = _front_x(an)
        for side in (-1.0, 1.0):
            bld.ellipsoid(
                "bust",
                (front - 0.045, side * 0.072, z(1.245)),
                (0.051, 0.062, 0.058),
                mat[outfit.trunk[-1][2]],
            )


def _arms(bld: _Builder, outfit: _Outfit, mat: Mapping[str, str]) -> None:
    """Shoulders and arms, hanging at the sides, a little away from the trunk."""
    an = outfit.anatomy
    z = an.z
    sy = an.shoulder_y
    for side in (-1.0, 1.0):
        bld.capsule(
            "shoulder_strap",
            (-0.01, side * 0.05, z(1.45)),
            (0.0, side * (sy - 0.03), z(1.415)),
            0.05,
            mat[outfit.trunk_top],
        )
        shoulder: Vec3 = (0.0, side * (sy + 0.005), z(1.4))
        elbow: Vec3 = (0.0, side * (sy + 0.04), z(1.1))
        wrist: Vec3 = (0.03, side * (sy + 0.05), z(0.85))
        bld.sphere("deltoid", shoulder, an.upper_arm_r + 0.012, mat[outfit.shoulder])
        bld.capsule("upper_arm", shoulder, elbow, an.upper_arm_r, mat[outfit.upper_arm])
        if outfit.sleeve is not None:
            cuff: Vec3 = (0.0, side * (sy + 0.025), z(1.24))
            bld.capsule("sleeve", shoulder, cuff, an.upper_arm_r + 0.007, mat[outfit.sleeve])
        bld.capsule("forearm", elbow, wrist, an.forearm_r, mat[outfit.forearm])
        hand_y = side * (sy + 0.055)
        bld.ellipsoid("hand", (0.035, hand_y, z(0.775)), (0.045, 0.018, 0.08), mat["skin"])
        bld.capsule(
            "thumb",
            (0.055, hand_y - side * 0.01, z(0.83)),
            (0.078, hand_y - side * 0.012, z(0.775)),
            0.011,
            mat["skin"],
        )


def _jaw(an: _Anatomy) -> tuple[float, float, Vec3]:
    """x and z of the jaw ellipsoid's centre, and its semi-axes."""
    a, b, _ = an.head
    head_z = an.z(_HEAD_Z)
    return _HEAD_X + 0.015, head_z - 0.075, (a - 0.035, b - 0.02, 0.05)


def _head(bld: _Builder, outfit: _Outfit, mat: Mapping[str, str]) -> None:
    """Neck, collar, head, jaw and (unless long hair covers them) ears."""
    an = outfit.anatomy
    z = an.z
    skin = mat["skin"]
    bld.capsule("neck", (0.0, 0.0, z(1.4)), (0.01, 0.0, z(1.57)), an.neck_r, skin)
    bld.cylinder(
        "collar", (0.0, 0.0, z(1.42)), (0.0, 0.0, z(1.455)), an.neck_r + 0.008, mat[outfit.collar]
    )
    head_z = z(_HEAD_Z)
    b = an.head[1]
    bld.ellipsoid("head", (_HEAD_X, 0.0, head_z), an.head, skin, exact=True)
    jaw_x, jaw_z, jaw = _jaw(an)
    bld.ellipsoid("jaw", (jaw_x, 0.0, jaw_z), jaw, skin)
    if not outfit.long_hair:  # long hair covers the ears
        for side in (-1.0, 1.0):
            bld.ellipsoid("ear", (0.005, side * b, head_z - 0.005), (0.02, 0.012, 0.03), skin)


def _face(bld: _Builder, outfit: _Outfit, mat: Mapping[str, str]) -> None:
    """Eyes (white and pupil), brows, nose and mouth, set on the surface of the head."""
    an = outfit.anatomy
    head_z = an.z(_HEAD_Z)
    eye_z = head_z + 0.02
    for side in (-1.0, 1.0):
        ey = side * 0.032
        ex = _head_surface_x(an, ey, eye_z)
        bld.ellipsoid("eye_white", (ex - 0.002, ey, eye_z), (0.006, 0.014, 0.008), mat["eye_white"])
        bld.sphere("eye", (ex - 0.002, ey, eye_z), 0.0075, mat["eyes"])
        brow_z = eye_z + 0.022
        brow_x = _head_surface_x(an, side * 0.033, brow_z)
        bld.capsule(
            "brow",
            (brow_x, side * 0.014, brow_z),
            (brow_x - 0.006, side * 0.05, brow_z - 0.003),
            0.0045,
            mat["hair"],
        )
    nose_z = head_z - 0.014
    nose_x = _head_surface_x(an, 0.0, nose_z)
    bld.ellipsoid("nose", (nose_x - 0.004, 0.0, nose_z), (0.016, 0.011, 0.019), mat["skin"])
    mouth_z = head_z - 0.052
    jaw_x, jaw_z, jaw = _jaw(an)
    jaw_front = jaw_x + jaw[0] * math.sqrt(1.0 - ((mouth_z - jaw_z) / jaw[2]) ** 2)
    mouth_x = max(jaw_front, _head_surface_x(an, 0.0, mouth_z)) - 0.003
    bld.capsule("mouth", (mouth_x, -0.017, mouth_z), (mouth_x, 0.017, mouth_z), 0.005, mat["lips"])


def _hair(bld: _Builder, outfit: _Outfit, mat: Mapping[str, str]) -> None:
    """A cap over the top and back of the head; long hair adds locks down the back."""
    an = outfit.anatomy
    head_z = an.z(_HEAD_Z)
    a, b, c = an.head
    hair = mat["hair"]
    bld.ellipsoid(
        "hair", (_HEAD_X - 0.015, 0.0, head_z + 0.03), (a + 0.005, b + 0.006, c - 0.015), hair
    )
    if outfit.long_hair:
        bld.ellipsoid("hair_long", (-0.06, 0.0, head_z - 0.12), (0.055, b + 0.012, 0.2), hair)
        for side in (-1.0, 1.0):
            bld.ellipsoid(
                "hair_lock",
                (-0.02, side * (b + 0.004), head_z - 0.07),
                (0.05, 0.022, 0.12),
                hair,
            )
