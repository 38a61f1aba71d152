import pytest

from simulation.catalogue import get_scene, scene_set
from simulation.dynamics import (
    Action,
    EpisodeState,
    apply_action,
    distance_steps,
    goal_cell,
    hand_position_mm,
)

MALE = get_scene("male_0-mano_white-splash")  # start (0.7, -0.5, 1.5), goal (0.2, -0.1, 1.2)


def test_actions_are_numbered_as_the_reference_options():
    assert [a.name for a in Action] == ["UP", "DOWN", "LEFT", "RIGHT", "FORWARD", "BACKWARD"]
    assert [a.value for a in Action] == [1, 2, 3, 4, 5, 6]
    assert Action.UP.delta == (0, 0, 1)
    assert Action.LEFT.delta == (0, 1, 0)
    assert Action.FORWARD.delta == (1, 0, 0)


def test_each_executed_move_goes_one_step_along_its_axis():
    for action in Action:
        t = apply_action(MALE, (0, 0, 0), action)
        assert t.executed
        assert hand_position_mm(MALE, t.cell) == tuple(
            s + 100 * d for s, d in zip(MALE.start_mm, action.delta, strict=True)
        )


def test_it_refuses_a_move_through_the_body_front():
    # front at x = 0.15, hand half-depth 0.05: the lowest hand centre is x = 0.2.
    cell = (-5, 0, 0)
    assert hand_position_mm(MALE, cell)[0] == 200
    t = apply_action(MALE, cell, Action.BACKWARD)
    assert not t.executed and t.cell == cell
    assert t.distance_steps == distance_steps(MALE, cell)


def test_it_refuses_a_move_through_the_mirror():
    # mirror face at x = 1.995: the highest hand centre is x = 1.9.
    cell = (12, 0, 0)
    assert hand_position_mm(MALE, cell)[0] == 1900
    assert not apply_action(MALE, cell, Action.FORWARD).executed
    assert apply_action(MALE, (11, 0, 0), Action.FORWARD).executed


def test_y_and_z_are_not_bounded():
    cell = (-5, 0, 0)  # touching the body
    for action in (Action.UP, Action.DOWN, Action.LEFT, Action.RIGHT):
        assert apply_action(MALE, cell, action).executed


def test_the_wheeled_robot_has_a_deeper_front():
    scene = get_scene("nova_carter-allegro-logo_0")  # front 0.55, start x 0.8
    assert apply_action(scene, (-2, 0, 0), Action.UP).executed
    assert not apply_action(scene, (-2, 0, 0), Action.BACKWARD).executed


def test_a_bad_response_moves_nothing_and_repeats_the_distance():
    t = apply_action(MALE, (0, 0, 0), None)
    assert not t.executed and t.cell == (0, 0, 0) and t.distance_steps == 12 and not t.success


def test_success_needs_an_executed_move_within_one_step():
    goal = goal_cell(MALE)
    near = (goal[0] + 2, goal[1], goal[2])
    t = apply_action(MALE, near, Action.BACKWARD)
    assert t.executed and t.distance_steps == 1 and t.success
    assert not apply_action(MALE, near, None).success


def test_an_oracle_path_succeeds_in_d0_minus_one_steps_on_every_scene():
    for scene in scene_set().values():
        state = EpisodeState(scene)
        goal = goal_cell(scene)
        while not state.done:
            for axis, (pos, neg) in enumerate(
                (
                    (Action.FORWARD, Action.BACKWARD),
                    (Action.LEFT, Action.RIGHT),
                    (Action.UP, Action.DOWN),
                )
            ):
                if state.cell[axis] != goal[axis]:
                    state.step(pos if goal[axis] > state.cell[axis] else neg)
                    break
        assert state.success, scene.id
        assert state.steps_taken == scene.d0_steps - 1
        assert state.distances[0] == scene.d0_steps and state.distances[-1] == 1


def test_an_episode_ends_when_the_budget_is_used_up():
    state = EpisodeState(MALE)
    for _ in range(MALE.max_steps):
        state.step(Action.FORWARD if state.steps_taken % 2 else Action.UP)
    assert state.done and not state.success
    assert len(state.distances) == MALE.max_steps + 1
    with pytest.raises(RuntimeError):
        state.step(Action.UP)
