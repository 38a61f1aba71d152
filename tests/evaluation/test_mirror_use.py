"""Main against control runs: scores, differences and paired intervals (evaluation.mirror_use)."""

from __future__ import annotations

import pytest

from evaluation.agents import ChestAgent, OracleAgent, RandomAgent
from evaluation.metrics import EpisodeResult, score_json
from evaluation.mirror_use import mirror_use
from evaluation.runner import run_episode
from evaluation.vocabulary import LEVELS
from simulation.catalogue import scene_set

SCENES = 8


def _results(agent_type, condition: str, scenes: int = SCENES) -> list[EpisodeResult]:
    results = []
    for scene in list(scene_set(condition).values())[:scenes]:
        for level in LEVELS:
            record = run_episode(scene, level, agent_type())
            results.append(EpisodeResult(scene.id, scene.track, level, record["distances"]))
    return results


@pytest.fixture(scope="module")
def chest():
    return {c: _results(ChestAgent, c) for c in ("main", "no-mirror", "moved-mark")}


def test_going_to_the_chest_loses_everything_to_a_moved_mark_and_nothing_to_no_mirror(chest):
    use = mirror_use(chest, n_resamples=200)
    assert use["scenes"] == SCENES
    assert use["conditions"] == ["main", "moved-mark", "no-mirror"]
    for table in ("0", "3", "overall"):
        tsr = use["tables"][table]["tsr"]
        assert tsr["scores"] == {"main": 1.0, "moved-mark": 0.0, "no-mirror": 1.0}
        assert tsr["differences"]["moved-mark"] == {"value": 1.0, "ci": [1.0, 1.0]}
        assert tsr["differences"]["no-mirror"] == {"value": 0.0, "ci": [0.0, 0.0]}


def test_scores_are_the_runs_own_tables_on_the_shared_scenes(chest):
    use = mirror_use(chest, n_resamples=50)
    for condition, results in chest.items():
        table = score_json(results)
        level2, overall = table["levels"]["2"]["overall"], table["overall"]["overall"]
        assert level2 is not None and overall is not None
        assert use["tables"]["2"]["avg"]["scores"][condition] == pytest.approx(level2["avg"])
        assert use["tables"]["overall"]["avg"]["scores"][condition] == pytest.approx(overall["avg"])


def test_the_interval_is_paired_holds_the_difference_and_is_seeded():
    runs = {"main": _results(RandomAgent, "main"), "no-mirror": _results(OracleAgent, "no-mirror")}
    first = mirror_use(runs, n_resamples=300, seed=3)
    assert first == mirror_use(runs, n_resamples=300, seed=3)
    diff = first["tables"]["overall"]["avg"]["differences"]["no-mirror"]
    low, high = diff["ci"]
    assert diff["value"] < 0 and low <= diff["value"] <= high


def test_only_scenes_every_run_played_count():
    runs = {
        "main": _results(ChestAgent, "main"),
        "moved-mark": _results(ChestAgent, "moved-mark", 3),
    }
    assert mirror_use(runs, n_resamples=10)["scenes"] == 3


def test_it_needs_the_main_run(chest):
    with pytest.raises(ValueError, match="main"):
        mirror_use({"no-mirror": chest["no-mirror"]})
