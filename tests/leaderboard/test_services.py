"""Writes: the paper's results, imported bundles, and scores computed by the metrics module."""

import json
import math

import pytest

from evaluation.bundle import episode_results, read_bundle
from evaluation.metrics import METRICS, TRACKS, score_json
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.boards.selectors import LeaderboardFilters, leaderboard_table, tracks_page
from leaderboard.models import Episode, ModelEntry, Run, RunScore, Step
from leaderboard.runs.imports import (
    REFERENCE_FIXTURE,
    BundleRejected,
    reference_results_load,
    run_import_bundle,
)
from tests.leaderboard.factories import board_run, import_run

pytestmark = pytest.mark.django_db
PAPER = json.loads(REFERENCE_FIXTURE.read_text())


def test_loading_the_reference_results_twice_changes_nothing():
    assert reference_results_load() == 20
    counts = (ModelEntry.objects.count(), Run.objects.count(), RunScore.objects.count())
    reference_results_load()
    assert (ModelEntry.objects.count(), Run.objects.count(), RunScore.objects.count()) == counts
    assert counts == (20, 20, 18 * 15 + 2 * 3)
    assert Run.objects.filter(listed=True, source="reported").count() == 20


def test_the_overall_table_shows_the_papers_table_ii_exactly_as_printed():
    reference_results_load()
    board = leaderboard_table(table="overall", filters=LeaderboardFilters())
    rows = {row["model"]: row for row in board.frame.to_dict("records")}
    for model in PAPER["models"]:
        for track in TRACKS:
            for metric in METRICS:
                assert rows[model["name"]][f"{track}_{metric}"] == model["overall"][track][metric]
    assert list(board.frame["model"][:3]) == ["Human", "Gemini-2.5-Pro-API", "Gemini-2.5-Flash-API"]


def test_the_level_tables_reproduce_table_ii_when_averaged():
    reference_results_load()
    levels = {
        table: {
            r["model"]: r
            for r in leaderboard_table(table=table, filters=LeaderboardFilters()).frame.to_dict(
                "records"
            )
        }
        for table in "0123"
    }
    overall = {
        r["model"]: r
        for r in leaderboard_table(table="overall", filters=LeaderboardFilters()).frame.to_dict(
            "records"
        )
    }
    assert len(levels["0"]) == 18  # Human and Random exist only in Table II
    for name in levels["0"]:
        for column in [f"{t}_{m}" for t in TRACKS for m in METRICS]:
            mean = sum(levels[t][name][column] for t in "0123") / 4
            assert math.isclose(mean, overall[name][column], abs_tol=0.001), (name, column)


def test_table_iii_is_reproduced_from_the_level_tables():
    reference_results_load()
    page = tracks_page(sources=("reported",))
    assert page.models == 18
    for level, cells in PAPER["tracks"].items():
        for track in TRACKS:
            assert math.isclose(page.table_iii[level][track], cells[track], abs_tol=0.001), (
                level,
                track,
            )


def test_an_imported_run_has_the_scores_of_the_metrics_module(bundles):
    run = import_run(bundles["random"], "Random here", kind="baseline")
    expected = score_json(episode_results(read_bundle(bundles["random"]).episodes))
    tables = {**expected["levels"], "overall": expected["overall"]}
    stored = {(s.table, s.track): s for s in run.scores.all()}
    assert len(stored) == 15
    for table, cells in tables.items():
        for track in TRACKS:
            for metric in METRICS:
                assert getattr(stored[(table, track)], metric) == cells[track][metric]
    overall = stored[("overall", "overall")]
    assert overall.episodes == 264 and stored[("0", "human")].episodes == 48
    low, high = overall.ci["avg"]
    assert low <= overall.avg <= high
    assert Episode.objects.filter(run=run).count() == 264
    assert Step.objects.filter(episode__run=run).count() == sum(
        len(e["steps"]) for e in read_bundle(bundles["random"]).episodes
    )


def test_the_leaderboard_row_of_an_evaluated_run_equals_the_metrics_module(bundles):
    reference_results_load()
    board_run(bundles["oracle"], "Oracle", kind="baseline")
    board = leaderboard_table(table="2", filters=LeaderboardFilters(baselines=True))
    row = board.frame[board.frame["model"] == "Oracle"].iloc[0]
    # A baseline is a reference row: first by its scores, but never ranked.
    assert row.name == 0 and row["rank"] is None
    assert all(row[f"{t}_{m}"] == 1.0 for t in TRACKS for m in METRICS)
    hidden = leaderboard_table(table="2", filters=LeaderboardFilters())
    assert "Oracle" not in set(hidden.frame["model"]) and hidden.hidden == 1


def test_a_new_run_replaces_the_older_one_of_its_model_and_source(bundles):
    first = board_run(bundles["random"], "Model X")
    second = board_run(bundles["oracle"], "Model X")
    first.refresh_from_db()
    assert not first.listed and second.listed
    board = leaderboard_table(table="overall", filters=LeaderboardFilters())
    assert list(board.frame["run_id"]) == [second.pk]


def test_a_tampered_bundle_is_refused_and_nothing_is_written(bundles, tmp_path):
    lines = bundles["random"].read_text().splitlines()
    episode = json.loads(lines[5])
    episode["success"] = True
    lines[5] = json.dumps(episode)
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    entry = model_entry_upsert(name="Cheater", kind="open-weights")
    with pytest.raises(BundleRejected, match="success=True"):
        run_import_bundle(model_entry=entry, bundle=read_bundle(tampered))
    assert Run.objects.filter(model_entry=entry).count() == 0
    assert Episode.objects.count() == 0


def test_model_entries_must_have_a_known_kind():
    with pytest.raises(ValueError, match="kind must be one of"):
        model_entry_upsert(name="X", kind="alien")


def test_the_mirror_confused_baseline_ranks_below_random(bundles):
    board_run(bundles["random"], "Random here", kind="baseline")
    board_run(bundles["mirror-confused"], "Mirror-confused", kind="baseline")
    # Mirror-confused is a sanity-check row, shown with the switch that shows the oracle.
    board = leaderboard_table(table="overall", filters=LeaderboardFilters(baselines=True))
    assert list(board.frame["model"]) == ["Random here", "Mirror-confused"]


def test_a_partial_run_is_stored_but_not_ranked(tmp_path):
    from tests.leaderboard.factories import make_bundle

    bundle = make_bundle(tmp_path / "human.jsonl", "oracle", scenes="human")
    run = board_run(bundle, "Human-only model")
    assert not run.listed and run.scores.filter(table="overall", track="human").exists()
    assert "Human-only model" not in set(
        leaderboard_table(table="overall", filters=LeaderboardFilters()).frame["model"]
    )
    assert tracks_page().gaps == []
