import itertools
import json
import math

import numpy as np
import pytest

from evaluation.metrics import (
    LEVELS,
    METRICS,
    TRACKS,
    EpisodeResult,
    bootstrap_ci,
    cognitive_stability,
    cognitive_stability_ci,
    episode_score,
    level_table,
    level_tables,
    overall_table,
    score_json,
    track_table,
)

SUCCESS = (4, 3, 2, 1)
"""Straight to the goal: TSR 1, SIR 1, FCR 1, PCR 1."""
STILL = (3, 3, 3)
"""Two steps without progress: every metric 0."""


def episode(scene, level, distances, track="Human", status="completed"):
    return EpisodeResult(scene, track, level, tuple(distances), status)


def scores(distances, d_th=1):
    s = episode_score(distances, d_th)
    return (s.tsr, s.sir, s.fcr, s.pcr, s.avg)


def model_run(rng, n_human=48, n_robot=18):
    """A full run of random, protocol-like episodes: 4 levels per scene."""
    results = []
    for track, n in (("Human", n_human), ("Robot", n_robot)):
        for k in range(n):
            for level in LEVELS:
                results.append(episode(f"{track}-{k}", level, random_walk(rng), track))
    return results


def random_walk(rng):
    """A trajectory as the environment makes it: moves of -1, 0 or +1 step, ending on success
    or after d_0 + 10 steps."""
    d_0 = int(rng.randint(2, 13))
    distances = [d_0]
    while distances[-1] > 1 and len(distances) <= d_0 + 10:
        distances.append(distances[-1] + int(rng.choice([-1, 0, 1])))
    return distances


# Episode metrics


def test_a_direct_success_scores_one_on_every_metric():
    s = episode_score(SUCCESS)
    assert (s.tsr, s.sir, s.fcr, s.pcr, s.avg) == (1.0, 1.0, 1.0, 1.0, 1.0)
    assert (s.improving_steps, s.steps) == (3, 3)


def test_sir_counts_only_strict_decreases():
    # 3 -> 2 -> 3 -> 2 -> 3: two of four steps improve.
    assert scores([3, 2, 3, 2, 3]) == (0.0, 0.5, 0.0, 0.5, 0.25)


def test_moving_away_gives_a_negative_fcr():
    # FCR = 1 - (6 - 1) / (3 - 1) = -1.5; PCR = 1 - (3 - 1) / (3 - 1) = 0.
    assert scores([3, 4, 5, 6]) == (0.0, 0.0, -1.5, 0.0, -0.375)


def test_pcr_keeps_the_closest_approach_that_fcr_loses():
    # Reaches 2 after three improving steps, then drifts back out to 6.
    tsr, sir, fcr, pcr, avg = scores([5, 4, 3, 2, 3, 4, 5, 6])
    assert (tsr, fcr, pcr) == (0.0, -0.25, 0.75)
    assert sir == pytest.approx(3 / 7)
    assert avg == pytest.approx((3 / 7 - 0.25 + 0.75) / 4)


def test_bad_responses_repeat_the_distance_and_count_as_steps():
    s = episode_score([3, 3, 2, 2, 1])
    assert (s.tsr, s.sir, s.fcr, s.pcr, s.avg) == (1.0, 0.5, 1.0, 1.0, 0.875)
    assert (s.improving_steps, s.steps) == (2, 4)


def test_an_episode_without_steps_scores_zero():
    s = episode_score([5])
    assert (s.tsr, s.sir, s.fcr, s.pcr, s.avg) == (0.0, 0.0, 0.0, 0.0, 0.0)
    assert s.steps == 0


def test_the_threshold_is_a_parameter():
    # With d_th = 1: FCR = 1 - (2 - 1) / (4 - 1); with d_th = 2, ending at 2 succeeds.
    assert episode_score([4, 3, 2]).tsr == 0.0
    assert episode_score([4, 3, 2]).fcr == pytest.approx(2 / 3)
    assert scores([4, 3, 2], d_th=2) == (1.0, 1.0, 1.0, 1.0, 1.0)


@pytest.mark.parametrize("distances", [[1], [0], [1, 2, 3], []])
def test_it_rejects_a_trajectory_that_starts_within_the_threshold_or_is_empty(distances):
    with pytest.raises(ValueError):
        episode_score(distances)


@pytest.mark.parametrize("distances", [[3, -1], [3, 2.5], [3.5, 3]])
def test_it_rejects_negative_or_fractional_distances(distances):
    with pytest.raises(ValueError):
        episode_score(distances)


@pytest.mark.parametrize("seed", range(5))
def test_random_trajectories_stay_within_the_metric_bounds(seed):
    rng = np.random.RandomState(seed)
    for _ in range(50):
        distances = random_walk(rng)
        s = episode_score(distances)
        assert s.tsr in (0.0, 1.0)
        assert 0.0 <= s.sir <= 1.0
        assert s.fcr <= s.pcr <= 1.0
        assert s.pcr >= 0.0
        assert s.avg <= 1.0
        assert s.avg == pytest.approx((s.tsr + s.sir + s.fcr + s.pcr) / 4)
        assert s.steps == len(distances) - 1
        if s.tsr == 1.0:
            assert s.fcr == s.pcr == 1.0


def test_an_episode_result_keeps_its_trajectory_as_a_tuple():
    assert EpisodeResult("s", "Human", 0, [3, 2, 1]).distances == (3, 2, 1)


def test_an_episode_result_checks_its_track_and_level():
    with pytest.raises(ValueError):
        EpisodeResult("s", "human", 0, SUCCESS)
    with pytest.raises(ValueError):
        EpisodeResult("s", "Human", 4, SUCCESS)


# Level tables


def test_sir_is_pooled_over_steps_while_the_others_are_episode_means():
    table = level_table([episode("a", 0, [3, 2, 1]), episode("b", 0, [3, 3, 3, 3, 3, 3])], 0)
    human = table["human"]
    # 2 improving steps out of 2 + 5; the mean of the episodes' SIRs would be 0.5.
    assert human["sir"] == pytest.approx(2 / 7)
    assert (human["tsr"], human["fcr"], human["pcr"]) == (0.5, 0.5, 0.5)
    assert human["avg"] == pytest.approx((0.5 + 2 / 7 + 0.5 + 0.5) / 4)


def test_the_overall_column_pools_both_tracks_rather_than_averaging_them():
    results = [episode(f"h{k}", 0, [3, 2, 1]) for k in range(3)]
    results.append(episode("r", 0, [3, 4, 5, 6, 7], track="Robot"))
    table = level_table(results, 0)
    assert table["human"] == {"tsr": 1.0, "sir": 1.0, "fcr": 1.0, "pcr": 1.0, "avg": 1.0}
    assert table["robot"] == {"tsr": 0.0, "sir": 0.0, "fcr": -2.0, "pcr": 0.0, "avg": -0.5}
    overall = table["overall"]
    # Episode means over the four episodes; the mean of the columns would be 0.5 and -0.5.
    assert overall["tsr"] == 0.75
    assert overall["fcr"] == 0.25
    assert overall["pcr"] == 0.75
    # 6 improving steps out of 2 + 2 + 2 + 4; the mean of episode SIRs would be 0.75.
    assert overall["sir"] == 0.6
    assert overall["avg"] == pytest.approx((0.75 + 0.6 + 0.25 + 0.75) / 4)


def test_a_level_table_only_counts_its_level():
    results = [episode("a", 0, SUCCESS), episode("a", 1, STILL)]
    assert level_table(results, 0)["human"]["tsr"] == 1.0
    assert level_table(results, 1)["human"]["tsr"] == 0.0


def test_a_track_without_episodes_is_none():
    table = level_table([episode("a", 2, SUCCESS)], 2)
    assert table["robot"] is None
    assert table["overall"] == table["human"]
    assert level_table([], 2) == {"human": None, "robot": None, "overall": None}


def test_level_tables_has_every_level_keyed_as_a_string():
    tables = level_tables([episode("a", 3, SUCCESS)])
    assert list(tables) == ["0", "1", "2", "3"]
    assert tables["0"]["overall"] is None
    assert tables["3"]["overall"]["tsr"] == 1.0


def test_it_rejects_a_level_outside_the_protocol():
    with pytest.raises(ValueError):
        level_table([], 4)


# Errors and duplicates


def test_errored_episodes_are_left_out_of_every_aggregate():
    completed = [
        episode("a", level, trajectory)
        for level, trajectory in enumerate([SUCCESS, [3, 2, 2], STILL, [3, 4, 5]])
    ]
    errored = [
        episode("a", 0, [5, 6, 7], status="error"),
        episode("b", 1, [], status="error"),
        episode("r", 2, [3, 4], track="Robot", status="error"),
    ]
    assert score_json(completed + errored) == score_json(completed)
    assert cognitive_stability(completed + errored) == cognitive_stability(completed)
    assert bootstrap_ci(completed + errored, n_resamples=50) == bootstrap_ci(
        completed, n_resamples=50
    )
    assert score_json(completed + errored)["levels"]["2"]["robot"] is None


def test_an_episode_rerun_after_an_error_counts_once():
    results = [episode("a", 0, [3, 4], status="error"), episode("a", 0, SUCCESS)]
    assert level_table(results, 0)["human"]["tsr"] == 1.0


def test_it_rejects_two_completed_episodes_of_one_scene_and_level():
    with pytest.raises(ValueError, match="two completed episodes"):
        score_json([episode("a", 0, SUCCESS), episode("a", 0, STILL)])


def test_it_rejects_a_scene_under_both_tracks():
    with pytest.raises(ValueError, match="both tracks"):
        score_json([episode("a", 0, SUCCESS), episode("a", 1, SUCCESS, track="Robot")])


# Table II


def test_the_overall_table_is_the_mean_of_the_level_tables_cell_by_cell():
    results = model_run(np.random.RandomState(1), n_human=5, n_robot=3)
    levels = level_tables(results)
    overall = overall_table(levels)
    for track in TRACKS:
        for metric in METRICS:
            expected = sum(levels[str(level)][track][metric] for level in LEVELS) / 4
            assert overall[track][metric] == pytest.approx(expected, abs=1e-15)
    assert score_json(results) == {"levels": levels, "overall": overall}


def test_the_overall_table_is_none_for_a_track_missing_at_some_level():
    results = [episode("a", level, SUCCESS) for level in LEVELS]
    results += [episode("r", level, SUCCESS, track="Robot") for level in (0, 1, 2)]
    overall = score_json(results)["overall"]
    assert overall["robot"] is None
    assert overall["human"]["tsr"] == 1.0
    assert overall["overall"] is not None


def test_the_overall_table_needs_a_level_table():
    with pytest.raises(ValueError):
        overall_table({})


def row(*values):
    """A level table from the 15 numbers of a paper row (Human, Robot, Overall)."""
    return {
        track: dict(zip(METRICS, values[5 * i : 5 * i + 5], strict=True))
        for i, track in enumerate(TRACKS)
    }


# Gemini-2.5-Pro-API in the paper: Tables IV-VII (levels 0-3) and its Table II row.
GEMINI_PRO_LEVELS = {
    "0": row(*[0.458, 0.705, 0.844, 0.916, 0.731, 0.611, 0.578, 0.546, 0.778, 0.628],
             *[0.500, 0.679, 0.763, 0.878, 0.705]),
    "1": row(*[0.104, 0.646, 0.609, 0.722, 0.520, 0.056, 0.533, 0.185, 0.478, 0.313],
             *[0.091, 0.621, 0.494, 0.655, 0.465]),
    "2": row(*[0.000, 0.522, 0.094, 0.489, 0.276, 0.000, 0.482, -0.081, 0.393, 0.198],
             *[0.000, 0.513, 0.046, 0.463, 0.256]),
    "3": row(*[0.000, 0.571, 0.302, 0.540, 0.353, 0.111, 0.519, 0.122, 0.485, 0.309],
             *[0.030, 0.560, 0.253, 0.525, 0.342]),
}  # fmt: skip
GEMINI_PRO_TABLE_II = row(
    *[0.141, 0.611, 0.463, 0.667, 0.470, 0.194, 0.528, 0.193, 0.533, 0.362],
    *[0.155, 0.593, 0.389, 0.630, 0.442],
)


def test_the_overall_table_reproduces_a_paper_row_of_table_ii():
    overall = overall_table(GEMINI_PRO_LEVELS)
    for track in TRACKS:
        for metric in METRICS:
            assert overall[track][metric] == pytest.approx(
                GEMINI_PRO_TABLE_II[track][metric], abs=0.001
            )


def test_score_json_is_plain_json():
    document = score_json(model_run(np.random.RandomState(2), n_human=2, n_robot=0))
    assert json.loads(json.dumps(document)) == document
    assert set(document) == {"levels", "overall"}
    assert document["overall"]["robot"] is None
    assert set(document["levels"]["0"]["human"]) == set(METRICS)


# Table III


def avg_table(human, robot, overall):
    """A level table with only AVG cells; a value of None stands for a track without episodes."""
    cells = zip(TRACKS, (human, robot, overall), strict=True)
    return {t: None if v is None else {"avg": v} for t, v in cells}


def test_the_track_table_averages_the_avg_cells_over_models():
    models = {
        "a": {str(level): avg_table(0.1 * level, -0.2, 0.4) for level in LEVELS},
        "b": {str(level): avg_table(0.3, 0.2 * level, -0.4) for level in LEVELS},
    }
    table = track_table(models)
    assert list(table) == ["0", "1", "2", "3", "avg"]
    assert table["0"] == pytest.approx({"human": 0.15, "robot": -0.1, "overall": 0.0})
    assert table["3"] == pytest.approx({"human": 0.3, "robot": 0.2, "overall": 0.0})
    # Level means of the human column: 0.15, 0.2, 0.25, 0.3.
    assert table["avg"] == pytest.approx({"human": 0.225, "robot": 0.05, "overall": 0.0})


def test_the_track_tables_avg_row_is_the_mean_of_the_models_table_ii_avg():
    rng = np.random.RandomState(3)
    runs = {name: score_json(model_run(rng, n_human=4, n_robot=2)) for name in "abc"}
    table = track_table({name: run["levels"] for name, run in runs.items()})
    for track in TRACKS:
        expected = sum(run["overall"][track]["avg"] for run in runs.values()) / 3
        assert table["avg"][track] == pytest.approx(expected, abs=1e-15)


def test_a_track_table_cell_is_none_when_a_model_lacks_it():
    models = {
        "a": {str(level): avg_table(0.1, 0.2, 0.3) for level in LEVELS},
        "b": {str(level): avg_table(0.1, None, 0.3) for level in LEVELS},
        "c": {str(level): avg_table(0.1, 0.2, 0.3) for level in (0, 1, 2)},
    }
    table = track_table(models)
    assert table["0"]["robot"] is None
    assert table["0"]["human"] == pytest.approx(0.1)
    assert table["3"]["human"] is None
    assert table["avg"]["human"] is None
    with pytest.raises(ValueError):
        track_table({})


# Cognitive stability

# Per-episode AVG of these trajectories: 1, 0.375, 0, -0.25.
AVG_1, AVG_0375, AVG_0, AVG_MINUS_025 = SUCCESS, (3, 2, 2), STILL, (3, 4, 5)


def scene_levels(scene, trajectories, track="Human"):
    return [episode(scene, level, t, track) for level, t in enumerate(trajectories)]


def test_the_avg_of_the_stability_trajectories_is_as_labelled():
    assert [episode_score(t).avg for t in (AVG_1, AVG_0375, AVG_0, AVG_MINUS_025)] == [
        1.0,
        0.375,
        0.0,
        -0.25,
    ]


def test_cognitive_stability_is_three_when_every_scene_declines_at_every_level():
    results = scene_levels("a", [AVG_1, AVG_0375, AVG_0, AVG_MINUS_025])
    results += scene_levels("r", [AVG_0375, AVG_0, AVG_MINUS_025, (3, 4, 5, 6)], track="Robot")
    assert cognitive_stability(results) == 3.0


def test_cognitive_stability_sums_signs_per_scene_and_averages_over_scenes():
    # Scene a: 0 -> 1 -> 1 -> 0.375 gives -1 + 0 + 1 = 0.
    # Scene b: -0.25 -> 0 -> 0.375 -> 1 gives -3.
    results = scene_levels("a", [AVG_0, AVG_1, AVG_1, AVG_0375])
    results += scene_levels("b", [AVG_MINUS_025, AVG_0, AVG_0375, AVG_1])
    assert cognitive_stability(results) == -1.5


def test_cognitive_stability_leaves_out_scenes_without_all_four_levels():
    results = scene_levels("a", [AVG_1, AVG_0375, AVG_0, AVG_MINUS_025])
    results += scene_levels("b", [AVG_MINUS_025, AVG_0, AVG_0375])
    results += [episode("b", 3, AVG_1, status="error")]
    assert cognitive_stability(results) == 3.0
    assert cognitive_stability(results[4:]) is None


def test_cognitive_stability_compares_scores_exactly():
    # Both AVGs are exactly -3/40, but summing their float metrics rounds them apart.
    first, second = (3, 3, 3, 4, 3, 4), (3, 2, 2, 3, 4, 5)
    assert cognitive_stability(scene_levels("a", [first, second, first, second])) == 0.0


def test_cognitive_stability_of_a_hand_computed_example_follows_appendix_a_a():
    # Scene a: 1 -> 0.375 -> 0.375 -> 0 gives +1 + 0 + 1 = 2.
    # Scene b: 0 -> 0.375 -> -0.25 -> 1 gives -1 + 1 - 1 = -1.
    # Scene r: 0.375 -> 0 -> -0.25 -> -0.25 gives +1 + 1 + 0 = 2.
    # CS = (2 - 1 + 2) / 3 = 1.
    results = scene_levels("a", [AVG_1, AVG_0375, AVG_0375, AVG_0])
    results += scene_levels("b", [AVG_0, AVG_0375, AVG_MINUS_025, AVG_1])
    results += scene_levels("r", [AVG_0375, AVG_0, AVG_MINUS_025, AVG_MINUS_025], track="Robot")
    assert cognitive_stability(results) == 1.0


# Cognitive stability: bootstrap interval


def test_the_stability_interval_holds_the_point_estimate_and_is_seeded():
    results = model_run(np.random.RandomState(3))
    point = cognitive_stability(results)
    low, high = cognitive_stability_ci(results, n_resamples=500, seed=1)
    assert low <= point <= high
    assert low < high
    assert cognitive_stability_ci(results, n_resamples=500, seed=1) == (low, high)
    assert cognitive_stability_ci(results, n_resamples=500, seed=2) != (low, high)
    assert low >= -3 and high <= 3


def test_the_stability_interval_resamples_scenes_within_their_track():
    # Every Human scene declines at every level (3), every Robot scene rises (-3): drawn within
    # their tracks, two Human scenes and one Robot scene always give (3 + 3 - 3) / 3 = 1.
    results = scene_levels("a", [AVG_1, AVG_0375, AVG_0, AVG_MINUS_025])
    results += scene_levels("b", [AVG_1, AVG_0375, AVG_0, AVG_MINUS_025])
    results += scene_levels("r", [AVG_MINUS_025, AVG_0, AVG_0375, AVG_1], track="Robot")
    assert cognitive_stability(results) == 1.0
    assert cognitive_stability_ci(results, n_resamples=200) == (1.0, 1.0)


def test_the_stability_interval_narrows_with_lower_confidence():
    results = model_run(np.random.RandomState(5))
    wide = cognitive_stability_ci(results, n_resamples=400, confidence=0.95)
    narrow = cognitive_stability_ci(results, n_resamples=400, confidence=0.5)
    assert wide[0] <= narrow[0] <= narrow[1] <= wide[1]


def test_the_stability_interval_is_none_without_a_scene_at_every_level():
    results = scene_levels("a", [AVG_1, AVG_0375, AVG_0])
    assert cognitive_stability_ci(results) is None
    assert cognitive_stability_ci([]) is None


@pytest.mark.parametrize(("n_resamples", "confidence"), [(0, 0.95), (10, 0.0), (10, 1.0)])
def test_the_stability_interval_refuses_bad_arguments(n_resamples, confidence):
    results = scene_levels("a", [AVG_1, AVG_0375, AVG_0, AVG_MINUS_025])
    with pytest.raises(ValueError):
        cognitive_stability_ci(results, n_resamples=n_resamples, confidence=confidence)


# Bootstrap confidence intervals


def each_cell(document):
    for level in document["levels"]:
        for track in TRACKS:
            for metric in METRICS:
                yield ("levels", level, track, metric)
    for track in TRACKS:
        for metric in METRICS:
            yield ("overall", None, track, metric)


def cell(document, key):
    part, level, track, metric = key
    table = document["levels"][level] if part == "levels" else document["overall"]
    return table[track][metric]


def test_the_bootstrap_interval_contains_the_point_estimate():
    results = model_run(np.random.RandomState(4))
    point, ci = score_json(results), bootstrap_ci(results)
    for key in each_cell(point):
        low, high = cell(ci, key)
        assert low - 1e-12 <= cell(point, key) <= high + 1e-12, key
        assert low <= high


def test_the_bootstrap_is_deterministic_for_a_seed():
    results = model_run(np.random.RandomState(5), n_human=10, n_robot=5)
    assert bootstrap_ci(results, seed=7) == bootstrap_ci(results, seed=7)
    assert bootstrap_ci(results, seed=7) == bootstrap_ci(results[::-1], seed=7)
    assert bootstrap_ci(results, seed=7) != bootstrap_ci(results, seed=8)


def test_the_bootstrap_collapses_to_a_point_when_all_scenes_are_identical():
    trajectories = [SUCCESS, (5, 4, 5, 4, 3), STILL, (3, 4, 5)]
    results = [
        episode(f"{track}-{k}", level, t, track)
        for track, n in (("Human", 6), ("Robot", 3))
        for k in range(n)
        for level, t in enumerate(trajectories)
    ]
    point, ci = score_json(results), bootstrap_ci(results, n_resamples=200)
    for key in each_cell(point):
        low, high = cell(ci, key)
        assert low == pytest.approx(cell(point, key), abs=1e-12)
        assert high == pytest.approx(cell(point, key), abs=1e-12)


def test_the_bootstrap_scores_a_resample_as_score_json_does():
    # One scene per track: every resample is the data itself, so each interval is the point
    # estimate, pooled Overall column included.
    results = scene_levels("h", [SUCCESS, (5, 4, 5, 4, 3), (3, 2, 3, 2, 3), (3, 4, 5)])
    results += scene_levels("r", [(3, 4, 5, 6, 7), STILL, SUCCESS, (3, 3, 2, 1)], "Robot")
    point, ci = score_json(results), bootstrap_ci(results, n_resamples=20)
    assert point["levels"]["0"]["overall"]["sir"] != pytest.approx(
        (point["levels"]["0"]["human"]["sir"] + point["levels"]["0"]["robot"]["sir"]) / 2
    )
    for key in each_cell(point):
        assert cell(ci, key) == pytest.approx((cell(point, key),) * 2, abs=1e-12), key


def test_the_bootstrap_resamples_whole_scenes_keeping_levels_paired():
    # Level 1 repeats level 0 in every scene, so every resample has equal level 0 and 1
    # cells; resampling episodes independently per level would not.
    rng = np.random.RandomState(6)
    results = []
    for k in range(20):
        trajectory = random_walk(rng)
        results += [episode(f"s{k}", level, trajectory) for level in (0, 1)]
    ci = bootstrap_ci(results, n_resamples=100)
    assert ci["levels"]["0"] == ci["levels"]["1"]
    assert ci["levels"]["0"]["human"]["avg"][0] < ci["levels"]["0"]["human"]["avg"][1]


def test_the_bootstrap_has_none_where_score_json_has_none():
    results = [episode("a", level, SUCCESS) for level in (0, 1)]
    ci = bootstrap_ci(results, n_resamples=10)
    assert ci["levels"]["0"]["robot"] is None
    assert ci["levels"]["2"] == {"human": None, "robot": None, "overall": None}
    assert ci["overall"] == {"human": None, "robot": None, "overall": None}


def test_a_wider_confidence_gives_a_wider_interval():
    results = model_run(np.random.RandomState(8), n_human=12, n_robot=6)
    narrow = bootstrap_ci(results, confidence=0.5)["overall"]["overall"]["avg"]
    wide = bootstrap_ci(results, confidence=0.99)["overall"]["overall"]["avg"]
    assert wide[0] < narrow[0] < narrow[1] < wide[1]
    assert all(math.isfinite(v) for v in wide)


@pytest.mark.parametrize("kwargs", [{"n_resamples": 0}, {"confidence": 0.0}, {"confidence": 1.0}])
def test_the_bootstrap_rejects_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        bootstrap_ci([episode("a", 0, SUCCESS)], **kwargs)


# Exact arithmetic without Fractions


def _fraction_score(distances, d_th=1):
    """The paper's Table I in exact fractions, rounded once: what episode_score must give."""
    from fractions import Fraction

    d = [int(x) for x in distances]
    span, steps = d[0] - d_th, len(d) - 1
    improving = sum(b < a for a, b in itertools.pairwise(d))
    tsr = Fraction(int(d[-1] <= d_th))
    sir = Fraction(improving, steps) if steps else Fraction(0)
    fcr = 1 - Fraction(d[-1] - d_th, span)
    pcr = 1 - Fraction(min(d) - d_th, span)
    avg = (tsr + sir + fcr + pcr) / 4
    return tuple(float(x) for x in (tsr, sir, fcr, pcr, avg)), avg


def _trajectories(seed, count):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        start = int(rng.integers(2, 40))
        walk = [start]
        for _ in range(int(rng.integers(0, 30))):
            walk.append(max(0, walk[-1] + int(rng.integers(-2, 3))))
        yield tuple(walk)
    yield from [(2,), (3, 3, 3), (40, 0), (10**12, 5, 10**12 + 7), (7, 9, 1, 1, 30)]


@pytest.mark.parametrize("d_th", [0, 1, 3])
def test_every_metric_is_the_exact_fraction_rounded_once(d_th):
    for distances in _trajectories(seed=d_th, count=3000):
        if distances[0] <= d_th:
            continue
        expected, _ = _fraction_score(distances, d_th)
        assert scores(distances, d_th) == expected, distances
        assert scores(list(np.array(distances)), d_th) == expected  # numpy integers too


def test_cognitive_stability_signs_are_those_of_the_exact_fractions():
    from fractions import Fraction

    trajectories = [t for t in _trajectories(seed=7, count=800) if t[0] > 1]
    rng = np.random.default_rng(8)
    results, expected = [], []
    for s in range(150):
        picked = [trajectories[int(i)] for i in rng.integers(0, len(trajectories), size=4)]
        if s % 5 == 0:  # ties across levels: the same AVG by other trajectories
            picked[1] = picked[0]
        results += scene_levels(f"s{s}", picked)
        avgs = [_fraction_score(t)[1] for t in picked]
        expected.append(sum((a > b) - (a < b) for a, b in itertools.pairwise(avgs)))
    assert cognitive_stability(results) == float(sum(Fraction(e) for e in expected) / 150)
