"""Tests for the procedural human bodies and hands (simulation.assets.humans)."""

from __future__ import annotations

from collections.abc import Callable

import mujoco
import numpy as np
import pytest

from simulation.assets.humans import (
    FINGER_NAMES,
    HUMAN_BODY_DESCRIPTIONS,
    HUMAN_BODY_HEIGHTS,
    HUMAN_BODY_IDS,
    HUMAN_HAND_DESCRIPTIONS,
    HUMAN_HAND_IDS,
    HUMAN_HAND_RGB,
    add_human_body,
    add_human_hand,
    finger_geom_name,
)

BODY_FRONT_X = 0.15  # half of the 0.3 m body depth
HAND_HALF_DEPTH = 0.05  # half of the 0.1 m hand depth
TOLERANCE = 1e-6

Adder = Callable[[mujoco.MjSpec, mujoco.MjsBody, str], None]


def _compile(
    adder: Adder, asset_id: str, pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
) -> tuple[mujoco.MjModel, mujoco.MjData]:
    spec = mujoco.MjSpec()
    parent = spec.worldbody.add_body(name="parent", pos=list(pos))
    adder(spec, parent, asset_id)
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    return model, data


def _world_boxes(model: mujoco.MjModel, data: mujoco.MjData) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper world corners of every geom's bounding box (one row per geom)."""
    lows, highs = [], []
    for g in range(model.ngeom):
        centre, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
        rot = data.geom_xmat[g].reshape(3, 3)
        world_centre = data.geom_xpos[g] + rot @ centre
        world_half = np.abs(rot) @ half
        lows.append(world_centre - world_half)
        highs.append(world_centre + world_half)
    return np.array(lows), np.array(highs)


def _geom_index(model: mujoco.MjModel, name: str) -> int:
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name)


def _material_rgb(model: mujoco.MjModel, name: str) -> np.ndarray:
    return model.material(name).rgba[:3] * 255


def _front_x(model: mujoco.MjModel, data: mujoco.MjData, y: float, z: float) -> float:
    """x of the first surface met by a ray cast from x = 1 towards -x at (y, z)."""
    geom = np.zeros(1, dtype=np.int32)
    distance = mujoco.mj_ray(
        model, data, np.array([1.0, y, z]), np.array([-1.0, 0.0, 0.0]), None, 1, -1, geom
    )
    assert distance >= 0, f"nothing in front at y={y}, z={z}"
    return 1.0 - distance


# --- catalogue ------------------------------------------------------------------------------


def test_the_human_bodies_and_hands_are_listed_in_catalogue_order() -> None:
    assert HUMAN_BODY_IDS == ("male_0", "male_1", "female_0", "female_1")
    assert HUMAN_HAND_IDS == ("mano_white", "mano_brown", "mano_purple")


def test_the_hand_colours_are_those_of_the_protocol() -> None:
    assert HUMAN_HAND_RGB == {
        "mano_white": (253, 253, 253),
        "mano_brown": (122, 77, 55),
        "mano_purple": (64, 64, 128),
    }


def test_every_body_has_a_full_and_a_shorter_description_naming_a_man_or_a_woman() -> None:
    assert set(HUMAN_BODY_DESCRIPTIONS) == set(HUMAN_BODY_IDS)
    for body_id, (full, short) in HUMAN_BODY_DESCRIPTIONS.items():
        assert 10 < len(short) < len(full)
        person = "woman" if body_id.startswith("female") else "man"
        assert full.startswith(f"a {person} ")
        assert short.startswith(f"a {person} ")


def test_every_hand_has_a_description_with_its_colour() -> None:
    assert set(HUMAN_HAND_DESCRIPTIONS) == set(HUMAN_HAND_IDS)
    for hand_id, description in HUMAN_HAND_DESCRIPTIONS.items():
        assert hand_id.removeprefix("mano_") in description
        assert "hand" in description


@pytest.mark.parametrize(
    ("body_id", "words"),
    [
        ("male_0", ["red hard hat", "orange", "vest", "work"]),
        ("male_1", ["brown jacket", "grey shirt"]),
        ("female_0", ["blue police shirt", "dark navy trousers"]),
        ("female_1", ["purple vest", "green shirt", "dark grey trousers"]),
    ],
)
def test_the_descriptions_name_the_outfit_of_the_catalogue(body_id: str, words: list[str]) -> None:
    full, _short = HUMAN_BODY_DESCRIPTIONS[body_id]
    for word in words:
        assert word in full


# --- bodies ---------------------------------------------------------------------------------


@pytest.mark.parametrize("body_id", HUMAN_BODY_IDS)
def test_every_body_compiles_with_visual_only_geoms_and_no_reflection(body_id: str) -> None:
    model, _data = _compile(add_human_body, body_id)
    assert 20 < model.ngeom < 80
    assert model.njnt == 0
    assert np.all(model.geom_contype == 0)
    assert np.all(model.geom_conaffinity == 0)
    assert np.all(model.mat_reflectance == 0)
    assert np.all(model.geom_matid >= 0)
    for g in range(model.ngeom):
        assert model.geom(g).name.startswith(f"{body_id}_")
    for m in range(model.nmat):
        assert model.material(m).name.startswith(f"{body_id}_")


@pytest.mark.parametrize("body_id", HUMAN_BODY_IDS)
def test_every_body_fits_within_the_body_depth(body_id: str) -> None:
    model, data = _compile(add_human_body, body_id)
    lows, highs = _world_boxes(model, data)
    assert lows[:, 0].min() >= -BODY_FRONT_X - TOLERANCE
    assert highs[:, 0].max() <= BODY_FRONT_X + TOLERANCE


@pytest.mark.parametrize("body_id", HUMAN_BODY_IDS)
def test_the_chest_front_lies_just_behind_the_mark_plane(body_id: str) -> None:
    # The mark is a flat 0.2 m square at x = 0.15, centred at y in [-0.1, 0] and z in [1.0, 1.3]:
    # the clothes under it must be within 3 cm of it, so it looks stuck to them.
    model, data = _compile(add_human_body, body_id)
    fronts = [
        _front_x(model, data, y, z)
        for y in np.linspace(-0.1, 0.0, 5)
        for z in np.linspace(0.95, 1.35, 41)
    ]
    assert min(fronts) >= 0.12
    assert max(fronts) <= BODY_FRONT_X + TOLERANCE


@pytest.mark.parametrize("body_id", HUMAN_BODY_IDS)
def test_every_body_stands_on_the_floor_at_its_stated_height(body_id: str) -> None:
    model, data = _compile(add_human_body, body_id)
    lows, highs = _world_boxes(model, data)
    assert abs(lows[:, 2].min()) < 0.005
    height = HUMAN_BODY_HEIGHTS[body_id]
    assert height == (1.75 if body_id.startswith("male") else 1.68)
    head = _geom_index(model, f"{body_id}_head")
    assert abs(highs[head, 2] - height) < 0.01
    assert height - 0.01 < highs[:, 2].max() < height + 0.1  # hair and hats on top


@pytest.mark.parametrize("body_id", HUMAN_BODY_IDS)
def test_every_body_faces_forward_with_its_arms_at_its_sides(body_id: str) -> None:
    model, data = _compile(add_human_body, body_id)
    nose = data.geom_xpos[_geom_index(model, f"{body_id}_nose")]
    head = data.geom_xpos[_geom_index(model, f"{body_id}_head")]
    assert nose[0] > head[0] + 0.05
    lows, highs = _world_boxes(model, data)
    # The arms hang down: the body is narrow (no arm sticks out sideways) ...
    assert highs[:, 1].max() < 0.3
    assert lows[:, 1].min() > -0.3
    # ... and symmetric.
    assert highs[:, 1].max() == pytest.approx(-lows[:, 1].min(), abs=1e-6)


@pytest.mark.parametrize(
    ("material", "check"),
    [
        ("male_0_hard_hat", lambda r, g, b: r > 150 and g < 80 and b < 80),
        ("male_0_vest", lambda r, g, b: r > 200 and 60 < g < 200 and b < 60),
        ("male_1_jacket", lambda r, g, b: r > g > b and r < 170),
        ("male_1_shirt", lambda r, g, b: max(r, g, b) - min(r, g, b) < 10 and 90 < r < 200),
        ("female_0_shirt", lambda r, g, b: b > r + 60 and b > g + 40),
        ("female_0_navy", lambda r, g, b: max(r, g, b) < 70),
        ("female_1_vest", lambda r, g, b: r > g + 40 and b > g + 40),
        ("female_1_shirt", lambda r, g, b: g > r + 50 and g > b + 50),
        ("female_1_trousers", lambda r, g, b: max(r, g, b) < 70),
    ],
)
def test_the_outfit_colours_match_the_descriptions(
    material: str, check: Callable[[float, float, float], bool]
) -> None:
    body_id = material.split("_")[0] + "_" + material.split("_")[1]
    model, _data = _compile(add_human_body, body_id)
    assert check(*_material_rgb(model, material))


def test_a_body_moves_with_its_parent() -> None:
    model, data = _compile(add_human_body, "male_1")
    moved_model, moved_data = _compile(add_human_body, "male_1", pos=(0.0, 0.5, 0.0))
    assert model.ngeom == moved_model.ngeom
    np.testing.assert_allclose(
        moved_data.geom_xpos - data.geom_xpos, [[0.0, 0.5, 0.0]] * model.ngeom
    )


def test_every_body_is_built_the_same_way_every_time() -> None:
    for body_id in HUMAN_BODY_IDS:
        first, _ = _compile(add_human_body, body_id)
        second, _ = _compile(add_human_body, body_id)
        np.testing.assert_array_equal(first.geom_size, second.geom_size)
        np.testing.assert_array_equal(first.geom_pos, second.geom_pos)
        np.testing.assert_array_equal(first.mat_rgba, second.mat_rgba)


def test_all_bodies_and_hands_fit_in_one_spec_without_name_clashes() -> None:
    spec = mujoco.MjSpec()
    for i, body_id in enumerate(HUMAN_BODY_IDS):
        add_human_body(spec, spec.worldbody.add_body(name=f"b{i}", pos=[0, i, 0]), body_id)
    for i, hand_id in enumerate(HUMAN_HAND_IDS):
        add_human_hand(spec, spec.worldbody.add_body(name=f"h{i}", pos=[1, i, 1]), hand_id)
    model = spec.compile()
    assert model.nmat == len({model.material(m).name for m in range(model.nmat)})


def test_an_unknown_body_raises_a_key_error_naming_the_valid_ids() -> None:
    spec = mujoco.MjSpec()
    with pytest.raises(KeyError) as raised:
        add_human_body(spec, spec.worldbody, "tienkung")
    for body_id in HUMAN_BODY_IDS:
        assert body_id in str(raised.value)


# --- hands ----------------------------------------------------------------------------------


@pytest.mark.parametrize("hand_id", HUMAN_HAND_IDS)
def test_every_hand_compiles_with_visual_only_geoms_and_no_reflection(hand_id: str) -> None:
    model, _data = _compile(add_human_hand, hand_id)
    assert model.njnt == 0
    assert np.all(model.geom_contype == 0)
    assert np.all(model.geom_conaffinity == 0)
    assert np.all(model.mat_reflectance == 0)
    for g in range(model.ngeom):
        assert model.geom(g).name.startswith(f"{hand_id}_")


@pytest.mark.parametrize("hand_id", HUMAN_HAND_IDS)
def test_every_hand_has_five_fingers_of_three_segments(hand_id: str) -> None:
    model, _data = _compile(add_human_hand, hand_id)
    prefix = f"{hand_id}_finger_"
    names = [model.geom(g).name for g in range(model.ngeom)]
    fingers = {
        name.removeprefix(prefix).rsplit("_", 1)[0] for name in names if name.startswith(prefix)
    }
    assert fingers == set(FINGER_NAMES)
    assert len(FINGER_NAMES) == 5
    for finger in FINGER_NAMES:
        for segment in (1, 2, 3):
            assert finger_geom_name(hand_id, finger, segment) in names
    assert sum(name.startswith(prefix) for name in names) == 15


@pytest.mark.parametrize("hand_id", HUMAN_HAND_IDS)
def test_every_hand_stays_within_its_depth(hand_id: str) -> None:
    centre = (0.6, -0.3, 1.3)
    model, data = _compile(add_human_hand, hand_id, pos=centre)
    lows, highs = _world_boxes(model, data)
    assert lows[:, 0].min() >= centre[0] - HAND_HALF_DEPTH - TOLERANCE
    assert highs[:, 0].max() <= centre[0] + HAND_HALF_DEPTH + TOLERANCE


@pytest.mark.parametrize("hand_id", HUMAN_HAND_IDS)
def test_every_hand_has_the_requested_colour_all_over(hand_id: str) -> None:
    model, _data = _compile(add_human_hand, hand_id)
    assert model.nmat == 1
    assert np.all(model.geom_matid == 0)
    np.testing.assert_allclose(model.mat_rgba[0], [*np.array(HUMAN_HAND_RGB[hand_id]) / 255, 1.0])


def test_the_hand_is_a_right_hand_of_real_size_fingers_up_palm_to_the_body() -> None:
    hand_id = "mano_white"
    model, data = _compile(add_human_hand, hand_id)
    lows, highs = _world_boxes(model, data)

    def box(name: str) -> tuple[np.ndarray, np.ndarray]:
        g = _geom_index(model, name)
        return lows[g], highs[g]

    # Fingers up: every fingertip is above the palm centre; the middle finger is the longest.
    tips = {f: box(finger_geom_name(hand_id, f, 3))[1][2] for f in FINGER_NAMES}
    assert all(top > 0.04 for top in tips.values())
    assert max(tips, key=lambda f: tips[f]) == "middle"
    # Wrist to middle fingertip about 0.19 m; palm about 0.085 m wide.
    wrist_line = box(f"{hand_id}_palm_heel")[0][2]
    assert 0.17 < tips["middle"] - wrist_line < 0.21
    palm_low, palm_high = box(f"{hand_id}_palm")
    edges = [box(f"{hand_id}_palm_edge"), box(f"{hand_id}_palm_edge_2")]
    width = max(e[1][1] for e in edges) - min(e[0][1] for e in edges)
    assert 0.075 < width < 0.095
    assert palm_high[0] - palm_low[0] < 0.03
    # Right hand with the palm towards -x: the thumb is on the -y side, the little finger +y.
    thumb = data.geom_xpos[_geom_index(model, finger_geom_name(hand_id, "thumb", 3))]
    little = data.geom_xpos[_geom_index(model, finger_geom_name(hand_id, "little", 3))]
    assert thumb[1] < -0.05 < 0.0 < little[1]
    # The fingers curl (and the thumb sits) towards the palm side, -x.
    assert thumb[0] < 0.0
    assert data.geom_xpos[_geom_index(model, finger_geom_name(hand_id, "index", 3))][0] < 0.0


def test_an_unknown_hand_raises_a_key_error_naming_the_valid_ids() -> None:
    spec = mujoco.MjSpec()
    with pytest.raises(KeyError) as raised:
        add_human_hand(spec, spec.worldbody, "allegro")
    for hand_id in HUMAN_HAND_IDS:
        assert hand_id in str(raised.value)
