"""The mirror-use view: each model's main run against its control runs, on the page and in CSV."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from evaluation.bundle import read_bundle
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.mirror_use.selectors import mirror_use_rows
from leaderboard.models import ModelEntry, Run
from leaderboard.runs.imports import run_import_bundle
from tests.leaderboard.factories import make_bundle

pytestmark = pytest.mark.django_db

CONDITIONS = ("main", "no-mirror", "moved-mark")


@pytest.fixture(scope="module")
def chest_bundles(tmp_path_factory) -> dict[str, Path]:
    """The chest baseline on the 18 robot scenes under three conditions (no images: fast)."""
    folder = tmp_path_factory.mktemp("mirror-use")
    return {
        c: make_bundle(folder / f"{c}.jsonl", "chest", scenes="robot", condition=c)
        for c in CONDITIONS
    }


def _import(path: Path, name: str, kind: str = ModelEntry.Kind.OPEN_WEIGHTS) -> Run:
    entry = model_entry_upsert(name=name, kind=kind)
    return run_import_bundle(model_entry=entry, bundle=read_bundle(path)).run


@pytest.fixture
def chest_runs(chest_bundles) -> dict[str, Run]:
    return {c: _import(chest_bundles[c], "Chest habit") for c in CONDITIONS}


def _csv(client) -> list[dict[str, str]]:
    response = client.get("/mirror-use.csv")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="mirrorbench-mirror-use.csv"'
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_the_csv_says_a_fixed_habit_loses_everything_to_a_moved_mark(client, chest_runs):
    lines = {(line["table"], line["metric"]): line for line in _csv(client)}
    assert len(lines) == 5 * 2  # four levels and overall, AVG and TSR
    tsr = lines[("overall", "tsr")]
    assert (tsr["model"], tsr["scenes"], tsr["reference"]) == ("Chest habit", "18", "false")
    assert (tsr["main_score"], tsr["no-mirror_score"], tsr["moved-mark_score"]) == (
        "1.000",
        "1.000",
        "0.000",
    )
    assert (tsr["main_minus_moved-mark"], tsr["main_minus_moved-mark_low"]) == ("1.000", "1.000")
    assert (tsr["main_minus_no-mirror"], tsr["main_minus_no-mirror_high"]) == ("0.000", "0.000")
    assert tsr["mark-unseen_score"] == "" and tsr["main_minus_mark-unseen"] == ""


def test_the_page_shows_each_level_with_links_to_the_runs(client, chest_runs):
    page = client.get("/mirror-use/").content.decode()
    assert "Chest habit" in page and "18 scenes" in page
    for run in chest_runs.values():
        assert f'href="/runs/{run.pk}/"' in page
    assert "Main \u2212 moved mark" in page and "Overall" in page
    # What the main run wrote: the chest baseline's bare answers name no mirror.
    assert "What the main runs wrote" in page
    assert f'href="/runs/{chest_runs["main"].pk}/process.csv"' in page


def test_baselines_are_reference_rows_after_the_models(client, chest_bundles, chest_runs):
    for c in ("main", "moved-mark"):
        _import(chest_bundles[c], "Chest baseline", kind=ModelEntry.Kind.BASELINE)
    rows = mirror_use_rows()
    assert [(r.entry.name, r.reference) for r in rows] == [
        ("Chest habit", False),
        ("Chest baseline", True),
    ]
    assert 'class="reference"' in client.get("/mirror-use/").content.decode()


def test_private_control_runs_and_models_without_a_control_are_left_out(client, chest_bundles):
    _import(chest_bundles["main"], "Main only")
    hidden = _import(chest_bundles["moved-mark"], "Main only")
    Run.objects.filter(pk=hidden.pk).update(visibility=Run.Visibility.PRIVATE)
    assert mirror_use_rows() == []
    assert "No model has a main run and a control run yet" in (
        client.get("/mirror-use/").content.decode()
    )


def test_the_rows_take_a_query_and_one_per_run(chest_runs, django_assert_num_queries):
    with django_assert_num_queries(1 + 3 + 1):
        assert len(mirror_use_rows()) == 1
