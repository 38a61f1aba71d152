"""Behaviour of a run: mirror-self confusion, bad responses and collisions per episode and cell."""

import statistics
from typing import Any

import pytest

from evaluation.agents import MirrorConfusedAgent, OracleAgent, RandomAgent, ScriptedAgent
from evaluation.confusion import (
    CONFUSED_MIN_MOVES,
    CONFUSED_THRESHOLD,
    EpisodeBehaviour,
    behaviour_cell,
    behaviour_json,
    episode_behaviour,
)
from evaluation.runner import run_episode
from simulation.catalogue import get_scene, scene_set

SCENES = list(scene_set().values())
MALE_0 = get_scene("male_0-mano_white-splash")
"""Goal 5 steps backward (-x), 4 left, 3 down; the mirror 12 steps forward; 21 steps allowed."""
UP, DOWN, LEFT, RIGHT, FORWARD, BACKWARD = (f"Choice: [{option}]" for option in range(1, 7))
UNREADABLE = "I cannot tell."


def scripted(responses, scene=MALE_0, level=0):
    """Return the record of an episode that plays ``responses`` (the last one repeats)."""
    return run_episode(scene, level, ScriptedAgent(responses), seed=0)


def played(make_agent, level=0):
    return [run_episode(scene, level, make_agent(), seed=0) for scene in SCENES]


def confusion_rates(records) -> list[float]:
    """Return each episode's confusion rate; every baseline episode executes moves."""
    rates = [episode_behaviour(record).confusion_rate for record in records]
    assert None not in rates
    return [rate for rate in rates if rate is not None]


# One episode


def test_an_episode_that_walks_towards_the_mirror_image_is_confused_at_every_move():
    # Forward until the glass (12 moves), then pressing on it for the 9 steps left.
    behaviour = episode_behaviour(scripted([FORWARD]))
    assert behaviour == EpisodeBehaviour(
        steps=21,
        executed_moves=12,
        answered_steps=21,
        confused_moves=12,
        bad_responses=0,
        collisions=9,
    )
    assert behaviour.confusion_rate == 1.0
    assert behaviour.collision_rate == 9 / 21
    assert behaviour.mirror_confused


def test_an_episode_that_walks_to_the_goal_is_never_confused():
    record = scripted([BACKWARD] * 5 + [LEFT] * 4 + [DOWN])
    assert record["success"]
    behaviour = episode_behaviour(record)
    # d0 = 12: the episode succeeds one step short of the mark, after 11 moves.
    assert behaviour.executed_moves == 11
    assert behaviour.confusion_rate == 0.0
    assert behaviour.collision_rate == 0.0
    assert not behaviour.mirror_confused


def test_moves_along_the_mirror_are_not_confused_whichever_way_they_go():
    # Left is towards the mark and its image alike; right is away from both.
    behaviour = episode_behaviour(scripted([LEFT, RIGHT, RIGHT, FORWARD, UP]))
    assert behaviour.executed_moves == 21
    assert behaviour.confused_moves == 1


def test_bad_responses_count_over_steps_and_collisions_over_answered_steps():
    # One unreadable answer, 12 moves forward to the glass, 8 refused presses on it.
    behaviour = episode_behaviour(scripted([UNREADABLE, FORWARD]))
    assert (behaviour.steps, behaviour.bad_responses, behaviour.answered_steps) == (21, 1, 20)
    assert behaviour.bad_response_rate == 1 / 21
    assert behaviour.collision_rate == 8 / 20
    assert behaviour.confusion_rate == 1.0


def test_an_episode_of_unreadable_answers_has_no_confusion_or_collision_rate():
    behaviour = episode_behaviour(scripted([UNREADABLE]))
    assert behaviour.bad_response_rate == 1.0
    assert behaviour.confusion_rate is None and behaviour.collision_rate is None
    assert not behaviour.mirror_confused


def test_too_few_executed_moves_do_not_label_an_episode():
    moves = CONFUSED_MIN_MOVES - 1
    behaviour = episode_behaviour(scripted([FORWARD] * moves + [UNREADABLE]))
    assert behaviour.confusion_rate == 1.0 and behaviour.executed_moves == moves
    assert not behaviour.mirror_confused


def test_the_label_needs_a_confusion_rate_of_at_least_the_threshold():
    assert CONFUSED_THRESHOLD == 0.5
    # 3 forward moves and 3 moves to the left: exactly half of the executed moves.
    half = episode_behaviour(scripted([FORWARD] * 3 + [LEFT] * 3 + [UNREADABLE]))
    assert half.confusion_rate == 0.5 and half.mirror_confused
    # One more move to the left tips it below.
    less = episode_behaviour(scripted([FORWARD] * 3 + [LEFT] * 4 + [UNREADABLE]))
    assert less.confusion_rate == 3 / 7 and not less.mirror_confused


# Baseline agents over every scene at level 0


def test_the_mirror_confused_agent_is_confused_in_every_scene():
    records = played(MirrorConfusedAgent)
    rates = confusion_rates(records)
    # Measured: mean 0.714 over the 66 episodes, from 12/19 (male_0) to 15/16 (GR1_T2):
    # it walks forward to the glass, then lines up with the mark's height and side.
    assert statistics.mean(rates) == pytest.approx(0.714, abs=0.001)
    assert min(rates) == pytest.approx(12 / 19)
    assert all(episode_behaviour(record).mirror_confused for record in records)


def test_the_oracle_is_never_confused_and_never_collides():
    behaviours = [episode_behaviour(record) for record in played(OracleAgent)]
    assert {b.confusion_rate for b in behaviours} == {0.0}
    assert {b.collision_rate for b in behaviours} == {0.0}
    assert not any(b.mirror_confused for b in behaviours)


def test_the_random_agent_is_confused_in_between():
    records = played(lambda: RandomAgent(0))
    rates = confusion_rates(records)
    # Measured with seed 0: mean 0.175, at most 0.429. About one executed move in six is
    # forward, and every forward move heads for the image.
    assert 0.1 < statistics.mean(rates) < 0.25
    assert max(rates) < CONFUSED_THRESHOLD
    assert not any(episode_behaviour(record).mirror_confused for record in records)


# Cells and tables


def test_a_cell_pools_counts_over_steps_so_a_long_episode_weighs_more():
    long = EpisodeBehaviour(20, 10, 20, 10, 0, 10)
    short = EpisodeBehaviour(2, 2, 2, 0, 0, 0)
    cell = behaviour_cell([long, short])
    assert cell == {
        "episodes": 2,
        "mirror_confused_episodes": 1,
        "confusion_rate": 10 / 12,
        "bad_response_rate": 0.0,
        "collision_rate": 10 / 22,
    }
    assert behaviour_cell([]) is None


def test_the_tables_have_every_level_and_track_and_overall_pools_both_tracks():
    records = played(MirrorConfusedAgent, level=0) + played(OracleAgent, level=1)
    tables: Any = behaviour_json(records)  # read as the JSON document it is
    assert list(tables["levels"]) == ["0", "1", "2", "3"]
    level_0 = tables["levels"]["0"]
    assert level_0["human"]["episodes"] == 48 and level_0["robot"]["episodes"] == 18
    assert level_0["overall"]["mirror_confused_episodes"] == 66
    level_0_records = [r for r in records if r["level"] == 0]
    for key, tracks in (
        ("human", {"Human"}),
        ("robot", {"Robot"}),
        ("overall", {"Human", "Robot"}),
    ):
        behaviours = [episode_behaviour(r) for r in level_0_records if r["track"] in tracks]
        confused = sum(b.confused_moves for b in behaviours)
        assert level_0[key]["confusion_rate"] == confused / sum(
            b.executed_moves for b in behaviours
        )
    assert tables["levels"]["1"]["overall"]["confusion_rate"] == 0.0
    assert tables["levels"]["2"] == {"human": None, "robot": None, "overall": None}
    # Levels 2 and 3 have no episode: the mean over the levels is undefined.
    assert tables["overall"] == {"human": None, "robot": None, "overall": None}


def test_the_overall_row_is_the_mean_of_the_level_cells():
    records = [
        record
        for level, make_agent in enumerate(
            (MirrorConfusedAgent, OracleAgent, MirrorConfusedAgent, lambda: RandomAgent(0))
        )
        for record in played(make_agent, level)
    ]
    tables: Any = behaviour_json(records)  # read as the JSON document it is
    for track in ("human", "robot", "overall"):
        cells = [tables["levels"][str(level)][track] for level in range(4)]
        overall = tables["overall"][track]
        for rate in ("confusion_rate", "bad_response_rate", "collision_rate"):
            assert overall[rate] == pytest.approx(sum(c[rate] for c in cells) / 4, abs=1e-15)
        assert overall["episodes"] == sum(c["episodes"] for c in cells)
        assert overall["mirror_confused_episodes"] == sum(
            c["mirror_confused_episodes"] for c in cells
        )


def test_errored_episodes_are_left_out():
    completed = played(OracleAgent)
    errored = [
        {**scripted([FORWARD], scene=scene, level=1), "status": "error", "metrics": None}
        for scene in SCENES[:3]
    ]
    assert behaviour_json(completed + errored) == behaviour_json(completed)
    assert behaviour_json(errored)["levels"]["1"]["overall"] is None


def test_it_rejects_an_episode_outside_the_protocol():
    record = {**scripted([FORWARD]), "level": 4}
    with pytest.raises(ValueError, match="not the protocol's"):
        behaviour_json([record])
