"""MirrorBench scenes as OpenUSD stages, for usdview, Omniverse, Isaac Sim or Blender.

A stage is written from the same compiled MuJoCo model the MuJoCo renderer draws (room, mirror,
body, mark, hand and camera, every geom where MuJoCo puts it), so the two never disagree about
geometry. Layout of a stage (metres, z up, ``metersPerUnit = 1``):

- ``/World`` (the default prim), with the scene's facts in ``customData["mirrorbench"]``;
- ``/World/Room``, ``/World/Lights``;
- ``/World/Mirror`` at the slab's centre; ``/World/Mirror/glass`` is the reflecting face, with
  the ``/World/Looks/Mirror`` material: an MDL ``OmniPBR`` mirror (metallic 1, roughness 0)
  that Isaac Sim's RTX renderer reflects in, and a ``UsdPreviewSurface`` fallback with the
  same values for every other viewer;
- ``/World/Body`` at the body's place on the floor;
- ``/World/Mark`` at the mark's centre on the body's front; its plate faces the mirror and
  reads the mark's texture from ``textures/`` beside the stage;
- ``/World/Hand`` at the hand's start: the renderer moves it by setting its one
  ``xformOp:translate`` to ``hand_position_mm(scene, cell)``;
- ``/World/Goal``, an empty guide at the goal;
- ``/World/Camera``: the reference camera's pose, focal length and aperture.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from pxr import Gf, Sdf, Usd, UsdGeom, UsdLux, UsdPhysics, UsdShade, Vt

from simulation.camera import (
    CAMERA_EYE,
    CAMERA_TARGET,
    REFERENCE_APERTURE,
    REFERENCE_FOCAL_LENGTH,
    WIDE_REFERENCE_FOCAL_LENGTH,
    WIDE_VIEW_BODIES,
    look_at_quat,
)
from simulation.catalogue import MIRROR_CENTER_MM, MIRROR_FACE_X_MM, Scene
from simulation.dynamics import hand_position_mm
from simulation.renderer import SCENE_BUILD_VERSION, USD_BUILD_VERSION
from simulation.versions import BENCHMARK_VERSION

WORLD = "/World"
HAND_PATH = "/World/Hand"
BODY_PATH = "/World/Body"
MARK_PATH = "/World/Mark"
GOAL_PATH = "/World/Goal"
MIRROR_PATH = "/World/Mirror"
MIRROR_GLASS_PATH = "/World/Mirror/glass"
CAMERA_PATH = "/World/Camera"
MIRROR_MATERIAL_PATH = "/World/Looks/Mirror"
SHADING_VARIANT_SET = "shading"
PREVIEW_SHADING = "preview"
RTX_SHADING = "rtx"
TEXTURES_DIR = "textures"
MIRROR_MDL = "materials/mirrorbench_mirror.mdl"
MIRROR_TINT = (0.9, 0.9, 0.9)
MARK_TEXTURE_PX = 256
"""The MuJoCo scene's mark texture size: both renderers see the same texels."""
MARK_FACE_OFFSET = 0.004
"""The mark plate's face stands this far in front of the body's front (MuJoCo's plate box)."""
USD_UNITS_PER_APERTURE_UNIT = 10.0
"""Isaac Sim's camera API takes focal length and aperture in stage units and stores them in
tenths (USD's lens convention): the reference's focal length 3.0 is ``focalLength = 30``."""

_GEOM_PLANE, _GEOM_SPHERE, _GEOM_CAPSULE, _GEOM_ELLIPSOID = 0, 2, 3, 4
_GEOM_CYLINDER, _GEOM_BOX, _GEOM_MESH = 5, 6, 7


_MIRROR_MDL_SOURCE = """\
mdl 1.4;

import ::df::*;

// MirrorBench's mirror: a pure specular reflection, the MDL counterpart of the stage's
// UsdPreviewSurface (metallic 1, roughness 0).
export material Mirror(
    color tint = color(0.9)
) = material(
    surface: material_surface(
        scattering: df::specular_bsdf(tint: tint, mode: df::scatter_reflect)
    )
);
"""


class UsdExportError(RuntimeError):
    """A scene could not be written as a USD stage."""


@dataclass(frozen=True)
class ExportResult:
    """One written stage: where, how big (stage and its textures) and how long it took."""

    scene_id: str
    path: Path
    stage_bytes: int
    texture_bytes: int
    seconds: float


def stage_path(out_dir: Path, scene_id: str) -> Path:
    """Return where ``export_scene`` writes the stage of ``scene_id`` in ``out_dir``."""
    return Path(out_dir) / f"{scene_id}.usd"


def camera_focal_length(body_id: str) -> float:
    """Return the USD ``focalLength`` of the camera in the scenes of ``body_id``."""
    focal = WIDE_REFERENCE_FOCAL_LENGTH if body_id in WIDE_VIEW_BODIES else REFERENCE_FOCAL_LENGTH
    return focal * USD_UNITS_PER_APERTURE_UNIT


CAMERA_APERTURE = REFERENCE_APERTURE * USD_UNITS_PER_APERTURE_UNIT
"""USD ``horizontalAperture`` and ``verticalAperture`` (20.955, Isaac's default): square."""


def export_scene(scene: Scene, out_dir: Path, *, mirror: bool = True) -> ExportResult:
    """Write ``scene`` as ``<out_dir>/<scene id>.usd`` with its textures in ``textures/``.

    The stage is built from the MuJoCo renderer's own model of the scene, so every geom sits
    where MuJoCo draws it. ``mirror=False`` leaves the mirror out (the control view).
    """
    from simulation.mujoco_backend import compiled_model, mujoco

    started = time.perf_counter()
    out_dir = Path(out_dir)
    (out_dir / TEXTURES_DIR).mkdir(parents=True, exist_ok=True)
    model = compiled_model(scene, mirror=mirror, max_size=1024, antialias=False)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    path = stage_path(out_dir, scene.id)
    stage = Usd.Stage.CreateNew(str(path))
    writer = _StageWriter(stage, model, data, out_dir)
    writer.write(scene)
    stage.GetRootLayer().Save()
    textures = sum(p.stat().st_size for p in writer.textures)
    return ExportResult(
        scene.id, path, path.stat().st_size, textures, time.perf_counter() - started
    )


def _identifier(name: str) -> str:
    """Return ``name`` as a valid USD prim name."""
    text = re.sub(r"[^A-Za-z0-9_]", "_", name) or "_"
    return f"_{text}" if text[0].isdigit() else text


def _quat(matrix: np.ndarray) -> Gf.Quatf:
    """Return the rotation ``matrix`` (column vectors, as MuJoCo's ``xmat``) as a quaternion."""
    from simulation.mujoco_backend import mujoco

    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.asarray(matrix, dtype=float).reshape(9))
    w, x, y, z = (float(v) for v in quat)
    return Gf.Quatf(w, x, y, z)


def _vertex_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Return area-weighted vertex normals of a triangle mesh (unit length, float32)."""
    a, b, c = (vertices[faces[:, k]].astype(np.float64) for k in range(3))
    face_normals = np.cross(b - a, c - a)
    normals = np.zeros((len(vertices), 3))
    for k in range(3):
        np.add.at(normals, faces[:, k], face_normals)
    length = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = np.divide(
        normals, length, out=np.tile([0.0, 0.0, 1.0], (len(normals), 1)), where=length > 0
    )
    return normals.astype(np.float32)


class _StageWriter:
    """Writes one compiled MuJoCo scene into an empty stage."""

    def __init__(self, stage: Usd.Stage, model: Any, data: Any, out_dir: Path) -> None:
        self.stage, self.model, self.data, self.out_dir = stage, model, data, out_dir
        self.materials: dict[str, UsdShade.Material] = {}
        self.textures: set[Path] = set()
        self._names: dict[str, set[str]] = {}

    def write(self, scene: Scene) -> None:
        stage = self.stage
        UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
        UsdGeom.SetStageMetersPerUnit(stage, 1.0)
        UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
        world = UsdGeom.Xform.Define(stage, WORLD).GetPrim()
        stage.SetDefaultPrim(world)
        world.SetCustomDataByKey("mirrorbench", self._facts(scene))
        stage.GetRootLayer().customLayerData = {"mirrorbench:scene": scene.id}
        UsdGeom.Scope.Define(stage, "/World/Looks")
        self._write_lights()
        groups = {
            "room": self._group("/World/Room"),
            "mirror": self._group(MIRROR_PATH, [v / 1000 for v in MIRROR_CENTER_MM]),
            "mark": self._group(MARK_PATH, [v / 1000 for v in scene.mark_center_mm]),
        }
        bx, by, _ = scene.body.offset_mm
        body_root = self._group(BODY_PATH, [bx / 1000, by / 1000, 0.0])
        hand_root = self._group(HAND_PATH, [v / 1000 for v in hand_position_mm(scene, (0, 0, 0))])
        hand_root.GetPrim().SetCustomDataByKey(
            "mirrorbench:moves", "xformOp:translate = hand_position_mm(scene, cell) / 1000"
        )
        goal = self._group(GOAL_PATH, [v / 1000 for v in scene.goal_mm])
        goal.CreatePurposeAttr(UsdGeom.Tokens.guide)
        body_ids = self._subtree("body")
        hand_ids = self._subtree("hand")
        for g in range(self.model.ngeom):
            name = self.model.geom(g).name or f"geom_{g}"
            owner = int(self.model.geom_bodyid[g])
            if name == "mark/plate":
                self._write_mark(scene, groups["mark"])
            elif owner in hand_ids:
                self._write_geom(g, name, hand_root, self._body_frame("hand"))
            elif owner in body_ids:
                self._write_geom(g, name, body_root, self._body_frame("body"))
            elif name.startswith("mirror/"):
                self._write_geom(g, name, groups["mirror"], self._group_frame(MIRROR_CENTER_MM))
            else:
                self._write_geom(g, name, groups["room"], (np.zeros(3), np.eye(3)))
        self._write_camera(scene)

    def _facts(self, scene: Scene) -> dict[str, Any]:
        return {
            "scene": scene.id,
            "benchmark": BENCHMARK_VERSION,
            "sceneBuild": SCENE_BUILD_VERSION,
            "usdBuild": USD_BUILD_VERSION,
            "track": scene.track,
            "body": scene.body.id,
            "hand": scene.hand.id,
            "mark": scene.mark.id,
            "stepMetres": 0.1,
            "d0Steps": scene.d0_steps,
            "maxSteps": scene.max_steps,
            "startMetres": Gf.Vec3d(*(v / 1000 for v in scene.start_mm)),
            "goalMetres": Gf.Vec3d(*(v / 1000 for v in scene.goal_mm)),
            "mirrorFaceX": MIRROR_FACE_X_MM / 1000,
        }

    # Frames -------------------------------------------------------------------------------

    def _subtree(self, body_name: str) -> set[int]:
        from simulation.mujoco_backend import mujoco

        root = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, body_name)
        ids = set()
        for b in range(self.model.nbody):
            walk = b
            while walk > 0 and walk != root:
                walk = int(self.model.body_parentid[walk])
            if walk == root and root > 0:
                ids.add(b)
        return ids

    def _body_frame(self, body_name: str) -> tuple[np.ndarray, np.ndarray]:
        body = self.data.body(body_name)
        return np.array(body.xpos), np.array(body.xmat).reshape(3, 3)

    @staticmethod
    def _group_frame(center_mm: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
        return np.array(center_mm, dtype=float) / 1000, np.eye(3)

    def _group(self, path: str, translate: list[float] | None = None) -> UsdGeom.Xform:
        xform = UsdGeom.Xform.Define(self.stage, path)
        if translate is not None:
            xform.AddTranslateOp().Set(Gf.Vec3d(*translate))
        return xform

    def _child(self, parent: UsdGeom.Xform, name: str) -> Sdf.Path:
        taken = self._names.setdefault(str(parent.GetPath()), set())
        base = _identifier(name)
        unique, n = base, 1
        while unique in taken:
            n += 1
            unique = f"{base}_{n}"
        taken.add(unique)
        return parent.GetPath().AppendChild(unique)

    # Geometry -----------------------------------------------------------------------------

    def _write_geom(
        self,
        g: int,
        name: str,
        parent: UsdGeom.Xform,
        frame: tuple[np.ndarray, np.ndarray],
    ) -> None:
        model, stage = self.model, self.stage
        kind = int(model.geom_type[g])
        size = np.array(model.geom_size[g], dtype=float)
        origin, rotation = frame
        world_pos = np.array(self.data.geom_xpos[g])
        world_rot = np.array(self.data.geom_xmat[g]).reshape(3, 3)
        pos = rotation.T @ (world_pos - origin)
        rot = rotation.T @ world_rot
        path = self._child(parent, name.split("/", 1)[-1])
        scale = None
        gprim: UsdGeom.Gprim
        if kind == _GEOM_BOX:
            cube = UsdGeom.Cube.Define(stage, path)
            cube.CreateSizeAttr(2.0)
            scale = size
            gprim = cube
        elif kind == _GEOM_SPHERE:
            sphere = UsdGeom.Sphere.Define(stage, path)
            sphere.CreateRadiusAttr(float(size[0]))
            gprim = sphere
        elif kind == _GEOM_ELLIPSOID:
            sphere = UsdGeom.Sphere.Define(stage, path)
            sphere.CreateRadiusAttr(1.0)
            scale = size
            gprim = sphere
        elif kind == _GEOM_CAPSULE:
            capsule = UsdGeom.Capsule.Define(stage, path)
            capsule.CreateAxisAttr(UsdGeom.Tokens.z)
            capsule.CreateRadiusAttr(float(size[0]))
            capsule.CreateHeightAttr(float(2 * size[1]))
            gprim = capsule
        elif kind == _GEOM_CYLINDER:
            cylinder = UsdGeom.Cylinder.Define(stage, path)
            cylinder.CreateAxisAttr(UsdGeom.Tokens.z)
            cylinder.CreateRadiusAttr(float(size[0]))
            cylinder.CreateHeightAttr(float(2 * size[1]))
            gprim = cylinder
        elif kind == _GEOM_PLANE:
            gprim = self._plane(path, float(size[0]), float(size[1]), self._repeat(g))
        elif kind == _GEOM_MESH:
            gprim = self._mesh(path, int(model.geom_dataid[g]))
        else:
            raise UsdExportError(f"geom {name!r}: MuJoCo geom type {kind} has no USD export")
        xformable = UsdGeom.Xformable(gprim)
        xformable.AddTranslateOp().Set(Gf.Vec3d(*pos.tolist()))
        xformable.AddOrientOp().Set(_quat(rot))
        if scale is not None:
            xformable.AddScaleOp().Set(Gf.Vec3f(*scale.tolist()))
        self._set_extent(gprim)
        material, rgb = self._geom_material(g, name)
        gprim.CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(*rgb)]))
        UsdShade.MaterialBindingAPI.Apply(gprim.GetPrim()).Bind(material)

    def _repeat(self, g: int) -> tuple[float, float]:
        mat = int(self.model.geom_matid[g])
        if mat < 0:
            return (1.0, 1.0)
        rx, ry = (float(v) for v in self.model.mat_texrepeat[mat])
        return (rx, ry)

    def _plane(
        self, path: Sdf.Path, hx: float, hy: float, repeat: tuple[float, float]
    ) -> UsdGeom.Mesh:
        """A quad in the local xy plane facing +z: MuJoCo's plane geom."""
        mesh = UsdGeom.Mesh.Define(self.stage, path)
        mesh.CreatePointsAttr(
            Vt.Vec3fArray([(-hx, -hy, 0), (hx, -hy, 0), (hx, hy, 0), (-hx, hy, 0)])
        )
        mesh.CreateFaceVertexCountsAttr(Vt.IntArray([4]))
        mesh.CreateFaceVertexIndicesAttr(Vt.IntArray([0, 1, 2, 3]))
        mesh.CreateNormalsAttr(Vt.Vec3fArray([(0, 0, 1)] * 4))
        mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
        mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
        rx, ry = repeat
        self._st(mesh, [(0, 0), (rx, 0), (rx, ry), (0, ry)])
        return mesh

    def _mesh(self, path: Sdf.Path, mesh_id: int) -> UsdGeom.Mesh:
        model = self.model
        start, count = int(model.mesh_vertadr[mesh_id]), int(model.mesh_vertnum[mesh_id])
        face_start = int(model.mesh_faceadr[mesh_id])
        face_count = int(model.mesh_facenum[mesh_id])
        vertices = np.asarray(model.mesh_vert[start : start + count], dtype=np.float32)
        faces = np.asarray(model.mesh_face[face_start : face_start + face_count], dtype=np.int32)
        mesh = UsdGeom.Mesh.Define(self.stage, path)
        mesh.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(vertices))
        mesh.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(face_count, 3, np.int32)))
        mesh.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(faces.reshape(-1)))
        mesh.CreateNormalsAttr(Vt.Vec3fArray.FromNumpy(_vertex_normals(vertices, faces)))
        mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
        mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
        return mesh

    @staticmethod
    def _st(mesh: UsdGeom.Mesh, coords: list[tuple[float, float]]) -> None:
        primvar = UsdGeom.PrimvarsAPI(mesh).CreatePrimvar(
            "st", Sdf.ValueTypeNames.TexCoord2fArray, UsdGeom.Tokens.vertex
        )
        primvar.Set(Vt.Vec2fArray(coords))

    @staticmethod
    def _set_extent(gprim: UsdGeom.Gprim) -> None:
        extent = UsdGeom.Boundable.ComputeExtentFromPlugins(
            UsdGeom.Boundable(gprim), Usd.TimeCode.Default()
        )
        if extent is not None:
            UsdGeom.Boundable(gprim).CreateExtentAttr(extent)

    def _write_mark(self, scene: Scene, parent: UsdGeom.Xform) -> None:
        """The mark plate: a square facing +x (the mirror), upright to someone facing it.

        Facing the mark from the mirror, +y is to the right and +z up; texture column 0 is the
        mark's left edge and row 0 its top, so ``st`` runs along +y and +z.
        """
        h = scene.mark.side_mm / 2000
        x = MARK_FACE_OFFSET
        path = parent.GetPath().AppendChild("Plate")
        mesh = UsdGeom.Mesh.Define(self.stage, path)
        mesh.CreatePointsAttr(Vt.Vec3fArray([(x, -h, -h), (x, h, -h), (x, h, h), (x, -h, h)]))
        mesh.CreateFaceVertexCountsAttr(Vt.IntArray([4]))
        mesh.CreateFaceVertexIndicesAttr(Vt.IntArray([0, 1, 2, 3]))
        mesh.CreateNormalsAttr(Vt.Vec3fArray([(1, 0, 0)] * 4))
        mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
        mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
        self._st(mesh, [(0, 0), (1, 0), (1, 1), (0, 1)])
        self._set_extent(mesh)
        from simulation.assets import marks

        texture = self._texture(
            f"mark_{scene.mark.id}.png", marks.mark_texture(scene.mark.id, MARK_TEXTURE_PX)
        )
        material = self._textured_material(f"Mark_{scene.mark.id}", texture, emission=0.15)
        mesh.CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(1.0, 1.0, 1.0)]))
        UsdShade.MaterialBindingAPI.Apply(mesh.GetPrim()).Bind(material)

    # Materials ----------------------------------------------------------------------------

    def _geom_material(self, g: int, name: str) -> tuple[UsdShade.Material, tuple[float, ...]]:
        model = self.model
        mat = int(model.geom_matid[g])
        if name == "mirror/glass":
            return self._mirror_material(), (0.9, 0.9, 0.9)
        if mat < 0:
            rgb = tuple(float(v) for v in model.geom_rgba[g][:3])
            key = "Color_" + "".join(f"{round(c * 255):02x}" for c in rgb)
            return self._preview_material(key, rgb, roughness=0.6), rgb
        material = model.material(mat)
        rgb = tuple(float(v) for v in material.rgba[:3])
        texid = int(model.mat_texid[mat][1])  # mjTEXROLE_RGB
        key = _identifier(material.name)
        if texid >= 0:
            width, height = int(model.tex_width[texid]), int(model.tex_height[texid])
            channels = int(model.tex_nchannel[texid])
            adr = int(model.tex_adr[texid])
            pixels = np.asarray(model.tex_data[adr : adr + width * height * channels])
            image = pixels.reshape(height, width, channels)[..., :3]
            texture = self._texture(f"{key}.png", image)
            mean = tuple(float(v) / 255 for v in image.reshape(-1, 3).mean(axis=0))
            return self._textured_material(key, texture, wrap="repeat"), mean
        roughness = float(np.clip(1.0 - float(model.mat_shininess[mat]), 0.25, 1.0))
        return self._preview_material(key, rgb, roughness=roughness), rgb

    def _texture(self, filename: str, image: np.ndarray) -> str:
        path = self.out_dir / TEXTURES_DIR / filename
        if path not in self.textures and not path.exists():
            Image.fromarray(np.ascontiguousarray(image, dtype=np.uint8)).save(path)
        self.textures.add(path)
        return f"./{TEXTURES_DIR}/{filename}"

    def _new_material(self, key: str) -> tuple[UsdShade.Material, UsdShade.Shader]:
        material = UsdShade.Material.Define(self.stage, f"/World/Looks/{key}")
        shader = UsdShade.Shader.Define(self.stage, f"/World/Looks/{key}/Preview")
        shader.CreateIdAttr("UsdPreviewSurface")
        material.CreateSurfaceOutput().ConnectToSource(shader.ConnectableAPI(), "surface")
        self.materials[key] = material
        return material, shader

    def _preview_material(
        self, key: str, rgb: tuple[float, ...], *, roughness: float, metallic: float = 0.0
    ) -> UsdShade.Material:
        if key in self.materials:
            return self.materials[key]
        material, shader = self._new_material(key)
        shader.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).Set(Gf.Vec3f(*rgb))
        shader.CreateInput("roughness", Sdf.ValueTypeNames.Float).Set(roughness)
        shader.CreateInput("metallic", Sdf.ValueTypeNames.Float).Set(metallic)
        return material

    def _textured_material(
        self, key: str, texture: str, *, emission: float = 0.0, wrap: str = "clamp"
    ) -> UsdShade.Material:
        if key in self.materials:
            return self.materials[key]
        material, shader = self._new_material(key)
        base = material.GetPath()
        reader = UsdShade.Shader.Define(self.stage, base.AppendChild("StReader"))
        reader.CreateIdAttr("UsdPrimvarReader_float2")
        reader.CreateInput("varname", Sdf.ValueTypeNames.String).Set("st")
        image = UsdShade.Shader.Define(self.stage, base.AppendChild("Texture"))
        image.CreateIdAttr("UsdUVTexture")
        image.CreateInput("file", Sdf.ValueTypeNames.Asset).Set(texture)
        image.CreateInput("sourceColorSpace", Sdf.ValueTypeNames.Token).Set("sRGB")
        image.CreateInput("wrapS", Sdf.ValueTypeNames.Token).Set(wrap)
        image.CreateInput("wrapT", Sdf.ValueTypeNames.Token).Set(wrap)
        image.CreateInput("st", Sdf.ValueTypeNames.Float2).ConnectToSource(
            reader.ConnectableAPI(), "result"
        )
        rgb_out = image.CreateOutput("rgb", Sdf.ValueTypeNames.Float3)
        shader.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).ConnectToSource(rgb_out)
        shader.CreateInput("roughness", Sdf.ValueTypeNames.Float).Set(0.8)
        shader.CreateInput("metallic", Sdf.ValueTypeNames.Float).Set(0.0)
        if emission:
            glow = UsdShade.Shader.Define(self.stage, base.AppendChild("Glow"))
            glow.CreateIdAttr("UsdUVTexture")
            glow.CreateInput("file", Sdf.ValueTypeNames.Asset).Set(texture)
            glow.CreateInput("sourceColorSpace", Sdf.ValueTypeNames.Token).Set("sRGB")
            glow.CreateInput("scale", Sdf.ValueTypeNames.Float4).Set(
                Gf.Vec4f(emission, emission, emission, 1.0)
            )
            glow.CreateInput("st", Sdf.ValueTypeNames.Float2).ConnectToSource(
                reader.ConnectableAPI(), "result"
            )
            shader.CreateInput("emissiveColor", Sdf.ValueTypeNames.Color3f).ConnectToSource(
                glow.CreateOutput("rgb", Sdf.ValueTypeNames.Float3)
            )
        return material

    def _mirror_material(self) -> UsdShade.Material:
        """A perfect mirror: UsdPreviewSurface for every viewer, an MDL mirror in a variant.

        The ``shading`` variant set picks ``preview`` (the default: metallic 1, roughness 0,
        which every viewer understands) or ``rtx``, which adds an MDL mirror (a pure specular
        reflection, ``materials/mirrorbench_mirror.mdl`` beside the stage) that Isaac Sim's
        RTX renderer uses in preference. Only Kit has an MDL shader registry, so the default
        keeps the stage valid everywhere; the Isaac backend selects ``rtx``.
        """
        key = "Mirror"
        if key in self.materials:
            return self.materials[key]
        silver = Gf.Vec3f(*MIRROR_TINT)
        material = self._preview_material(key, tuple(silver), roughness=0.0, metallic=1.0)
        module = self.out_dir / MIRROR_MDL
        module.parent.mkdir(parents=True, exist_ok=True)
        if not module.exists():
            module.write_text(_MIRROR_MDL_SOURCE)
        self.textures.add(module)
        variants = material.GetPrim().GetVariantSets().AddVariantSet(SHADING_VARIANT_SET)
        for name in (PREVIEW_SHADING, RTX_SHADING):
            variants.AddVariant(name)
        variants.SetVariantSelection(RTX_SHADING)
        with variants.GetVariantEditContext():
            mdl = UsdShade.Shader.Define(self.stage, material.GetPath().AppendChild("MdlMirror"))
            mdl.CreateImplementationSourceAttr(UsdShade.Tokens.sourceAsset)
            mdl.SetSourceAsset(Sdf.AssetPath(f"./{MIRROR_MDL}"), "mdl")
            mdl.SetSourceAssetSubIdentifier("Mirror", "mdl")
            mdl.CreateInput("tint", Sdf.ValueTypeNames.Color3f).Set(silver)
            out = mdl.CreateOutput("out", Sdf.ValueTypeNames.Token)
            material.CreateSurfaceOutput("mdl").ConnectToSource(out)
        variants.SetVariantSelection(PREVIEW_SHADING)
        return material

    # Lights and camera --------------------------------------------------------------------

    def _write_lights(self) -> None:
        """MuJoCo's headlight ambient as a dome, its key and fill spots as shaped sphere lights.

        Intensities are for RTX (nits) and approximate MuJoCo's look; they are not calibrated.
        """
        stage = self.stage
        UsdGeom.Scope.Define(stage, "/World/Lights")
        dome = UsdLux.DomeLight.Define(stage, "/World/Lights/Ambient")
        dome.CreateIntensityAttr(300.0)
        for name, pos, direction, intensity, cone in (
            ("Key", (-0.6, -0.8, 2.9), (0.35, 0.25, -1.0), 60000.0, 70.0),
            ("Fill", (1.0, 0.6, 2.9), (-0.2, -0.2, -1.0), 30000.0, 80.0),
        ):
            light = UsdLux.SphereLight.Define(stage, f"/World/Lights/{name}")
            light.CreateRadiusAttr(0.1)
            light.CreateIntensityAttr(intensity)
            shaping = UsdLux.ShapingAPI.Apply(light.GetPrim())
            shaping.CreateShapingConeAngleAttr(cone)
            shaping.CreateShapingConeSoftnessAttr(0.5)
            # A sphere light shines along its local -z: turn -z to the MuJoCo light's direction.
            eye = np.array(pos, dtype=float)
            light.AddTranslateOp().Set(Gf.Vec3d(*pos))
            light.AddOrientOp().Set(Gf.Quatf(*look_at_quat(tuple(eye), tuple(eye + direction))))
            UsdLux.ShadowAPI.Apply(light.GetPrim()).CreateShadowEnableAttr(name == "Key")

    def _write_camera(self, scene: Scene) -> None:
        camera = UsdGeom.Camera.Define(self.stage, CAMERA_PATH)
        camera.AddTranslateOp().Set(Gf.Vec3d(*CAMERA_EYE))
        # USD and MuJoCo cameras both look along local -z with +y up: the same rotation.
        camera.AddOrientOp().Set(Gf.Quatf(*look_at_quat(CAMERA_EYE, CAMERA_TARGET)))
        camera.CreateProjectionAttr(UsdGeom.Tokens.perspective)
        camera.CreateFocalLengthAttr(camera_focal_length(scene.body.id))
        camera.CreateHorizontalApertureAttr(CAMERA_APERTURE)
        camera.CreateVerticalApertureAttr(CAMERA_APERTURE)
        camera.CreateClippingRangeAttr(Gf.Vec2f(0.01, 100.0))


def open_stage(path: Path) -> Usd.Stage:
    """Return the stage at ``path``, or raise UsdExportError."""
    stage = Usd.Stage.Open(str(path))
    if stage is None:
        raise UsdExportError(f"{path}: not a USD stage")
    return stage


def prim_position(stage: Usd.Stage, path: str) -> tuple[float, float, float]:
    """Return the world position (metres) of the prim at ``path``."""
    prim = stage.GetPrimAtPath(path)
    if not prim.IsValid():
        raise UsdExportError(f"{path}: no such prim")
    matrix = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    t = matrix.ExtractTranslation()
    return (t[0], t[1], t[2])


def set_hand_translation(stage: Usd.Stage, position_m: tuple[float, float, float]) -> None:
    """Move ``/World/Hand`` to ``position_m`` (its one translate op), as a renderer does."""
    ops = UsdGeom.Xformable(stage.GetPrimAtPath(HAND_PATH)).GetOrderedXformOps()
    ops[0].Set(Gf.Vec3d(*position_m))


def camera_pixel(
    stage: Usd.Stage, point_m: tuple[float, float, float], size: int
) -> tuple[float, float]:
    """Return where ``point_m`` lands, in pixels (column, row from the top left), in a square
    ``size`` image of the stage's camera, from the camera's transform, focal length and aperture.
    """
    camera = UsdGeom.Camera(stage.GetPrimAtPath(CAMERA_PATH))
    to_world = camera.ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    local = to_world.GetInverse().Transform(Gf.Vec3d(*point_m))
    if local[2] >= 0:
        raise UsdExportError(f"{point_m} is behind the camera")
    focal = camera.GetFocalLengthAttr().Get()
    half_w = camera.GetHorizontalApertureAttr().Get() / 2
    half_h = camera.GetVerticalApertureAttr().Get() / 2
    # Image plane at the focal length: x right, y up; the pixel grid's rows run down.
    u = focal * local[0] / -local[2] / half_w
    v = focal * local[1] / -local[2] / half_h
    return ((u + 1) * size / 2, (1 - v) * size / 2)


def mirror_image(point_m: tuple[float, float, float]) -> tuple[float, float, float]:
    """Return the point's reflection in the mirror's face (what the camera sees of it)."""
    face = MIRROR_FACE_X_MM / 1000
    return (2 * face - point_m[0], point_m[1], point_m[2])


def fov_from_stage(stage: Usd.Stage) -> float:
    """Return the stage camera's vertical field of view in degrees."""
    camera = UsdGeom.Camera(stage.GetPrimAtPath(CAMERA_PATH))
    focal = camera.GetFocalLengthAttr().Get()
    return 2 * math.degrees(math.atan(camera.GetVerticalApertureAttr().Get() / (2 * focal)))


def export_scenes(
    scenes: Iterable[Scene], out_dir: Path, *, mirror: bool = True
) -> Iterator[ExportResult]:
    """Write every scene of ``scenes`` into ``out_dir`` (textures shared); yield each result."""
    for scene in scenes:
        yield export_scene(scene, out_dir, mirror=mirror)
