"""OpenUSD export: valid stages, every protocol prim where the catalogue puts it, the same camera.

A human scene (primitives) and a robot scene (meshes) are exported once for the module.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from pxr import Usd, UsdGeom, UsdShade, UsdValidation

from evaluation.cli import main
from simulation.assets import marks
from simulation.camera import CAMERA_EYE, camera_fovy_deg
from simulation.catalogue import MIRROR_FACE_X_MM, get_scene
from simulation.dynamics import goal_cell, hand_position_mm
from simulation.usd_export import (
    BODY_PATH,
    CAMERA_PATH,
    GOAL_PATH,
    HAND_PATH,
    MARK_PATH,
    MIRROR_GLASS_PATH,
    MIRROR_MATERIAL_PATH,
    MIRROR_MDL,
    PREVIEW_SHADING,
    RTX_SHADING,
    SHADING_VARIANT_SET,
    camera_pixel,
    export_scene,
    fov_from_stage,
    mirror_image,
    open_stage,
    prim_position,
    set_hand_translation,
)
from simulation.visibility import camera_pixel as mujoco_pixel
from simulation.visibility import reflected_mark_mask
from tests.parts import DEV_EXTRA, import_part

HUMAN = "male_0-mano_white-splash"
ROBOT = "nova_carter-Robotiq_2F_85-logo_1"
SCENES = (HUMAN, ROBOT)
MM = 0.001


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("usd")
    return out, {sid: export_scene(get_scene(sid), out) for sid in SCENES}


@pytest.fixture(params=SCENES)
def scene_stage(request, exported):
    _, results = exported
    return get_scene(request.param), open_stage(results[request.param].path)


def _metres(mm):
    return tuple(v / 1000 for v in mm)


def test_the_stage_is_in_metres_z_up_with_world_as_default_prim(scene_stage):
    scene, stage = scene_stage
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetDefaultPrim().GetPath() == "/World"
    assert stage.GetDefaultPrim().GetCustomDataByKey("mirrorbench")["scene"] == scene.id


def test_the_stage_passes_usd_validation(scene_stage):
    _, stage = scene_stage
    registry = UsdValidation.ValidationRegistry()
    validators = [
        v
        for v in registry.GetOrLoadAllValidators()
        if "UsdzValidators" not in v.GetMetadata().GetKeywords()
    ]
    errors = UsdValidation.ValidationContext(validators).Validate(stage)
    assert [e.GetMessage() for e in errors] == []


def test_the_stage_passes_nvidias_asset_validator(exported):
    validator = import_part("omni.asset_validator", "omniverse-asset-validator", DEV_EXTRA)
    _, results = exported
    for result in results.values():
        issues = list(validator.ValidationEngine().validate(str(result.path)).issues())
        failures = [
            str(i.message)
            for i in issues
            if i.severity in (validator.IssueSeverity.ERROR, validator.IssueSeverity.FAILURE)
        ]
        assert failures == []
        # Only the robots' simplified meshes draw warnings: vertex clustering leaves them
        # non-manifold, which renders fine.
        assert {i.rule.__name__ for i in issues} <= {"ManifoldChecker"}


def test_every_protocol_prim_is_where_the_catalogue_puts_it(scene_stage):
    scene, stage = scene_stage
    bx, by, _ = scene.body.offset_mm
    expected = {
        HAND_PATH: _metres(scene.start_mm),
        GOAL_PATH: _metres(scene.goal_mm),
        MARK_PATH: _metres(scene.mark_center_mm),
        BODY_PATH: (bx / 1000, by / 1000, 0.0),
        CAMERA_PATH: CAMERA_EYE,
    }
    for path, position in expected.items():
        assert np.allclose(prim_position(stage, path), position, atol=MM), path
    assert prim_position(stage, MIRROR_GLASS_PATH)[0] == pytest.approx(
        MIRROR_FACE_X_MM / 1000, abs=MM
    )


def test_the_hand_prim_moves_one_grid_cell_at_a_time(scene_stage):
    scene, stage = scene_stage
    for cell in [(1, 0, 0), (0, -2, 1), goal_cell(scene)]:
        set_hand_translation(stage, _metres(hand_position_mm(scene, cell)))
        assert np.allclose(
            prim_position(stage, HAND_PATH), _metres(hand_position_mm(scene, cell)), atol=MM
        )
    hand_geoms = [p for p in Usd.PrimRange(stage.GetPrimAtPath(HAND_PATH)) if p.IsA(UsdGeom.Gprim)]
    assert hand_geoms


def test_the_camera_has_the_reference_field_of_view(scene_stage):
    scene, stage = scene_stage
    assert fov_from_stage(stage) == pytest.approx(camera_fovy_deg(scene.body.id), abs=1e-4)


def test_goal_and_mark_project_to_mujocos_pixels_at_1024(scene_stage):
    scene, stage = scene_stage
    for point in (_metres(scene.goal_mm), _metres(scene.mark_center_mm)):
        for seen in (point, mirror_image(point)):
            usd = camera_pixel(stage, seen, 1024)
            mujoco = mujoco_pixel(scene, seen, 1024)
            assert np.hypot(usd[0] - mujoco[0], usd[1] - mujoco[1]) <= 2, seen


def test_the_reflected_mark_in_a_mujoco_frame_is_where_the_usd_camera_projects_it(exported):
    scene = get_scene(HUMAN)
    stage = open_stage(exported[1][HUMAN].path)
    rows, cols = np.nonzero(reflected_mark_mask(scene, 256))
    column, row = camera_pixel(stage, mirror_image(_metres(scene.mark_center_mm)), 256)
    # Pixel centres are at +0.5; 0.5 px at 256 is 2 px at 1024.
    assert abs(cols.mean() + 0.5 - column) <= 0.5
    assert abs(rows.mean() + 0.5 - row) <= 0.5


def test_the_mark_texture_lies_beside_the_stage(exported):
    out, _ = exported
    scene = get_scene(HUMAN)
    written = np.asarray(Image.open(out / "textures" / f"mark_{scene.mark.id}.png"))
    assert np.array_equal(written, marks.mark_texture(scene.mark.id, 256))


def test_the_mirror_reflects_in_every_viewer_and_has_an_mdl_mirror_for_rtx(exported):
    out, results = exported
    stage = open_stage(results[HUMAN].path)
    material = UsdShade.Material(stage.GetPrimAtPath(MIRROR_MATERIAL_PATH))
    preview = material.ComputeSurfaceSource()[0]
    assert preview.GetIdAttr().Get() == "UsdPreviewSurface"
    assert preview.GetInput("metallic").Get() == 1.0
    assert preview.GetInput("roughness").Get() == 0.0
    variants = material.GetPrim().GetVariantSets().GetVariantSet(SHADING_VARIANT_SET)
    assert variants.GetVariantSelection() == PREVIEW_SHADING
    assert material.GetSurfaceOutput("mdl").GetAttr().IsValid() is False
    variants.SetVariantSelection(RTX_SHADING)
    assert material.ComputeSurfaceSource("mdl")[0].GetPrim().IsValid()
    assert (out / MIRROR_MDL).read_text().startswith("mdl 1.4;")


def test_export_without_the_mirror_leaves_it_out(tmp_path):
    result = export_scene(get_scene(HUMAN), tmp_path, mirror=False)
    stage = open_stage(result.path)
    assert not stage.GetPrimAtPath(MIRROR_GLASS_PATH).IsValid()
    assert stage.GetPrimAtPath(MARK_PATH).IsValid()


def test_export_usd_writes_the_stage_and_refuses_no_scene(tmp_path, capsys):
    assert main(["export-usd", "--scene", HUMAN, "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / f"{HUMAN}.usd")
    assert (tmp_path / "textures" / "mark_splash.png").is_file()
    assert main(["export-usd", "--out", str(tmp_path)]) == 2
    assert "give --scene ID or --all" in capsys.readouterr().err
    assert main(["export-usd", "--scene", "nobody", "--out", str(tmp_path)]) == 2


@pytest.mark.slow
def test_every_scene_exports_valid_with_its_prims_and_pixels_in_place(tmp_path):
    from simulation.catalogue import scene_set

    registry = UsdValidation.ValidationRegistry()
    context = UsdValidation.ValidationContext(
        [
            v
            for v in registry.GetOrLoadAllValidators()
            if "UsdzValidators" not in v.GetMetadata().GetKeywords()
        ]
    )
    for scene in scene_set().values():
        stage = open_stage(export_scene(scene, tmp_path).path)
        assert [e.GetMessage() for e in context.Validate(stage)] == [], scene.id
        assert np.allclose(prim_position(stage, HAND_PATH), _metres(scene.start_mm), atol=MM)
        assert np.allclose(prim_position(stage, MARK_PATH), _metres(scene.mark_center_mm), atol=MM)
        for point in (_metres(scene.goal_mm), _metres(scene.mark_center_mm)):
            seen = mirror_image(point)
            usd, mujoco = camera_pixel(stage, seen, 1024), mujoco_pixel(scene, seen, 1024)
            assert np.hypot(usd[0] - mujoco[0], usd[1] - mujoco[1]) <= 2, scene.id
