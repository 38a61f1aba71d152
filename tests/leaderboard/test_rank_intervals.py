"""Rank intervals, ties and preliminary rows on the boards: the selector against the engine's
``rank_intervals``, and the same figures on the page, in the CSV and in the API.

The rows are made once for the class (``class_rows``): the paper's, the random baseline's
episodes as two open-weights models (twins: the same episodes) and the mirror-confused
baseline's as a third, beside the random baseline as a reference row.
"""

from __future__ import annotations

import csv
import io

import pytest

from evaluation.metrics import rank_intervals, scene_sums, tied_with_above
from evaluation.vocabulary import TABLES
from leaderboard.boards.scores import run_list_on_leaderboard
from leaderboard.boards.selectors import (
    RANK_RESAMPLES,
    RANKED_KINDS,
    LeaderboardFilters,
    leaderboard_table,
)
from leaderboard.models import Run
from leaderboard.runs.imports import reference_results_load
from leaderboard.runs.selectors import run_results
from tests.leaderboard.factories import board_run, make_bundle
from tests.leaderboard.test_pages import page_rows

pytestmark = pytest.mark.django_db
DASH = "\N{EN DASH}"
"""Between the bounds of an interval on the page."""


@pytest.fixture(scope="class")
def board(class_rows, bundles) -> dict[str, Run]:
    with class_rows():
        reference_results_load()
        return {
            "random": board_run(bundles["random"], "Random VLM", kind="open-weights"),
            "twin": board_run(bundles["random"], "Random VLM twin", kind="open-weights"),
            "confused": board_run(bundles["mirror-confused"], "Confused VLM", kind="open-weights"),
            "baseline": board_run(bundles["random"], "Random here", kind="baseline"),
        }


def _csv(client, url):
    response = client.get(url)
    assert response.status_code == 200, response.content[:300]
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def _span(record):
    if record["reference"]:
        return None
    if record["rank_low"] is not None:
        return (record["rank_low"], record["rank_high"])
    return None if record["rank"] is None else (record["rank"], record["rank"])


class TestRankIntervals:
    @pytest.mark.parametrize("table", TABLES)
    def test_the_board_gives_the_intervals_of_one_joint_bootstrap_over_the_scenes(
        self, board, table
    ):
        frame = leaderboard_table(table=table, filters=LeaderboardFilters()).frame
        records = frame.to_dict("records")
        reported = [r for r in records if r["source"] == "reported"]
        competitors = {r["run_id"] for r in records if r["kind"] in RANKED_KINDS}
        want = rank_intervals(
            {run.pk: scene_sums(run_results(run=run)) for run in board.values()},
            table=table,
            fixed={r["run_id"]: r["overall_avg"] for r in reported if r["run_id"] in competitors},
            competitors=competitors,
            n_resamples=RANK_RESAMPLES,
        )
        got = {r["run_id"]: (r["rank_low"], r["rank_high"]) for r in records}
        for run in board.values():
            assert got[run.pk] == want[run.pk]
            low, high = want[run.pk]
            assert 1 <= low <= high <= len(competitors)
        # The paper publishes no episodes: its rows have no interval.
        assert all(got[r["run_id"]] == (None, None) for r in reported)
        # A ranked row's own rank lies inside its interval.
        for name in ("random", "twin", "confused"):
            row = next(r for r in records if r["run_id"] == board[name].pk)
            assert row["rank_low"] <= row["rank"] <= row["rank_high"]

    def test_a_row_is_tied_where_its_ranks_overlap_those_of_the_row_above(self, board):
        records = leaderboard_table(table="overall", filters=LeaderboardFilters()).frame.to_dict(
            "records"
        )
        assert [r["tied_with_above"] for r in records] == tied_with_above(
            [_span(r) for r in records]
        )
        by_id = {r["run_id"]: r for r in records}
        random, twin = by_id[board["random"].pk], by_id[board["twin"].pk]
        # Twins score the same in every resample: the same interval, and the lower one is tied.
        assert (random["rank_low"], random["rank_high"]) == (twin["rank_low"], twin["rank_high"])
        lower = max((random, twin), key=records.index)
        assert lower["tied_with_above"] is True
        # The best model is tied with nobody above it.
        assert records[0]["tied_with_above"] is False

    def test_the_api_and_the_csv_carry_the_interval_the_tie_and_the_preliminary_flag(
        self, client, board
    ):
        records = leaderboard_table(table="overall", filters=LeaderboardFilters()).frame
        want = {r["run_id"]: r for r in records.to_dict("records")}
        api = client.get("/api/leaderboards/overall/").json()["results"]
        rows = _csv(client, "/leaderboard/overall.csv")
        assert [r["run_id"] for r in api] == list(want)
        for row, line in zip(api, rows, strict=True):
            record = want[row["run_id"]]
            if record["rank_low"] is None:
                assert row["rank_interval"] is None
                assert line["rank_low"] == line["rank_high"] == ""
            else:
                assert row["rank_interval"] == [record["rank_low"], record["rank_high"]]
                assert [line["rank_low"], line["rank_high"]] == [
                    str(record["rank_low"]),
                    str(record["rank_high"]),
                ]
            assert row["tied_with_above"] is record["tied_with_above"]
            assert line["tied_with_above"] == str(record["tied_with_above"]).lower()
            assert row["preliminary"] is False and line["preliminary"] == "false"
        paper = [r for r in api if r["source"] == "reported"]
        assert paper and all(r["rank_interval"] is None for r in paper)

    def test_the_schema_documents_the_new_fields(self, client, board):
        import yaml

        schema = yaml.safe_load(client.get("/api/schema/").content)
        row = schema["components"]["schemas"]["LeaderboardRow"]
        for name in ("rank_interval", "tied_with_above", "preliminary"):
            assert name in row["properties"] and name in row["required"]
        assert row["properties"]["rank_interval"]["nullable"] is True

    def test_the_page_shows_each_interval_under_its_rank_and_says_why_the_papers_have_none(
        self, client, board
    ):
        frame = leaderboard_table(table="overall", filters=LeaderboardFilters()).frame
        html = page_rows(client, "/")
        assert len(html) == len(frame)
        for cells, record in zip(html, frame.to_dict("records"), strict=True):
            rank = cells[0]
            if record["tied_with_above"]:
                assert rank.startswith("≈tied with the model ranked above, ")
                rank = rank.removeprefix("≈tied with the model ranked above, ")
            if record["rank_low"] is None:
                assert DASH not in rank
            elif record["reference"]:
                assert rank.endswith(
                    f", would rank {record['rank_low']}{DASH}{record['rank_high']}"
                )
            else:
                interval = f"{record['rank_low']}{DASH}{record['rank_high']}"
                assert rank == f"{record['rank']}, rank interval {interval}"
        content = client.get("/").content.decode()
        assert 'abbr class="tie"' in content
        assert "The paper&#x27;s rows have no interval" in content or (
            "The paper's rows have no interval" in content
        )

    def test_sorting_by_the_lower_bound_is_a_switch_in_the_url_carried_into_the_csv(
        self, client, board
    ):
        content = client.get("/?sort=rank_low").content.decode()
        assert 'href="/leaderboard/overall.csv?sort=rank_low' in content
        rows = _csv(client, "/leaderboard/overall.csv?sort=rank_low")
        lows = [int(r["rank_low"] or r["rank"]) for r in rows if r["rank_low"] or r["rank"]]
        assert lows == sorted(lows)
        # Rows with neither (the paper's reference rows) come last.
        assert all(not (r["rank_low"] or r["rank"]) for r in rows[len(lows) :])
        api = client.get("/api/leaderboards/overall/?sort=rank_low").json()["results"]
        assert [r["model"] for r in api] == [r["model"] for r in rows]
        # The board links the switch, and back.
        assert 'href="?sort=rank_low&amp;order=asc"' in client.get("/").content.decode()
        assert "Sort by rank" in content
        descending = _csv(client, "/leaderboard/overall.csv?sort=rank_low&order=desc")
        assert descending[0]["model"] == rows[len(lows) - 1]["model"]


def test_a_row_built_from_fewer_than_the_tables_episodes_is_preliminary(client, tmp_path):
    complete_levels = make_bundle(tmp_path / "robot.jsonl", "random", scenes="robot", levels=(0,))
    run = board_run(complete_levels, "Robot-only VLM", kind="open-weights")
    assert not run.listed
    run_list_on_leaderboard(run=run)  # as a moderator's leave for a partial bundle does
    board = leaderboard_table(table="0", filters=LeaderboardFilters())
    row = board.frame.set_index("model").loc["Robot-only VLM"]
    assert row["preliminary"] is True and board.full_episodes == 66
    # 18 episodes: the interval still comes from them.
    assert row["rank_low"] == row["rank_high"] == 1
    api = client.get("/api/leaderboards/0/").json()["results"]
    assert api[0]["preliminary"] is True
    assert _csv(client, "/leaderboard/level-0.csv")[0]["preliminary"] == "true"
    page = client.get("/levels/0/").content.decode()
    assert (
        'class="badge preliminary" title="Built from 18 of the table&#x27;s 66 episodes' in (page)
        or "Built from 18 of the table's 66 episodes" in page
    )
    # Level 1 has none of its episodes: no row there; no overall row either.
    assert "Robot-only VLM" not in set(
        leaderboard_table(table="overall", filters=LeaderboardFilters()).frame["model"]
    )
