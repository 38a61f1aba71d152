"""Control conditions: the same scenes with one change each, and what the probes show of them."""

import hashlib

import gymnasium
import pytest

import simulation
from simulation import ENV_ID
from simulation.catalogue import (
    CONDITIONS,
    MOVED_MARK_PLACES_MM,
    STEP_MM,
    UnknownConditionError,
    get_scene,
    moved_mark_places,
    scene_set,
    select_scenes,
)
from simulation.dynamics import distance_steps, goal_cell, is_collision_free
from simulation.renderer import frame_key

gymnasium.register_envs(simulation)

HUMAN = "male_0-mano_white-splash"
ROBOT = "tienkung-allegro-logo_0"
CONTROLS = ("no-mirror", "mark-unseen", "moved-mark")


def test_the_conditions_are_main_then_the_three_controls():
    assert tuple(CONDITIONS) == ("main", *CONTROLS)


@pytest.mark.parametrize("call", [scene_set, lambda c: get_scene(HUMAN, c)])
def test_an_unknown_condition_is_refused_naming_every_condition(call):
    with pytest.raises(UnknownConditionError, match="main, no-mirror, mark-unseen, moved-mark"):
        call("mirrorless")


def test_main_is_the_paper_scene_set_itself():
    assert scene_set("main") is scene_set()
    for scene in scene_set().values():
        assert scene.condition == "main" and scene.variant_id == scene.id
        assert get_scene(scene.id, "main") is scene
        assert "condition" not in scene.summary()


@pytest.mark.parametrize("condition", CONTROLS)
def test_a_control_keeps_the_scenes_ids_track_hand_start_and_budget(condition):
    main, control = scene_set(), scene_set(condition)
    assert list(control) == list(main)
    for scene_id, scene in control.items():
        usual = main[scene_id]
        assert scene.condition == condition and scene.variant_id == f"{scene_id}@{condition}"
        assert (scene.body, scene.hand, scene.mark, scene.start_mm, scene.max_steps) == (
            usual.body,
            usual.hand,
            usual.mark,
            usual.start_mm,
            usual.max_steps,
        )
    assert [s.id for s in select_scenes("robot", condition)] == [
        s.id for s in select_scenes("robot")
    ]


@pytest.mark.parametrize("condition", ["no-mirror", "mark-unseen"])
def test_removing_the_mirror_or_the_marks_drawing_keeps_the_goal(condition):
    for scene_id, scene in scene_set(condition).items():
        usual = scene_set()[scene_id]
        assert (scene.goal_mm, scene.d0_steps) == (usual.goal_mm, usual.d0_steps)
    assert not get_scene(HUMAN, "no-mirror").shows_mirror
    assert get_scene(HUMAN, "no-mirror").shows_mark
    assert get_scene(HUMAN, "mark-unseen").shows_mirror
    assert not get_scene(HUMAN, "mark-unseen").shows_mark


def test_moved_marks_are_the_seeded_ones_documented_in_the_catalogue():
    """Pinned: a change of the places, the seed or the draw changes the benchmark's control."""
    moved = {s.id: s.mark_center_mm[1:] for s in scene_set("moved-mark").values()}
    assert moved[HUMAN] == (100, 1200)
    assert moved["male_1-mano_white-leaf_0"] == (-100, 1000)
    assert moved["female_0-mano_brown-leaf_0"] == (-100, 700)
    assert moved[ROBOT] == (0, 900)
    assert moved["GR1_T2-Robotiq_2F_85-logo_0"] == (-200, 1050)
    assert moved["nova_carter-allegro-logo_0"] == (-100, 300)
    for scene_id, place in moved.items():
        scene = get_scene(scene_id)
        assert place in MOVED_MARK_PLACES_MM[scene.body.id]
        assert place in moved_mark_places(scene)


def test_every_moved_mark_is_off_every_route_to_the_usual_mark_and_within_the_budget():
    for scene_id, moved in scene_set("moved-mark").items():
        usual = scene_set()[scene_id]
        goal = goal_cell(moved)
        assert moved.goal_mm == (usual.goal_mm[0], *moved.mark_center_mm[1:])
        assert is_collision_free(moved, goal) and distance_steps(moved, goal) == 0
        assert moved.d0_steps == distance_steps(moved, (0, 0, 0))
        assert moved.d0_steps + 5 <= moved.max_steps
        # Every cell of every shortest route from the start to the usual goal lies in their box.
        box = [sorted((0, usual_goal)) for usual_goal in goal_cell(usual)]
        outside = sum(max(low - g, g - high, 0) for (low, high), g in zip(box, goal, strict=True))
        assert outside >= 2, scene_id
        apart = zip(moved.goal_mm, usual.goal_mm, strict=True)
        assert sum(abs(a - b) for a, b in apart) >= 2 * STEP_MM


def test_a_main_frame_key_is_the_one_it_always_was():
    version = "v2-mujoco-4.0.1-scene2"
    today = hashlib.sha256(f"{version}|{HUMAN}|0,-1,2|1024".encode()).hexdigest()[:40]
    assert frame_key(version, HUMAN, (0, -1, 2), 1024) == today
    assert frame_key(version, HUMAN, (0, -1, 2), 1024, condition="main") == today
    assert today == "26de02a09d7a4400b9775d8a292cca8993374f01"


def test_a_controls_frame_key_names_its_condition():
    version, cell = "v", (1, 0, 0)
    keys = {c: frame_key(version, HUMAN, cell, 64, condition=c) for c in CONDITIONS}
    assert len(set(keys.values())) == 4
    # No mirror is the scene drawn without its mirror: the same pixels, the same key.
    assert keys["no-mirror"] == frame_key(version, HUMAN, cell, 64, mirror=False)
    moved = hashlib.sha256(f"{version}|{HUMAN}|1,0,0|64|moved-mark".encode()).hexdigest()[:40]
    assert keys["moved-mark"] == moved


def test_the_environment_plays_a_condition_and_names_it_in_its_frame_keys():
    environment = gymnasium.make(ENV_ID, scene=HUMAN, size=32, condition="moved-mark")
    try:
        _, info = environment.reset()
        moved = get_scene(HUMAN, "moved-mark")
        assert info["distance_steps"] == moved.d0_steps != get_scene(HUMAN).d0_steps
        version = environment.unwrapped._renderer.version
        assert info["frame_key"] == frame_key(version, HUMAN, (0, 0, 0), 32, condition="moved-mark")
        _, info = environment.reset(options={"scene": ROBOT})
        assert info["distance_steps"] == get_scene(ROBOT, "moved-mark").d0_steps
    finally:
        environment.close()
    with pytest.raises(UnknownConditionError, match="moved-mark"):
        gymnasium.make(ENV_ID, scene=HUMAN, size=32, condition="moved")


def test_a_renderer_keeps_a_scene_apart_from_its_controls():
    from simulation.mujoco_backend import MujocoRenderer

    with MujocoRenderer(keep_scenes=3) as renderer:
        for condition in ("main", "mark-unseen", "moved-mark"):
            renderer.load(get_scene(HUMAN, condition))
            renderer.render(32)
        assert renderer.loaded_scenes == [HUMAN, f"{HUMAN}@mark-unseen", f"{HUMAN}@moved-mark"]


def _probe(scene_id: str, condition: str, size: int) -> dict[str, int]:
    from simulation.visibility import visible_pixels

    return visible_pixels(get_scene(scene_id, condition), size=size)


@pytest.mark.parametrize("scene_id", [HUMAN, ROBOT])
def test_the_probe_shows_what_each_condition_claims(scene_id):
    """At 128 px: the mark nowhere without the mirror or its drawing (the hand's reflection
    still there without the mark); the moved mark on the body and in the mirror."""
    from simulation.visibility import mark_sits_on_body

    counts = _probe(scene_id, "no-mirror", 128)
    assert counts["mark"] == counts["mark_direct"] == counts["hand"] == 0, counts
    counts = _probe(scene_id, "mark-unseen", 128)
    assert counts["mark"] == counts["mark_direct"] == 0 < counts["hand"], counts
    moved = get_scene(scene_id, "moved-mark")
    counts = _probe(scene_id, "moved-mark", 128)
    assert counts["mark"] >= 4 and counts["mark_direct"] == 0, counts
    assert mark_sits_on_body(moved)


def test_a_probe_draws_a_scene_without_a_mirror_once(monkeypatch):
    """Both of its probe frames would be the same drawing: the scene is drawn once."""
    import simulation.visibility as visibility

    drawn = []
    probe = visibility._probe_frame
    monkeypatch.setattr(
        visibility, "_probe_frame", lambda scene, **kw: drawn.append(kw) or probe(scene, **kw)
    )
    assert visibility.visible_pixels(get_scene(HUMAN, "no-mirror"), size=64)["hand"] == 0
    assert len(drawn) == 1
    visibility.visible_pixels(get_scene(HUMAN), size=64)
    assert sorted(kw["mirror"] for kw in drawn[1:]) == [False, True]


def test_the_moved_mark_shows_in_the_mirror_where_the_usual_one_does_not():
    from simulation.visibility import reflected_mark_mask

    moved = reflected_mark_mask(get_scene(HUMAN, "moved-mark"), 64)
    usual = reflected_mark_mask(get_scene(HUMAN), 64)
    assert (moved & ~usual).sum() > 0 and (usual & ~moved).sum() > 0


SEEN_DIRECTLY = {"male_1": 6}
"""Pixels (at 256 px) of the mark's plate that the camera sees past the body in the paper's own
scenes of these bodies (a sliver at the plate's edge, there with or without the mirror): a fact
of the main geometry, which no condition changes. Every other body hides its mark entirely
(GR1_T2 showed 10 until scene build 4, whose torso mesh no longer has holes at its outline).
male_1 showed 3 until scene build 6, whose round shapes have 14 slices at 256 px instead of 28
(``shape_detail``): a polygon lies inside its circle, so the body hides a little less. A
1024 px frame, drawn as before, shows 72 (4.5 per 256 x 256 px)."""


@pytest.mark.slow
@pytest.mark.parametrize("scene_id", list(scene_set()))
def test_every_scene_shows_what_each_condition_claims(scene_id):
    from simulation.visibility import mark_sits_on_body

    body = get_scene(scene_id).body.id
    counts = _probe(scene_id, "no-mirror", 256)
    assert counts["mark"] == counts["hand"] == 0, counts
    assert counts["mark_direct"] == SEEN_DIRECTLY.get(body, 0), counts
    counts = _probe(scene_id, "mark-unseen", 256)
    assert counts["mark"] == counts["mark_direct"] == 0 and counts["hand"] >= 4, counts
    counts = _probe(scene_id, "moved-mark", 256)
    assert counts["mark"] >= 4 and counts["hand"] >= 4 and counts["mark_direct"] == 0, counts
    assert mark_sits_on_body(get_scene(scene_id, "moved-mark"))
