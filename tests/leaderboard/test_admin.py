"""The admin works for a moderator on every leaderboard model, and for nobody else."""

import pytest

from leaderboard.models import Episode, ModelEntry, Run
from leaderboard.runs.imports import reference_results_load
from tests.leaderboard.factories import board_run, import_run

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "model", ["modelentry", "benchmarkversion", "scene", "run", "episode", "step", "runscore"]
)
def test_every_model_has_a_working_admin_list_for_a_moderator(client, moderator, bundles, model):
    reference_results_load()
    # The steps only for the step list: the other lists show none.
    import_run(bundles["oracle"], "Oracle", kind="baseline", with_steps=model == "step")
    client.force_login(moderator)
    response = client.get(f"/admin/leaderboard/{model}/")
    assert response.status_code == 200


def test_a_moderator_can_open_a_run_and_an_episode(client, moderator, bundles):
    run = import_run(bundles["oracle"], "Oracle", kind="baseline")
    client.force_login(moderator)
    assert client.get(f"/admin/leaderboard/run/{run.pk}/change/").status_code == 200
    episode = Episode.objects.filter(run=run).first()
    assert client.get(f"/admin/leaderboard/episode/{episode.pk}/change/").status_code == 200


def test_visitors_and_signed_in_outsiders_cannot_reach_the_admin(client, charlie):
    response = client.get("/admin/leaderboard/run/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    client.force_login(charlie)
    response = client.get("/admin/leaderboard/run/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_a_run_owner_who_is_not_staff_cannot_reach_the_admin(client, alice, bundles):
    run = board_run(bundles["oracle"], "Oracle", kind="baseline")
    Run.objects.filter(pk=run.pk).update(owner=alice)
    client.force_login(alice)
    response = client.get(f"/admin/leaderboard/run/{run.pk}/change/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_a_moderator_sets_a_models_facts_and_the_board_shows_them_at_once(client, moderator):
    reference_results_load()
    entry = ModelEntry.objects.get(name="GLM-4.5V-106B")
    client.force_login(moderator)
    assert client.get("/leaderboard/overall.json?licence=MIT").json()["rows"] == []
    form = client.get(f"/admin/leaderboard/modelentry/{entry.pk}/change/").context["adminform"]
    data = {k: v for k, v in form.form.initial.items() if v is not None}
    data.update(
        links="[]",
        release_date="2025-08-11",
        reasoning="high",
        licence="MIT",
        scaffold="model",
    )
    response = client.post(f"/admin/leaderboard/modelentry/{entry.pk}/change/", data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    rows = client.get("/leaderboard/overall.json?licence=MIT").json()["rows"]
    assert [(r["model"], r["release_date"], r["reasoning"]) for r in rows] == [
        ("GLM-4.5V-106B", "2025-08-11", "high")
    ]
    assert client.get("/admin/leaderboard/modelentry/?reasoning__exact=high").status_code == 200
