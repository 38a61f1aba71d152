"""The data version: cached tables stay right while results, listings and entries change."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from evaluation.config import RunConfig
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.boards.scores import run_list_on_leaderboard
from leaderboard.data_version import (
    data_version,
    data_version_bump,
    data_version_cache_clear,
    data_version_cached,
)
from leaderboard.models import DataVersion, ModelEntry, Run
from leaderboard.runs.imports import reference_results_load
from leaderboard.runs.services import run_cancel, run_create
from tests.leaderboard.factories import UserFactory, board_run

pytestmark = pytest.mark.django_db


def test_a_bump_replaces_the_token_and_never_reuses_one():
    tokens = {data_version()}
    for _ in range(5):
        tokens.add(data_version_bump())
        assert data_version() in tokens
    assert len(tokens) == 6


def test_the_first_bump_makes_the_row_when_it_is_missing():
    DataVersion.objects.all().delete()
    assert data_version() == ""
    token = data_version_bump()
    assert data_version() == token and DataVersion.objects.count() == 1


def test_a_cached_value_is_built_once_per_data_version():
    built = []

    def build():
        built.append(1)
        return len(built)

    assert data_version_cached("t", ("a",), build) == 1
    assert data_version_cached("t", ("a",), build) == 1
    data_version_cache_clear()  # another process: the shared cache has it
    assert data_version_cached("t", ("a",), build) == 1
    assert data_version_cached("t", ("b",), build) == 2  # other parts, another value
    data_version_bump()
    assert data_version_cached("t", ("a",), build) == 3


def _models(client, url="/"):
    return client.get(url).content.decode()


@pytest.mark.parametrize(
    "change",
    ["import", "rename", "unlist", "reload"],
)
def test_every_service_that_changes_a_table_makes_the_cached_page_new(client, bundles, change):
    reference_results_load()
    run = board_run(bundles["random"], "Model before", kind="open-weights")
    before = _models(client)
    assert "Model before" in before
    assert _models(client) == before  # cached
    if change == "import":
        board_run(bundles["random"], "Model after", kind="open-weights")
        assert "Model after" in _models(client)
    elif change == "rename":
        model_entry_upsert(name="Model before", kind="proprietary")
        assert "proprietary" in _models(client, "/?q=Model+before")
    elif change == "unlist":
        other = board_run(bundles["oracle"], "Model before", kind="open-weights")
        run_list_on_leaderboard(run=run)  # the older run back on the board
        assert other.pk != run.pk
        assert f"/runs/{run.pk}/" in _models(client)
    else:
        Run.objects.filter(model_entry__name="Human").update(listed=False)
        reference_results_load()  # lists the paper's rows again
        assert "Human" in _models(client)


def test_cancelling_a_run_bumps_the_version(django_capture_on_commit_callbacks):
    entry = model_entry_upsert(name="Pending model", kind="open-weights")
    run = run_create(
        model_entry=entry, config=RunConfig(agent="random", levels=(0,), scenes="robot")
    )
    token = data_version()
    assert run_cancel(run=run)
    assert data_version() != token


def test_an_admin_edit_shows_at_once(client, bundles):
    run = board_run(bundles["random"], "Listed model", kind="open-weights")
    assert "Listed model" in _models(client)
    admin = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(admin)
    response = client.post(
        f"/admin/leaderboard/run/{run.pk}/change/",
        {
            "model_entry": run.model_entry_id,
            "benchmark": run.benchmark_id,
            "source": run.source,
            "status": run.status,
            "visibility": Run.Visibility.PRIVATE,
            "agent": run.agent,
            "metadata": "{}",
            "spec": "{}",
            "episodes_expected": run.episodes_expected,
            "condition": run.condition,
            "scores-TOTAL_FORMS": "0",
            "scores-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    client.logout()
    assert "Listed model" not in _models(client)


def test_the_cached_table_never_carries_a_users_header(client, bundles):
    board_run(bundles["random"], "Some model", kind="open-weights")
    alice = UserFactory(username="alice")
    alice.user_permissions.add(Permission.objects.get(codename="add_run"))
    client.force_login(alice)
    signed_in = _models(client)
    client.logout()
    visitor = _models(client)
    assert "alice" in signed_in and "Sign out" in signed_in
    assert "alice" not in visitor and "Sign in" in visitor
    assert ModelEntry.objects.filter(name="Some model").exists()
