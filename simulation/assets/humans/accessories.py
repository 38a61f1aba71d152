"""Geometry of the accessories in the outfit table: garment details and headwear.

:func:`_add_accessory` builds one entry of an outfit's ``accessories`` on top of the figure;
its heights are those of the 1.75 m figure, scaled here with the body.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from simulation.assets.humans.anatomy import (
    _HEAD_X,
    _HEAD_Z,
    _TRUNK_CORNER,
    _TRUNK_X,
    _Anatomy,
    _front_x,
)
from simulation.assets.humans.builder import _Builder, _quat_x
from simulation.assets.humans.outfits import (
    _Accessory,
    _Badge,
    _BeltBuckle,
    _BootShafts,
    _Buttons,
    _Epaulettes,
    _HardHat,
    _JacketCollar,
    _OpenFront,
    _Outfit,
    _PoliceCap,
    _ReflectiveBands,
    _Tie,
)


def _add_accessory(
    bld: _Builder, outfit: _Outfit, mat: Mapping[str, str], accessory: _Accessory
) -> None:
    """Add ``accessory`` to the figure dressed in ``outfit``; ``mat`` names its materials."""
    an = outfit.anatomy
    match accessory:
        case _BootShafts():
            _boot_shafts(bld, an, mat[accessory.material])
        case _ReflectiveBands():
            _reflective_bands(bld, an, mat[accessory.material], accessory.bottoms)
        case _HardHat():
            _hard_hat(bld, an, mat[accessory.material])
        case _OpenFront():
            top = _flat_front_top(an, outfit) - 0.005
            strip_bottom = accessory.strip_bottom
            _open_front(
                bld,
                an,
                mat[accessory.shirt],
                mat[accessory.panel],
                an.z(accessory.v_bottom),
                top,
                accessory.top_half,
                strip_half=accessory.strip_half,
                strip_bottom=None if strip_bottom is None else an.z(strip_bottom),
                lapel=None if accessory.lapel is None else mat[accessory.lapel],
            )
        case _Buttons():
            front = _front_x(an)
            for zb in accessory.heights:
                bld.sphere("button", (front - 0.002, 0.0, an.z(zb)), 0.008, mat[accessory.material])
        case _JacketCollar():
            bld.ellipsoid(
                "jacket_collar",
                (-0.035, 0.0, an.z(1.455)),
                (0.045, 0.085, 0.035),
                mat[accessory.material],
            )
        case _Tie():
            front = _front_x(an)
            bld.box(
                "tie",
                (front + 0.002, 0.0, an.z(1.3)),
                (0.002, 0.014, an.z(0.095)),
                mat[accessory.material],
            )
        case _Epaulettes():
            for side in (-1.0, 1.0):
                bld.box(
                    "epaulette",
                    (0.0, side * (an.shoulder_y - 0.045), an.z(1.435)),
                    (0.025, 0.055, 0.006),
                    mat[accessory.material],
                    quat=_quat_x(-side * 14.0),
                )
        case _Badge():
            front = _front_x(an)
            bld.ellipsoid(
                "badge",
                (front + 0.003, 0.07, an.z(1.34)),
                (0.004, 0.018, 0.022),
                mat[accessory.material],
            )
        case _BeltBuckle():
            front = _front_x(an)
            bld.box(
                "buckle",
                (front + 0.003, 0.0, an.z(0.99)),
                (0.003, 0.022, 0.016),
                mat[accessory.material],
            )
        case _PoliceCap():
            _police_cap(bld, an, mat[accessory.band], mat[accessory.visor], mat[accessory.badge])


def _boot_shafts(bld: _Builder, an: _Anatomy, material: str) -> None:
    """Work boots: the boot shaft covers the ankles."""
    for side in (-1.0, 1.0):
        bld.capsule(
            "boot_shaft",
            (0.0, side * 0.1, 0.075),
            (0.0, side * 0.1, 0.17),
            an.calf_r + 0.008,
            material,
        )


def _reflective_bands(bld: _Builder, an: _Anatomy, stripe: str, bottoms: tuple[float, ...]) -> None:
    """Reflective bands around the vest and up over the shoulders at the front."""
    for z0 in bottoms:
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


def _hard_hat(bld: _Builder, an: _Anatomy, hat: str) -> None:
    """Hard hat: dome, brim and a ridge from front to back."""
    hat_z = an.z(_HEAD_Z) + 0.068
    bld.ellipsoid("hat_dome", (_HEAD_X, 0.0, hat_z), (0.105, 0.088, 0.08), hat)
    bld.ellipsoid("hat_brim", (_HEAD_X, 0.0, hat_z), (0.13, 0.108, 0.008), hat)
    bld.ellipsoid("hat_ridge", (_HEAD_X, 0.0, hat_z + 0.004), (0.099, 0.016, 0.084), hat)


def _police_cap(bld: _Builder, an: _Anatomy, navy: str, visor: str, badge: str) -> None:
    """Peaked police cap: band, crown, visor and badge."""
    head_z = an.z(_HEAD_Z)
    bld.cylinder(
        "cap_band", (_HEAD_X, 0.0, head_z + 0.045), (_HEAD_X, 0.0, head_z + 0.085), 0.09, navy
    )
    bld.ellipsoid("cap_crown", (_HEAD_X - 0.005, 0.0, head_z + 0.095), (0.11, 0.1, 0.03), navy)
    bld.ellipsoid(
        "cap_visor",
        (_HEAD_X + 0.065, 0.0, head_z + 0.045),
        (0.065, 0.08, 0.008),
        visor,
        quat=(math.cos(math.radians(-8)), 0.0, math.sin(math.radians(-8)), 0.0),
    )
    bld.ellipsoid("cap_badge", (_HEAD_X + 0.094, 0.0, head_z + 0.07), (0.004, 0.014, 0.016), badge)


def _flat_front_top(an: _Anatomy, outfit: _Outfit) -> float:
    """z where the flat front of the chest ends and the rounded shoulders begin."""
    return an.z(outfit.trunk[-1][1]) - _TRUNK_CORNER


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
