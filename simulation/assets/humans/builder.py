"""The geom builder every human asset is made with: named materials and visual-only geoms."""

from __future__ import annotations

import math
from collections.abc import Sequence

import mujoco

Vec3 = tuple[float, float, float]
RGB = tuple[float, float, float]

_BOX = mujoco.mjtGeom.mjGEOM_BOX
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_CYLINDER = mujoco.mjtGeom.mjGEOM_CYLINDER
_ELLIPSOID = mujoco.mjtGeom.mjGEOM_ELLIPSOID
_SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE
_IDENTITY = (1.0, 0.0, 0.0, 0.0)


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
