from collections import Counter

import pytest

from simulation.catalogue import (
    BODIES,
    HANDS,
    MARKS,
    UnknownSceneError,
    get_scene,
    scene_set,
    select_scenes,
)
from simulation.dynamics import distance_steps, goal_cell, is_collision_free

EXPECTED_D0 = {
    "male_0": 12,
    "male_1": 10,
    "female_0": 10,
    "female_1": 11,
    "tienkung": 6,
    "GR1_T2": 7,
    "nova_carter": 7,
}


def test_the_catalogue_has_seven_bodies_six_hands_and_six_marks():
    assert Counter(b.track for b in BODIES.values()) == {"Human": 4, "Robot": 3}
    assert Counter(h.track for h in HANDS.values()) == {"Human": 3, "Robot": 3}
    assert len(MARKS) == 6


def test_the_scene_set_has_48_human_and_18_robot_scenes():
    scenes = scene_set()
    assert len(scenes) == 66
    assert Counter(s.track for s in scenes.values()) == {"Human": 48, "Robot": 18}
    assert next(iter(scenes)) == "male_0-mano_white-splash"


def test_human_scenes_use_human_marks_and_robot_scenes_use_logos():
    for scene in scene_set().values():
        assert scene.hand.track == scene.track == scene.mark.track
        if scene.track == "Robot":
            assert scene.mark.id in ("logo_0", "logo_1")
            assert scene.mark.side_mm == 100
        else:
            assert scene.mark.side_mm == 200


EXPECTED_BUDGET = {
    "male_0": 21,
    "male_1": 20,
    "female_0": 20,
    "female_1": 21,
    "tienkung": 15,
    "GR1_T2": 16,
    "nova_carter": 16,
}


def test_initial_distances_and_budgets_match_the_reference():
    for scene in scene_set().values():
        assert scene.d0_steps == EXPECTED_D0[scene.body.id], scene.id
        assert scene.max_steps == EXPECTED_BUDGET[scene.body.id], scene.id


def test_thirty_scenes_have_one_step_less_than_d0_plus_10():
    """The reference truncates a float32 d0: 30 of 66 scenes lose a step (protocol v2)."""
    short = [s for s in scene_set().values() if s.max_steps == s.d0_steps + 9]
    rest = [s for s in scene_set().values() if s.max_steps == s.d0_steps + 10]
    assert len(short) == 30 and len(rest) == 36
    assert {s.body.id for s in short} == {"male_0", "tienkung", "GR1_T2", "nova_carter"}


def test_every_goal_is_collision_free_and_a_whole_number_of_steps_away():
    for scene in scene_set().values():
        goal = goal_cell(scene)
        assert is_collision_free(scene, goal)
        assert distance_steps(scene, goal) == 0


def test_goals_sit_half_a_hand_in_front_of_the_mark():
    scene = get_scene("male_0-mano_white-splash")
    assert scene.goal_mm == (200, -100, 1200)
    assert get_scene("nova_carter-allegro-logo_0").goal_mm == (600, 0, 500)


def test_an_unknown_scene_id_names_the_valid_choices():
    with pytest.raises(UnknownSceneError) as caught:
        get_scene("male_9-mano_white-splash")
    assert "male_0" in str(caught.value) and "mano_white" in str(caught.value)


def test_scenes_can_be_selected_by_track_or_by_id():
    assert len(select_scenes("all")) == 66
    assert len(select_scenes("human")) == 48
    assert len(select_scenes("Robot")) == 18
    ids = ["female_1-mano_brown-bread", "GR1_T2-shadow_hand-logo_1"]
    assert [s.id for s in select_scenes(",".join(ids))] == ids
