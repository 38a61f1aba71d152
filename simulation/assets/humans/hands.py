"""Geometry of the floating right hand: palm, wrist stub, four curled fingers and a thumb."""

from __future__ import annotations

import math

from simulation.assets.humans.builder import _Builder, _rgb

# Per finger: y of the knuckle, z of the knuckle, segment lengths, radius at the knuckle and
# the sideways spread (degrees, positive towards +y).
_FINGERS: dict[str, tuple[float, float, tuple[float, float, float], float, float]] = {
    "index": (-0.0275, 0.047, (0.04, 0.024, 0.019), 0.0092, -6.0),
    "middle": (-0.009, 0.05, (0.045, 0.028, 0.021), 0.0095, -1.0),
    "ring": (0.0095, 0.047, (0.042, 0.026, 0.02), 0.009, 4.0),
    "little": (0.0275, 0.04, (0.032, 0.02, 0.018), 0.008, 10.0),
}
_CURL_DEG = (6.0, 10.0, 10.0)  # bend towards the palm (-x) at each finger joint


def _build_hand(bld: _Builder, rgb: tuple[int, int, int]) -> None:
    """Add the hand in one material of colour ``rgb`` (8-bit), as ``add_human_hand`` documents."""
    skin = bld.material("skin", _rgb(*rgb), specular=0.2, shininess=0.25)
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
