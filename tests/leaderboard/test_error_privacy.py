"""A provider's error text is its owner's business: public pages, the API and bundles show the
HTTP status and a category, the run's owner sees the full text.

The errored episode is a real one: a worker's episode task (in this process) calls a loopback
fake provider that answers 429 with words that must not be published.
"""

import json

import pytest
from django.urls import reverse

from evaluation.bundle import read_bundle
from evaluation.config import RunConfig
from evaluation.outbound import ALLOW_PRIVATE_ENV
from evaluation.public import ErrorSummary, error_summary
from evaluation.verify import verify_bundle
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.models import Episode, ModelEntry, Run
from leaderboard.runs.services import run_create, run_start
from leaderboard.worker import episode_evaluate
from tests.evaluation.fake_providers import FakeOpenAI, Scripted, openai_error

pytestmark = pytest.mark.django_db

LEAK = "quota of org-7f3a9c on shard db-7.corp.internal exhausted"
"""What the provider says: internal names, an organisation id; not for the public."""


@pytest.fixture
def errored(alice, settings, monkeypatch, django_capture_on_commit_callbacks):
    """Alice's public run whose one episode ended on a 429 the retries did not get past."""
    settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS = True
    settings.MIRRORBENCH_RETRY_ATTEMPTS = 2
    settings.MIRRORBENCH_RETRY_BASE_S = 0.0
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")  # the worker's own switch (the fake is loopback)
    entry = model_entry_upsert(name="Leaky VL", kind=ModelEntry.Kind.OPEN_WEIGHTS)
    with FakeOpenAI() as fake:
        fake.enqueue(*[Scripted(429, openai_error(LEAK), {"Retry-After": "0"})] * 2)
        with django_capture_on_commit_callbacks(execute=False):
            run = run_create(
                model_entry=entry,
                config=RunConfig(
                    agent="openai:leaky-vl",
                    base_url=fake.base_url,
                    scenes="GR1_T2-allegro-logo_0",
                    levels=(1,),
                    image_size=32,
                ),
                owner=alice,
            )
            (episode_id,) = run_start(run_id=run.pk)
            assert episode_evaluate(episode_id=episode_id) == "error"
        assert len(fake.requests) == 2
    return Episode.objects.get(pk=episode_id)


def test_the_episode_stores_the_summary_apart_from_the_text(errored):
    assert errored.status == Episode.Status.ERROR
    assert (errored.error_status, errored.error_category) == (429, "rate_limited")
    assert LEAK in errored.error
    assert errored.error_summary == ErrorSummary(429, "rate_limited")


def test_the_public_api_gives_status_and_category_only(client, errored, bob):
    listed = client.get(f"/api/episodes/?run={errored.run_id}")
    detail = client.get(f"/api/episodes/{errored.pk}/")
    assert listed.json()["results"][0]["error"] == {"status": 429, "category": "rate_limited"}
    assert detail.json()["error"] == {"status": 429, "category": "rate_limited"}
    client.force_login(bob)  # signed in, but not the owner
    as_bob = client.get(f"/api/episodes/{errored.pk}/")
    for response in (listed, detail, as_bob):
        assert LEAK not in response.content.decode()
    assert as_bob.json()["error"] == {"status": 429, "category": "rate_limited"}


def test_the_owner_gets_the_full_text_from_the_api(client, errored, alice):
    client.force_login(alice)
    listed = client.get(f"/api/episodes/?run={errored.run_id}").json()["results"][0]["error"]
    detail = client.get(f"/api/episodes/{errored.pk}/").json()["error"]
    for error in (listed, detail):
        assert (error["status"], error["category"]) == (429, "rate_limited")
        assert LEAK in error["detail"] and error["detail"].startswith("transport error after 2")


def test_the_owners_runs_are_asked_for_once_and_only_when_an_error_is_shown(
    client, errored, alice, django_assert_num_queries
):
    client.force_login(alice)
    url = f"/api/episodes/?run={errored.run_id}"
    with django_assert_num_queries(5):  # session, user, count, page, alice's runs
        assert client.get(url).json()["results"][0]["error"]["detail"]
    Episode.objects.filter(pk=errored.pk).update(
        status=Episode.Status.COMPLETED, error="", error_status=None, error_category=""
    )
    with django_assert_num_queries(4):
        assert client.get(url).json()["results"][0]["error"] is None


def test_the_run_page_shows_the_summary_and_the_text_to_its_owner_only(client, errored, alice, bob):
    url = reverse("leaderboard:run", kwargs={"run_id": errored.run_id})
    public = client.get(url).content.decode()
    assert "HTTP 429, rate limited" in public and LEAK not in public
    client.force_login(bob)
    assert LEAK not in client.get(url).content.decode()
    client.force_login(alice)
    owned = client.get(url).content.decode()
    assert "HTTP 429, rate limited" in owned and LEAK in owned


def test_the_bundle_carries_the_summary_only(client, errored, alice, tmp_path):
    assert Run.objects.get(pk=errored.run_id).status == Run.Status.COMPLETED
    url = reverse("leaderboard:run-bundle", kwargs={"run_id": errored.run_id})
    for user in (None, alice):
        if user is not None:
            client.force_login(user)
        text = client.get(url).content
        assert LEAK.encode() not in text
        episode = json.loads(text.decode().splitlines()[1])
        assert episode["status"] == "error" and episode["error"] == "[rate_limited HTTP 429]"
        assert error_summary(episode["error"]) == ErrorSummary(429, "rate_limited")
    bundle = tmp_path / "downloaded.jsonl"
    bundle.write_bytes(text)
    assert verify_bundle(read_bundle(bundle)) == []  # still a valid bundle
