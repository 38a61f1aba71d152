"""The admin works for a moderator on every leaderboard model."""

import pytest
from django.contrib.auth.models import User

from leaderboard.models import Episode, Run
from leaderboard.services.imports import reference_results_load
from tests.leaderboard.factories import import_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def moderator(client):
    user = User.objects.create_superuser("moderator", "mod@example.org", "pw-for-tests")
    client.force_login(user)
    return user


@pytest.mark.parametrize(
    "model", ["modelentry", "benchmarkversion", "scene", "run", "episode", "step", "runscore"]
)
def test_every_model_has_a_working_admin_list(client, moderator, bundles, model):
    reference_results_load()
    import_run(bundles["oracle"], "Oracle", kind="baseline")
    response = client.get(f"/admin/leaderboard/{model}/")
    assert response.status_code == 200


def test_a_moderator_can_open_a_run_and_an_episode(client, moderator, bundles):
    run = import_run(bundles["oracle"], "Oracle", kind="baseline")
    assert client.get(f"/admin/leaderboard/run/{run.pk}/change/").status_code == 200
    episode = Episode.objects.filter(run=run).first()
    assert client.get(f"/admin/leaderboard/episode/{episode.pk}/change/").status_code == 200


def test_outsiders_cannot_reach_the_admin(client):
    response = client.get("/admin/leaderboard/run/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert Run.objects.count() == 0
