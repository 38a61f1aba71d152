"""Benchmark versions: v1 and v2 results stay browsable, labelled, and never ranked beside v3."""

from typing import Any

import pytest

from leaderboard.boards.entries import benchmark_current
from leaderboard.boards.selectors import LeaderboardFilters, leaderboard_table, tracks_page
from leaderboard.models import BenchmarkVersion, ModelEntry, Run
from leaderboard.runs.imports import reference_results_load
from leaderboard.runs.services import baseline_runs_ensure, runs_retired_fail
from tests.leaderboard.factories import ModelEntryFactory, board_run

pytestmark = pytest.mark.django_db


RETIRED = {
    "v1": {"scene_set": "v1", "prompt_version": "v1", "dynamics_version": "v1"},
    "v2": {"scene_set": "v2", "prompt_version": "v2", "dynamics_version": "v1"},
}


def retired(name: str = "v1") -> BenchmarkVersion:
    version, _ = BenchmarkVersion.objects.get_or_create(name=name, defaults=RETIRED[name])
    return version


def v1() -> BenchmarkVersion:
    return retired("v1")


def as_retired(run: Run, name: str) -> Run:
    """Make ``run`` look like one measured before an upgrade (listed on that version's board)."""
    Run.objects.filter(pk=run.pk).update(benchmark=retired(name), listed=True)
    run.refresh_from_db()
    return run


def as_v1(run: Run) -> Run:
    return as_retired(run, "v1")


def models(table: str = "overall", **filters: Any) -> list[str]:
    board = leaderboard_table(table=table, filters=LeaderboardFilters(**filters))
    return list(board.frame["model"])


def test_the_current_benchmark_is_v3_and_names_itself(bundles):
    version = benchmark_current()
    assert version.name == "v3" and version.is_current
    assert version.as_dict() == {
        "version": "v3",
        "scene_set": "v2",
        "prompt_version": "v3",
        "dynamics_version": "v1",
    }
    assert version.scenes.count() == 66
    assert {s.max_steps for s in version.scenes.filter(body="male_0")} == {21}


@pytest.mark.parametrize("name", ["v1", "v2"])
def test_retired_runs_are_ranked_only_on_their_own_board(bundles, name):
    old = as_retired(board_run(bundles["random"], "Old Random"), name)
    board_run(bundles["oracle"], "New Oracle")
    reference_results_load()
    assert "Old Random" not in models()
    assert "New Oracle" in models() and "Gemini-2.5-Pro-API" in models()
    assert models(version=name) == ["Old Random"]
    assert models("2", version=name) == ["Old Random"]
    assert old.listed


@pytest.mark.parametrize("name", ["v1", "v2"])
def test_a_v3_run_of_the_same_model_does_not_unlist_its_retired_run(bundles, name):
    old = as_retired(board_run(bundles["random"], "Random model"), name)
    new = board_run(bundles["random"], "Random model")
    old.refresh_from_db()
    assert old.listed and new.listed
    assert models() == ["Random model"] and models(version=name) == ["Random model"]


def test_the_papers_rows_are_v3_rows_and_move_there_from_v2(bundles):
    reference_results_load()
    reported = Run.objects.filter(source="reported")
    # As a v2 site had them: the paper's rows on the v2 board.
    reported.update(benchmark=retired("v2"))
    assert tracks_page().models == 0
    reference_results_load()
    assert set(reported.values_list("benchmark__name", flat=True)) == {"v3"}
    assert tracks_page().models == 18
    assert tracks_page(version="v2").models == 0
    assert tracks_page(version="v1").models == 0


@pytest.mark.parametrize("name", ["v1", "v2"])
def test_a_retired_board_says_it_is_retired_and_links_to_v3(client, bundles, name):
    as_retired(board_run(bundles["random"], "Old Random"), name)
    page = client.get(f"/?version={name}").content.decode()
    assert f"Benchmark {name} is retired" in page and "Old Random" in page
    assert 'href="?version=v3"' in page
    current = client.get("/").content.decode()
    assert "is retired" not in current and "Old Random" not in current
    csv = client.get(f"/leaderboard/overall.csv?version={name}").content.decode()
    assert "Old Random" in csv
    tracks = client.get(f"/tracks/?version={name}").content.decode()
    assert f"Benchmark {name} is retired" in tracks


def test_the_v2_board_says_why_it_was_retired(client, bundles):
    as_retired(board_run(bundles["random"], "Old Random"), "v2")
    page = client.get("/?version=v2").content.decode()
    assert "prompts" in page and "2,048-token output cap" in page


def test_an_unknown_version_is_a_400_naming_the_field(client):
    response = client.get("/?version=v9")
    assert response.status_code == 400
    assert "version" in response.content.decode()
    api = client.get("/api/leaderboards/overall/?version=v9")
    assert api.status_code == 400 and "version" in api.json()
    assert client.get("/leaderboard/overall.csv?version=v9").status_code == 400


def test_run_and_model_pages_label_a_v1_run(client, bundles):
    old = as_v1(board_run(bundles["random"], "Old Random"))
    run_page = client.get(f"/runs/{old.pk}/").content.decode()
    assert "retired protocol" in run_page and ">v1<" in run_page
    model_page = client.get(f"/models/{old.model_entry.slug}/").content.decode()
    assert ">v1<" in model_page and "retired" in model_page
    api = client.get(f"/api/runs/{old.pk}/").json()
    assert api["benchmark_version"] == "v1"
    assert api["benchmark"] == {"scene_set": "v1", "prompt_version": "v1", "dynamics_version": "v1"}
    listed = client.get("/api/runs/?version=v1").json()
    assert [r["id"] for r in listed["results"]] == [old.pk]


@pytest.mark.parametrize("name", ["v1", "v2"])
def test_baselines_are_queued_again_under_v3_when_only_retired_ones_exist(bundles, settings, name):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    entry = ModelEntryFactory(name="Random", kind=ModelEntry.Kind.BASELINE)
    old = board_run(bundles["random"], "Random")
    as_retired(old, name)
    assert old.model_entry == entry
    queued = baseline_runs_ensure()
    assert sorted(r.agent for r in queued) == ["oracle", "random"]
    assert {r.benchmark.name for r in queued} == {"v3"}
    assert baseline_runs_ensure() == []
    old.refresh_from_db()
    assert old.status == Run.Status.COMPLETED and old.listed


@pytest.mark.parametrize("name", ["v1", "v2"])
def test_unfinished_runs_of_a_retired_version_are_failed_with_a_reason(bundles, name):
    entry = ModelEntryFactory()
    pending = Run.objects.create(
        model_entry=entry, benchmark=retired(name), source="evaluated", status=Run.Status.PENDING
    )
    current = Run.objects.create(
        model_entry=entry, benchmark=benchmark_current(), source="evaluated", status="pending"
    )
    assert runs_retired_fail() == 1
    pending.refresh_from_db()
    current.refresh_from_db()
    assert pending.status == Run.Status.FAILED and "retired" in pending.error
    assert current.status == Run.Status.PENDING


@pytest.mark.django_db(transaction=True)
def test_the_migration_names_the_versions_already_stored_v1():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("leaderboard", "0004_provider_windows")]
    after = [("leaderboard", "0005_benchmark_version_name")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old_apps = executor.loader.project_state(before).apps
    old_apps.get_model("leaderboard", "BenchmarkVersion").objects.create(
        scene_set="v1", prompt_version="v1", dynamics_version="v1"
    )
    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new_apps = executor.loader.project_state(after).apps
    names = new_apps.get_model("leaderboard", "BenchmarkVersion").objects.values_list(
        "name", flat=True
    )
    assert list(names) == ["v1"]
    MigrationExecutor(connection).migrate(executor.loader.graph.leaf_nodes())
