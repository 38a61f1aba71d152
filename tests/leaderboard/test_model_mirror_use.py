"""A model's page sets its control runs beside its main run and says what its answers say
(issue 36): the mirror-use contrasts with their intervals, the process metrics per level and
track with links to their method, and no control run among the main run sections."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evaluation.bundle import read_bundle
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.boards.selectors import model_entry_detail
from leaderboard.mirror_use.selectors import mirror_use_rows, model_mirror_use
from leaderboard.models import Episode, ModelEntry, Run, Step
from leaderboard.runs.imports import run_import_bundle
from tests.leaderboard.factories import make_bundle

pytestmark = pytest.mark.django_db

CONDITIONS = ("main", "no-mirror", "moved-mark")
MIRROR_ANSWER = (
    "I see my reflection in the mirror; the mark is ahead, so I move forward.\nChoice: 5"
)


@pytest.fixture(scope="module")
def chest_bundles(tmp_path_factory) -> dict[str, Path]:
    """The chest baseline on the 18 robot scenes under three conditions (no images: fast)."""
    folder = tmp_path_factory.mktemp("model-mirror-use")
    return {
        c: make_bundle(folder / f"{c}.jsonl", "chest", scenes="robot", condition=c)
        for c in CONDITIONS
    }


def _import(path: Path, name: str = "Chest habit") -> Run:
    entry = model_entry_upsert(name=name, kind=ModelEntry.Kind.OPEN_WEIGHTS)
    return run_import_bundle(model_entry=entry, bundle=read_bundle(path)).run


@pytest.fixture
def chest_runs(chest_bundles) -> dict[str, Run]:
    return {c: _import(chest_bundles[c]) for c in CONDITIONS}


def _page(client, slug: str = "chest-habit") -> str:
    response = client.get(f"/models/{slug}/")
    assert response.status_code == 200
    return response.content.decode()


def _cells(page: str, caption: str) -> dict[str, list[str]]:
    """The rows of the table with ``caption`` (its start): row header to its cells' text."""
    table = page[page.index(f"<caption>{caption}") :]
    table = table[: table.index("</table>")]
    rows = {}
    for row in re.findall(r"<tr[^>]*><th scope=\"row\">(.*?)</tr>", table, re.S):
        head, _, rest = row.partition("</th>")
        cells = re.findall(r"<td[^>]*>(.*?)</td>", rest, re.S)
        rows[head] = [re.sub(r"<[^>]+>", " ", c).split()[0] if c.strip() else "" for c in cells]
    return rows


def test_the_page_sets_the_control_runs_beside_the_main_run(client, chest_runs):
    page = _page(client)
    # One main run section; the control runs are listed in the mirror-use section instead.
    assert page.count('<section class="run">') == 1
    assert "Mirror use: control runs" in page
    for condition in ("no-mirror", "moved-mark"):
        run = chest_runs[condition]
        assert f'<a href="/runs/{run.pk}/">Run {run.pk}</a>' in page
    avg = _cells(page, "AVG under each condition")
    tsr = _cells(page, "TSR under each condition")
    assert list(tsr) == ["L0", "L1", "L2", "L3", "Overall"]
    # Main, no mirror, mark unseen (none), moved mark; then main minus each control.
    assert tsr["Overall"] == ["1.000", "1.000", "—", "0.000", "0.000", "—", "1.000"]
    # The chest habit needs no mirror: its AVG without one is its main AVG.
    assert avg["Overall"][0] == avg["Overall"][1] and avg["Overall"][4] == "0.000"
    # The moved mark's difference carries its bootstrap interval, as /mirror-use/ gives it.
    use = mirror_use_rows()[0].use["tables"]["overall"]["tsr"]["differences"]["moved-mark"]
    assert use["ci"] == [1.0, 1.0]
    assert "[1.000, 1.000]" in page
    assert "main minus each control with its 95% interval (18 scenes)" in page


def test_the_process_metrics_show_per_level_and_track_with_their_method(client, chest_runs):
    main = chest_runs["main"]
    # Every level 2 answer of the main run names the mirror as its own and moves as it says.
    Step.objects.filter(episode__run=main, episode__level=2).update(
        response=MIRROR_ANSWER, option=5
    )
    page = _page(client)
    assert 'href="/about/#mirror-attribution"' in page and 'href="/about/#consistency"' in page
    assert f'href="/runs/{main.pk}/process.csv"' in page
    rows = _cells(page, f"Main run {main.pk}")
    assert list(rows) == ["L0", "L1", "L2", "L3", "L2+L3", "Overall"]
    # Names the mirror (all, human, robot), calls it its own, consistent: robot scenes only.
    assert rows["L2"] == ["100%", "—", "100%", "100%", "—", "100%", "100%", "—", "100%"]
    assert rows["L3"][:3] == ["0%", "—", "0%"]
    assert rows["L2+L3"][:3] == ["50%", "—", "50%"]
    # The prompts of levels 0 and 1 mention the mirror: no attribution there.
    assert rows["L0"][:6] == ["—"] * 6
    # Each control run has its own table.
    for condition in ("no-mirror", "moved-mark"):
        assert f"run {chest_runs[condition].pk} (<a" in page
    # The about page holds the method the links name.
    about = client.get("/about/").content.decode()
    assert 'id="mirror-attribution"' in about and 'id="consistency"' in about


def test_control_runs_stay_out_of_the_models_run_sections_and_boards(client, chest_bundles):
    _import(chest_bundles["moved-mark"], "Control only")
    page = _page(client, "control-only")
    assert '<section class="run">' not in page
    assert "Mirror use: control runs" in page
    assert "No completed public main run and control run" in page
    assert "Control only" not in client.get("/").content.decode()


def test_a_model_without_control_runs_shows_its_answers_but_no_mirror_use(client, chest_bundles):
    main = _import(chest_bundles["main"], "Main only")
    page = _page(client, "main-only")
    assert "Mirror use: control runs" not in page
    assert f"Main run {main.pk}" in page


def test_unfinished_and_private_control_runs_are_not_counted(chest_runs):
    pending = chest_runs["no-mirror"]
    Run.objects.filter(pk=pending.pk).update(status=Run.Status.RUNNING)
    Run.objects.filter(pk=chest_runs["moved-mark"].pk).update(visibility=Run.Visibility.PRIVATE)
    entry = model_entry_detail(slug="chest-habit")
    shown = model_mirror_use(runs=entry.runs.all())
    assert [r.pk for r in shown.controls] == [pending.pk]
    assert list(shown.runs) == ["main"] and shown.use is None and shown.tables == []


def test_the_page_takes_two_queries_for_each_counted_run(
    client, chest_runs, django_assert_num_queries
):
    assert Episode.objects.filter(run=chest_runs["main"]).exists()
    # The entry, its runs, their scores, the price table; then each of the three counted runs'
    # episodes (the contrasts) and answers (the process metrics).
    with django_assert_num_queries(4 + 3 * 2):
        client.get("/models/chest-habit/")
