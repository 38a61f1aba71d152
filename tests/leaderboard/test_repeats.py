"""Repeats on the site: episodes stored by repeat, scored per repeat, the spread and flip rate on
the board (page and API), preliminary rows, hosted runs of K repeats and the baselines' five.

The rows are made once for the module: the random baseline's bundle of two seeded repeats as
an open-weights model, beside its single run as another model (preliminary: one repeat where
another has several).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User

from evaluation.bundle import episode_results, read_bundle
from evaluation.config import RunConfig, agent_factory
from evaluation.metrics import rank_intervals, repeat_spread, scene_sums
from evaluation.runner import run
from evaluation.verify import verify_bundle
from evaluation.vocabulary import OVERALL
from leaderboard.boards.selectors import (
    RANK_RESAMPLES,
    RANKED_KINDS,
    LeaderboardFilters,
    leaderboard_table,
)
from leaderboard.formatting import metric
from leaderboard.models import Episode, ModelEntry, Run, RunScore
from leaderboard.runs.selectors import run_bundle, run_results
from leaderboard.runs.services import BASELINE_REPEATS, baseline_runs_ensure, run_create, run_start
from leaderboard.worker import episode_evaluate
from tests.leaderboard.factories import board_run, import_run, make_bundle

pytestmark = pytest.mark.django_db
DASH = "\N{EN DASH}"


def make_repeats_bundle(path: Path, repeats: int) -> Path:
    """Write the random baseline's bundle of ``repeats`` seeded repeats of all 264 episodes."""
    config = RunConfig(agent="random", repeats=repeats)
    run(agent_factory(config), config, path)
    return path


@pytest.fixture(scope="module")
def twice(tmp_path_factory) -> Path:
    return make_repeats_bundle(tmp_path_factory.mktemp("repeats") / "twice.jsonl", 2)


@pytest.fixture(scope="module")
def board(module_rows, twice, tmp_path_factory) -> dict[str, Run]:
    once = make_bundle(tmp_path_factory.mktemp("once") / "once.jsonl", "random")
    with module_rows():
        return {
            # With its steps: the site exports its bundle (verified below); the single run is
            # read on the boards alone.
            "twice": import_run(twice, "Random twice"),
            "once": board_run(once, "Random once"),
        }


def test_a_bundle_of_repeats_is_stored_by_repeat_listed_and_scored_per_repeat(board, twice):
    run = board["twice"]
    run.refresh_from_db()
    assert run.listed and run.episodes_expected == 2 * 264
    assert Episode.objects.filter(run=run, repeat=1).count() == 264
    assert Episode.objects.filter(run=run).count() == 2 * 264
    want = repeat_spread(episode_results(read_bundle(twice).episodes))
    assert want is not None
    stored = RunScore.objects.get(run=run, table=OVERALL, track=OVERALL).spread
    assert stored == want.as_dict()
    # Each level's Overall column has its own spread; the Human and Robot columns have none.
    assert RunScore.objects.get(run=run, table="2", track=OVERALL).spread["repeats"] == 2
    assert RunScore.objects.get(run=run, table="2", track="human").spread is None


def test_the_board_row_shows_the_pooled_score_the_spread_and_the_flip_rate(client, board, twice):
    results = episode_results(read_bundle(twice).episodes)
    spread = repeat_spread(results)
    assert spread is not None
    page = client.get("/").content.decode()
    shown = (
        f"2 repeats: AVG {metric(spread.low['avg'])}{DASH}{metric(spread.high['avg'])} "
        f'<span class="visually-hidden">standard deviation </span>(sd {metric(spread.sd["avg"])})'
    )
    assert shown in page
    assert f"{spread.flip_rate * 100:.0f}% flips" in page

    rows = {r["model"]: r for r in client.get("/api/leaderboards/overall/").json()["results"]}
    row = rows["Random twice"]
    assert row["repeats"] == 2
    # The API gives the site's 3 decimals.
    want = [spread.low["avg"], spread.high["avg"], spread.sd["avg"], spread.flip_rate]
    got = [
        *row["repeat_spread"]["avg_range"],
        *(row["repeat_spread"][k] for k in ("avg_sd", "flip_rate")),
    ]
    assert got == pytest.approx(want, abs=5e-4)
    assert rows["Random once"]["repeats"] == 1 and rows["Random once"]["repeat_spread"] is None


def test_the_downloads_carry_each_rows_repeats_and_spread(client, board, twice):
    import csv
    import io

    import pyarrow.parquet as pq

    spread = repeat_spread(episode_results(read_bundle(twice).episodes))
    assert spread is not None
    want = [spread.low["avg"], spread.high["avg"], spread.sd["avg"], spread.flip_rate]
    text = client.get("/leaderboard/overall.csv").content.decode()
    rows = {r["model"]: r for r in csv.DictReader(io.StringIO(text))}
    got = [float(rows["Random twice"][k]) for k in ("avg_low", "avg_high", "avg_sd", "flip_rate")]
    assert rows["Random twice"]["repeats"] == "2" and got == pytest.approx(want, abs=5e-4)
    once = rows["Random once"]
    assert once["repeats"] == "1" and once["avg_low"] == once["flip_rate"] == ""
    parquet = client.get("/leaderboard/overall.parquet")
    assert parquet.status_code == 200
    table = pq.read_table(
        io.BytesIO(b"".join(parquet.streaming_content) if parquet.streaming else parquet.content)
    )
    typed = {r["model"]: r for r in table.to_pylist()}
    assert typed["Random twice"]["repeats"] == 2 and typed["Random once"]["avg_sd"] is None
    assert typed["Random twice"]["flip_rate"] == pytest.approx(spread.flip_rate, abs=5e-4)


def test_the_rank_interval_draws_the_repeats_and_a_single_repeat_row_is_preliminary(board):
    frame = leaderboard_table(table=OVERALL, filters=LeaderboardFilters()).frame
    records = {r["model"]: r for r in frame.to_dict("records")}
    sums = {run.pk: scene_sums(run_results(run=run)) for run in board.values()}
    assert sums[board["twice"].pk].by_repeat is not None
    reported = [r for r in records.values() if r["source"] == "reported"]
    competitors = {r["run_id"] for r in records.values() if r["kind"] in RANKED_KINDS}
    want = rank_intervals(
        sums,
        table=OVERALL,
        fixed={r["run_id"]: r["overall_avg"] for r in reported if r["run_id"] in competitors},
        competitors=competitors,
        n_resamples=RANK_RESAMPLES,
    )
    twice = records["Random twice"]
    assert (twice["rank_low"], twice["rank_high"]) == want[board["twice"].pk]
    assert not twice["preliminary"]
    assert records["Random once"]["preliminary"]


def test_a_hosted_run_of_k_repeats_has_k_episodes_per_scene_and_level(
    client, django_capture_on_commit_callbacks
):
    user = User.objects.create_user("eve", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    client.force_login(user)
    data = {
        "provider": "openai",
        "model": "gpt-4o",
        "kind": "proprietary",
        "api_key": "sk-test",
        "levels": [0],
        "scenes": "robot",
        "repeats": 3,
    }
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post("/api/evaluations/", data, content_type="application/json")
    assert response.status_code == 201, response.content
    assert response.json()["episodes"] == 18 * 3
    run = Run.objects.get(pk=response.json()["run"])
    assert run.config.repeats == 3
    assert sorted(set(run.episodes.values_list("repeat", flat=True))) == [0, 1, 2]
    for bad in (0, 21, "many"):
        refused = client.post(
            "/api/evaluations/", {**data, "repeats": bad}, content_type="application/json"
        )
        assert refused.status_code == 400 and "repeats" in refused.json()


def test_the_form_s_estimate_scales_with_the_repeats(client):
    once = client.get("/evaluate/estimate.json?provider=openai&scenes=robot&levels=0").json()
    thrice = client.get(
        "/evaluate/estimate.json?provider=openai&scenes=robot&levels=0&repeats=3"
    ).json()
    assert thrice["episodes"] == 3 * once["episodes"] == 54
    assert thrice["requests_max"] == 3 * once["requests_max"]
    assert thrice["input_tokens"] == pytest.approx(3 * once["input_tokens"], abs=2)


def test_the_baselines_are_queued_with_five_seeded_repeats_once(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        created = baseline_runs_ensure()
    assert {r.agent for r in created} == {"random", "oracle"}
    for baseline in created:
        assert baseline.config.repeats == BASELINE_REPEATS == 5
        assert baseline.episodes.count() == 264 * 5
        assert baseline.metadata["selection"]["repeats"] == 5
    with django_capture_on_commit_callbacks(execute=False):
        assert baseline_runs_ensure() == []
    assert ModelEntry.objects.filter(kind="baseline").count() == 2


def test_a_repeat_bundle_exported_by_the_site_verifies(board, tmp_path):
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in run_bundle(run=board["twice"])))
    bundle = read_bundle(path)
    assert verify_bundle(bundle) == []
    assert {e.get("repeat", 0) for e in bundle.episodes} == {0, 1}


def test_the_worker_plays_each_repeat_with_its_seed_as_the_command_line_does(tmp_path):
    scene = "GR1_T2-shadow_hand-logo_0"
    config = RunConfig(agent="random", scenes=scene, levels=(1,), repeats=3)
    entry = ModelEntry.objects.create(name="Random thrice", slug="random-thrice", kind="baseline")
    site_run = run_create(model_entry=entry, config=config)
    for pk in run_start(run_id=site_run.pk):
        assert episode_evaluate(episode_id=pk) == "completed"
    played = {e.repeat: e.distances for e in site_run.episodes.all()}
    path = tmp_path / "cli.jsonl"
    run(agent_factory(config), config, path)
    assert played == {e["repeat"]: e["distances"] for e in read_bundle(path).episodes}
    assert len({tuple(d) for d in played.values()}) > 1  # the repeats drew anew
