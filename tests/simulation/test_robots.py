"""Tests for the robot-track stand-ins (simulation.assets.robots).

Each body and hand is attached to a bare scene spec (no room, mirror or lights), compiled once
per module and measured in world coordinates: exact mesh vertices for extents, and rays cast
with ``mj_ray`` for the surfaces the mark lies on.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable

import mujoco
import numpy as np
import pytest

from simulation.assets.meshes import MAX_FACES
from simulation.assets.robots import (
    ASSET_SOURCES,
    ROBOT_BODY_DESCRIPTIONS,
    ROBOT_BODY_IDS,
    ROBOT_HAND_DESCRIPTIONS,
    ROBOT_HAND_IDS,
    add_robot_body,
    add_robot_hand,
    model_path,
)

# Catalogue facts (protocol.md): body offset, front surface x, mark centre (y, z), mark side.
BODY_OFFSET = {"tienkung": (0.0, 0.0), "GR1_T2": (0.0, 0.0), "nova_carter": (0.0, 0.5)}
FRONT_X = {"tienkung": 0.15, "GR1_T2": 0.15, "nova_carter": 0.55}
MARK = {"tienkung": (0.0, 1.2), "GR1_T2": (0.0, 1.25), "nova_carter": (0.0, 0.5)}
MARK_HALF = 0.05
HUMANOIDS = ("tienkung", "GR1_T2")
CAMERA_EYE = np.array([-1.1, 0.0, 2.0])
MIRROR_X = 1.995
HAND_AT = np.array([0.6, -0.2, 1.3])


class Built:
    """A compiled bare scene holding one stand-in, with its kinematics computed."""

    def __init__(self, spec: mujoco.MjSpec) -> None:
        self.spec = spec
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        mujoco.mj_kinematics(self.model, self.data)

    def body_name(self, geom_id: int) -> str:
        return self.model.body(int(self.model.geom_bodyid[geom_id])).name

    def vertices(self, geom_ids: list[int] | None = None) -> np.ndarray:
        """World coordinates of the geoms' mesh vertices (box corners for other geoms)."""
        m, d = self.model, self.data
        ids = range(m.ngeom) if geom_ids is None else geom_ids
        points = []
        for i in ids:
            rot = d.geom_xmat[i].reshape(3, 3)
            if m.geom_type[i] == mujoco.mjtGeom.mjGEOM_MESH:
                mesh = m.geom_dataid[i]
                start, count = m.mesh_vertadr[mesh], m.mesh_vertnum[mesh]
                local = m.mesh_vert[start : start + count]
            else:
                centre, half = m.geom_aabb[i, :3], m.geom_aabb[i, 3:]
                signs = np.array(
                    [[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
                )
                local = centre + signs * half
            points.append(local @ rot.T + d.geom_xpos[i])
        return np.concatenate(points)

    def ray(self, start: np.ndarray, direction: np.ndarray) -> float | None:
        """Distance along ``direction`` (unit) to the first geom, or None if nothing is hit."""
        geom = np.array([-1], dtype=np.int32)
        dist = mujoco.mj_ray(self.model, self.data, start, direction, None, 1, -1, geom)
        return None if geom[0] < 0 else float(dist)

    def front_x(self, y: float, z: float) -> float | None:
        """x of the first surface met by a ray travelling along -x at height z."""
        dist = self.ray(np.array([3.0, y, z]), np.array([-1.0, 0.0, 0.0]))
        return None if dist is None else 3.0 - dist


Attacher = Callable[[mujoco.MjSpec, mujoco.MjsBody, str], None]


def _build(attach: Attacher, asset: str, pos: list[float], *, mocap: bool = False) -> Built:
    """Attaches ``asset`` to a body at ``pos`` of a bare spec and compiles it.

    Any warning fails the test: MuJoCo reports attach conflicts (the child model's options or
    sizes differing from the scene's) as warnings at compile time.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec = mujoco.MjSpec()
        parent = spec.worldbody.add_body(name="parent", pos=pos, mocap=mocap)
        attach(spec, parent, asset)
        return Built(spec)


@pytest.fixture(scope="module")
def bodies() -> dict[str, Built]:
    return {
        body_id: _build(add_robot_body, body_id, [*BODY_OFFSET[body_id], 0.0])
        for body_id in ROBOT_BODY_IDS
    }


@pytest.fixture(scope="module")
def hands() -> dict[str, Built]:
    return {
        hand_id: _build(add_robot_hand, hand_id, HAND_AT.tolist(), mocap=True)
        for hand_id in ROBOT_HAND_IDS
    }


def _mark_grid(body_id: str, n: int = 5) -> list[tuple[float, float]]:
    y0, z0 = MARK[body_id]
    steps = np.linspace(-MARK_HALF, MARK_HALF, n)
    return [(y0 + dy, z0 + dz) for dy in steps for dz in steps]


# --- Catalogue ids and texts -------------------------------------------------------------


def test_robot_ids_follow_the_catalogue_order() -> None:
    assert ROBOT_BODY_IDS == ("tienkung", "GR1_T2", "nova_carter")
    assert ROBOT_HAND_IDS == ("allegro", "shadow_hand", "Robotiq_2F_85")


def test_every_body_has_a_full_and_a_shorter_short_description() -> None:
    assert set(ROBOT_BODY_DESCRIPTIONS) == set(ROBOT_BODY_IDS)
    for full, short in ROBOT_BODY_DESCRIPTIONS.values():
        assert full.startswith("a ") and short.startswith("a ")
        assert len(short) < len(full)


def test_body_descriptions_say_what_the_catalogue_says() -> None:
    assert ROBOT_BODY_DESCRIPTIONS["tienkung"][1] == "a black humanoid robot"
    assert ROBOT_BODY_DESCRIPTIONS["GR1_T2"][1] == "a black humanoid robot"
    assert ROBOT_BODY_DESCRIPTIONS["nova_carter"][1] == "a white wheeled robot"


def test_every_hand_has_a_description() -> None:
    assert set(ROBOT_HAND_DESCRIPTIONS) == set(ROBOT_HAND_IDS)
    assert all(text.startswith("a ") for text in ROBOT_HAND_DESCRIPTIONS.values())
    assert "two-finger" in ROBOT_HAND_DESCRIPTIONS["Robotiq_2F_85"]
    assert "dark" in ROBOT_HAND_DESCRIPTIONS["shadow_hand"]


def test_asset_sources_name_an_installed_file_and_a_licence_for_every_asset() -> None:
    assert set(ASSET_SOURCES) == {*ROBOT_BODY_IDS, *ROBOT_HAND_IDS}
    for asset_id, source in ASSET_SOURCES.items():
        match = re.fullmatch(r"(\w+): (\S+) \((.+)\)", source)
        assert match, source
        assert model_path(asset_id).is_file()
        assert str(model_path(asset_id)).endswith(match.group(2))


# --- Every stand-in is clean -------------------------------------------------------------


@pytest.mark.parametrize("body_id", ROBOT_BODY_IDS)
def test_every_body_compiles_into_a_scene_spec(bodies: dict[str, Built], body_id: str) -> None:
    assert bodies[body_id].model.ngeom > 0


@pytest.mark.parametrize("hand_id", ROBOT_HAND_IDS)
def test_every_hand_compiles_into_a_scene_spec(hands: dict[str, Built], hand_id: str) -> None:
    assert hands[hand_id].model.ngeom > 0


def _all_built(bodies: dict[str, Built], hands: dict[str, Built]) -> dict[str, Built]:
    return {**bodies, **hands}


def test_no_material_reflects(bodies: dict[str, Built], hands: dict[str, Built]) -> None:
    for asset_id, built in _all_built(bodies, hands).items():
        assert built.model.nmat > 0, asset_id
        assert np.all(built.model.mat_reflectance == 0.0), asset_id


def test_no_joint_free_joint_or_other_machinery_comes_along(
    bodies: dict[str, Built], hands: dict[str, Built]
) -> None:
    for asset_id, built in _all_built(bodies, hands).items():
        m = built.model
        counts = {
            "joints": m.njnt, "actuators": m.nu, "sensors": m.nsensor, "tendons": m.ntendon,
            "equalities": m.neq, "keyframes": m.nkey, "cameras": m.ncam, "lights": m.nlight,
            "sites": m.nsite, "textures": m.ntex, "pairs": m.npair, "excludes": m.nexclude,
        }  # fmt: skip
        assert not any(counts.values()), (asset_id, counts)


def test_every_geom_is_visual_only_and_rendered_by_default(
    bodies: dict[str, Built], hands: dict[str, Built]
) -> None:
    for asset_id, built in _all_built(bodies, hands).items():
        m = built.model
        assert np.all(m.geom_contype == 0) and np.all(m.geom_conaffinity == 0), asset_id
        assert np.all(m.geom_group <= 2), asset_id
        assert not np.any(m.geom_type == mujoco.mjtGeom.mjGEOM_PLANE), asset_id


def test_names_carry_the_asset_id_as_prefix(
    bodies: dict[str, Built], hands: dict[str, Built]
) -> None:
    for asset_id, built in _all_built(bodies, hands).items():
        m = built.model
        for i in range(m.ngeom):
            assert built.body_name(i).startswith(f"{asset_id}/"), asset_id
        for i in range(m.nmesh):
            assert m.mesh(i).name.startswith(f"{asset_id}/"), asset_id


def test_models_are_read_from_the_installed_packages() -> None:
    for asset_id in (*ROBOT_BODY_IDS, *ROBOT_HAND_IDS):
        package = ASSET_SOURCES[asset_id].split(":")[0]
        path = model_path(asset_id)
        assert path.is_absolute() and path.is_file(), path
        assert path.parts[path.parts.index("site-packages") + 1] == package, path


def test_imported_meshes_are_simplified_for_the_cpu_renderer(
    bodies: dict[str, Built], hands: dict[str, Built]
) -> None:
    for asset_id, built in _all_built(bodies, hands).items():
        m = built.model
        assert m.nmesh > 0, asset_id
        assert max(m.mesh_facenum) <= MAX_FACES, asset_id


def test_a_body_and_a_hand_share_one_scene() -> None:
    spec = mujoco.MjSpec()
    body = spec.worldbody.add_body(name="body", pos=[0.0, 0.5, 0.0])
    hand = spec.worldbody.add_body(name="hand", mocap=True, pos=[0.8, 0.1, 0.9])
    add_robot_body(spec, body, "nova_carter")
    add_robot_hand(spec, hand, "Robotiq_2F_85")
    model = spec.compile()
    names = {model.body(i).name.split("/")[0] for i in range(model.nbody)}
    assert {"nova_carter", "Robotiq_2F_85"} <= names


# --- Bodies: where the mark goes ---------------------------------------------------------


@pytest.mark.parametrize("body_id", ROBOT_BODY_IDS)
def test_the_front_surface_lies_just_behind_the_mark(
    bodies: dict[str, Built], body_id: str
) -> None:
    """Every point of the mark's square has the body's surface 0 to 3 cm behind it."""
    front = FRONT_X[body_id]
    low = 0.12 if body_id in HUMANOIDS else front - 0.01
    for y, z in _mark_grid(body_id):
        x = bodies[body_id].front_x(y, z)
        assert x is not None, (y, z)
        assert low <= x <= front + 0.001, (y, z, x)


@pytest.mark.parametrize("body_id", HUMANOIDS)
def test_the_humanoid_chest_covers_the_mark_band(bodies: dict[str, Built], body_id: str) -> None:
    for z in np.arange(1.15, 1.3001, 0.025):
        x = bodies[body_id].front_x(0.0, float(z))
        assert x is not None and 0.12 <= x <= 0.15 + 0.001, (z, x)


@pytest.mark.parametrize("body_id", HUMANOIDS)
def test_nothing_of_the_humanoid_torso_or_head_pokes_past_the_front(
    bodies: dict[str, Built], body_id: str
) -> None:
    built = bodies[body_id]
    trunk = [
        i for i in range(built.model.ngeom)
        if built.body_name(i).endswith(("/pelvis", "/torso_link"))
    ]  # fmt: skip
    assert trunk
    assert built.vertices(trunk)[:, 0].max() <= 0.15 + 0.001
    # In front of the chest and head, where the hand reaches, rays meet nothing past the front.
    for y in np.linspace(-0.1, 0.1, 5):
        for z in np.arange(1.0, 1.75, 0.05):
            x = built.front_x(float(y), float(z))
            assert x is None or x <= 0.15 + 0.001, (y, z, x)


@pytest.mark.parametrize("body_id", ROBOT_BODY_IDS)
def test_the_body_stands_on_the_floor(bodies: dict[str, Built], body_id: str) -> None:
    assert abs(bodies[body_id].vertices()[:, 2].min()) < 0.005


@pytest.mark.parametrize("body_id", HUMANOIDS)
def test_the_humanoids_are_as_tall_as_the_robots_they_stand_for(
    bodies: dict[str, Built], body_id: str
) -> None:
    height = bodies[body_id].vertices()[:, 2].max()
    assert 1.55 <= height <= 1.7


def test_the_wheeled_robot_is_1_1_m_deep_and_centred_under_the_mark(
    bodies: dict[str, Built],
) -> None:
    points = bodies["nova_carter"].vertices()
    assert points[:, 0].min() == pytest.approx(-0.55, abs=0.005)
    assert points[:, 0].max() == pytest.approx(0.55, abs=0.005)
    assert (points[:, 1].min() + points[:, 1].max()) / 2 == pytest.approx(
        MARK["nova_carter"][0], abs=0.01
    )
    assert points[:, 1].min() <= -0.45 and points[:, 1].max() >= 0.45


@pytest.mark.parametrize("body_id", ROBOT_BODY_IDS)
def test_the_camera_sees_the_mark_only_in_the_mirror(
    bodies: dict[str, Built], body_id: str
) -> None:
    """From the camera, the mark is hidden by the body but its reflection is not."""
    built = bodies[body_id]
    front = FRONT_X[body_id]
    for y, z in _mark_grid(body_id):
        mark = np.array([front + 0.002, y, z])
        to_mark = mark - CAMERA_EYE
        dist = built.ray(CAMERA_EYE, to_mark / np.linalg.norm(to_mark))
        assert dist is not None and dist < np.linalg.norm(to_mark), ("mark seen directly", y, z)
        image = np.array([2 * MIRROR_X - mark[0], y, z])
        to_image = image - CAMERA_EYE
        on_mirror = CAMERA_EYE + to_image * (MIRROR_X - CAMERA_EYE[0]) / to_image[0]
        to_mirror = on_mirror - CAMERA_EYE
        dist = built.ray(CAMERA_EYE, to_mirror / np.linalg.norm(to_mirror))
        assert dist is None or dist > np.linalg.norm(to_mirror), ("reflection hidden", y, z)


# --- Hands -------------------------------------------------------------------------------


@pytest.mark.parametrize("hand_id", ROBOT_HAND_IDS)
def test_the_hand_is_about_0_2_m_and_centred_on_its_parent(
    hands: dict[str, Built], hand_id: str
) -> None:
    built = hands[hand_id]
    hand = [i for i in range(built.model.ngeom) if not built.model.geom(i).name.endswith("/halo")]
    points = built.vertices(hand) - HAND_AT  # the hand itself, without the halo behind it
    low, high = points.min(axis=0), points.max(axis=0)
    assert 0.18 <= (high - low).max() <= 0.22
    assert np.all(np.abs((low + high) / 2) < 0.01)


@pytest.mark.parametrize("hand_id", ROBOT_HAND_IDS)
def test_the_hand_is_thin_along_x_and_upright(hands: dict[str, Built], hand_id: str) -> None:
    """Within +-0.06 m along x (the hand's 0.1 m collision depth), widest across y, tall in z."""
    points = hands[hand_id].vertices() - HAND_AT
    size = points.max(axis=0) - points.min(axis=0)
    assert points[:, 0].min() >= -0.06 and points[:, 0].max() <= 0.06
    assert size[0] < size[1] and size[0] < size[2]
    assert size[2] >= 0.18


def test_the_hand_follows_its_parent() -> None:
    spec = mujoco.MjSpec()
    hand = spec.worldbody.add_body(name="hand", mocap=True, pos=[0.0, 0.0, 0.0])
    add_robot_hand(spec, hand, "shadow_hand")
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    before = data.geom_xpos.copy()
    data.mocap_pos[0] = [0.3, -0.1, 1.2]
    mujoco.mj_kinematics(model, data)
    assert np.allclose(data.geom_xpos - before, [0.3, -0.1, 1.2])


# --- Unknown ids -------------------------------------------------------------------------


def test_an_unknown_body_raises_key_error_naming_the_valid_bodies() -> None:
    spec = mujoco.MjSpec()
    with pytest.raises(KeyError) as caught:
        add_robot_body(spec, spec.worldbody.add_body(), "male_0")
    assert all(body_id in str(caught.value) for body_id in ROBOT_BODY_IDS)


def test_an_unknown_hand_raises_key_error_naming_the_valid_hands() -> None:
    spec = mujoco.MjSpec()
    with pytest.raises(KeyError) as caught:
        add_robot_hand(spec, spec.worldbody.add_body(), "mano_white")
    assert all(hand_id in str(caught.value) for hand_id in ROBOT_HAND_IDS)


def _attached(body_id: str) -> mujoco.MjModel:
    spec = mujoco.MjSpec()
    add_robot_body(spec, spec.worldbody.add_body(name="stand"), body_id)
    return spec.compile()


def test_a_robot_is_read_from_its_files_once_and_each_scene_gets_its_own_copy(monkeypatch):
    """The reduced model of an asset is made once per process; every attach gets a copy, so
    what one scene's spec changes never reaches the next, and each compiles the same model."""
    first = _attached("tienkung")
    loads: list[str] = []
    from_file = mujoco.MjSpec.from_file
    monkeypatch.setattr(
        mujoco.MjSpec, "from_file", staticmethod(lambda path: loads.append(path) or from_file(path))
    )
    spec = mujoco.MjSpec()
    add_robot_body(spec, spec.worldbody.add_body(name="stand"), "tienkung")
    for geom in spec.geoms:
        geom.rgba = [1.0, 0.0, 0.0, 1.0]  # a change to this scene's copy alone
    again = _attached("tienkung")
    assert loads == []
    assert first.ngeom == again.ngeom and first.nmesh == again.nmesh
    for name in ("geom_pos", "geom_quat", "geom_rgba", "mesh_vert", "mesh_face"):
        assert np.array_equal(getattr(first, name), getattr(again, name)), name
