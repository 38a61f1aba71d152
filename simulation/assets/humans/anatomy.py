"""Body proportions of the two mannequin figures and the landmarks derived from them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulation.assets.humans.builder import Vec3


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
