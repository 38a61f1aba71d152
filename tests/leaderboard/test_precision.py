"""One precision for every number the site publishes: 3 decimals in the API and the CSVs alike
(docs/leaderboard.md, Precision)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import pytest

from leaderboard.exports import DECIMALS, csv_cell
from leaderboard.models import Episode, ModelEntry
from leaderboard.renderers import published
from leaderboard.runs.imports import reference_results_load
from tests.leaderboard.factories import import_run

pytestmark = pytest.mark.django_db


def floats(data: Any, path: str = "") -> Iterator[tuple[str, float]]:
    """Every float in a JSON document, with where it is."""
    if isinstance(data, float):
        yield path, data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from floats(value, f"{path}.{key}")
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from floats(value, f"{path}[{index}]")


def too_precise(data: Any) -> list[tuple[str, float]]:
    return [(where, x) for where, x in floats(data) if round(x, DECIMALS) != x]


@pytest.fixture
def board(bundles):
    """The paper's rows and a random run evaluated here (scores of full float precision)."""
    reference_results_load()
    run = import_run(bundles["random"], "Random", kind=ModelEntry.Kind.BASELINE)
    return {"run": run, "episode": Episode.objects.filter(run=run).order_by("pk").first()}


def test_every_float_the_api_sends_has_three_decimals(client, board):
    run, episode = board["run"], board["episode"]
    urls = [
        "/api/models/random/",
        "/api/leaderboards/overall/?baselines=show",
        "/api/leaderboards/2/?baselines=show",
        "/api/tracks/",
        "/api/runs/",
        f"/api/runs/{run.pk}/",
        f"/api/episodes/?run={run.pk}",
        f"/api/episodes/{episode.pk}/",
        "/api/charts/stability/",
        "/api/charts/tracks/",
        "/api/charts/radar/?m=random&m=human",
    ]
    seen = 0
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.json()
        assert too_precise(body) == [], url
        seen += sum(1 for _ in floats(body))
    assert seen > 1000  # the runs' scores and intervals, the episodes', the charts'
    # The browsable API shows the same numbers.
    stored = run.scores.get(table="overall", track="overall").avg
    page = client.get(f"/api/runs/{run.pk}/", HTTP_ACCEPT="text/html").content.decode()
    assert repr(stored) not in page and f"avg&quot;: {published(stored)}," in page


def test_the_api_and_the_csv_publish_the_same_numbers(client, board):
    stored = board["run"].scores.get(table="overall", track="overall").avg
    assert round(stored, DECIMALS) != stored  # a score computed here: a float's every digit
    rows = client.get("/api/leaderboards/overall/?baselines=show&q=random").json()["results"]
    api = {r["source"]: r["scores"]["overall"]["avg"] for r in rows}
    lines = client.get("/leaderboard/overall.csv?baselines=show&q=random").content.decode()
    table = list(csv.DictReader(io.StringIO(lines)))
    cells = {r["source"]: r["overall_avg"] for r in table}
    assert api["evaluated"] == published(stored) == float(cells["evaluated"])
    assert cells["evaluated"] == f"{api['evaluated']:.3f}"
    # The paper's row: its three decimals, unchanged.
    assert api["reported"] == float(cells["reported"]) == 0.172


@pytest.mark.parametrize(
    ("value", "api", "cell"),
    [
        (0.15199877330212697, 0.152, "0.152"),
        (-0.12723063973063972, -0.127, "-0.127"),
        (-0.0004, 0.0, "0.000"),  # no negative zero
        (0.0005, 0.001, "0.001"),
        (7.0, 7.0, "7.000"),
    ],
)
def test_a_number_rounds_alike_in_the_api_and_the_csv(value, api, cell):
    assert published({"x": [value]}) == {"x": [api]}
    assert csv_cell(value) == cell
