"""Isolation between users: whose cached answers a run reuses, whose entries a run joins, and
how many hosted runs one user may start.

Alice and bob may start hosted runs; the moderator is staff (see conftest).
"""

from __future__ import annotations

from typing import Any

import pytest

from evaluation.config import RunConfig
from leaderboard import worker
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.errors import FieldError
from leaderboard.models import Episode, ModelEntry, Run, RunSecret, Step
from leaderboard.runs import services as run_services
from leaderboard.runs.services import hosted_run_create, run_create
from tests.evaluation.fake_providers import FakeOpenAI, RecordedRequest, Scripted, openai_error

pytestmark = pytest.mark.django_db

SCENE = "tienkung-shadow_hand-logo_0"


class KeyCheckingOpenAI(FakeOpenAI):
    """A fake provider that answers only requests carrying one of its keys (401 otherwise)."""

    def __init__(self, *keys: str) -> None:
        super().__init__()
        self.keys = {f"Bearer {key}" for key in keys}

    def _record(self, request: RecordedRequest) -> Scripted:
        scripted = super()._record(request)
        if request.headers.get("authorization") not in self.keys:
            return Scripted(401, body=openai_error("Incorrect API key provided", type="auth"))
        return scripted

    def keys_seen(self) -> list[str]:
        return [r.headers.get("authorization", "") for r in self.requests]


@pytest.fixture
def loopback(settings, monkeypatch):
    """The fake provider lives on loopback: let the workers call it."""
    settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS = True
    monkeypatch.setenv("MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS", "1")
    settings.MIRRORBENCH_RETRY_ATTEMPTS = 1


def play(owner: Any, fake: FakeOpenAI, key: str, name: str) -> Episode:
    """Create a one-episode hosted run of ``owner`` and play it in this process."""
    entry = ModelEntry.objects.filter(name=name).first() or model_entry_upsert(
        name=name, kind=ModelEntry.Kind.OPEN_WEIGHTS
    )
    config = RunConfig(
        agent="openai:fake-vl", levels=(0,), scenes=SCENE, base_url=fake.base_url, image_size=32
    )
    run = run_create(model_entry=entry, config=config, owner=owner, api_key=key)
    (episode_id,) = run_services.run_start(run_id=run.pk)
    worker.episode_evaluate(episode_id=episode_id)
    return Episode.objects.get(pk=episode_id)


def test_a_run_never_completes_from_another_users_cached_answers(alice, bob, loopback):
    with KeyCheckingOpenAI("alice-key") as fake:
        first = play(alice, fake, "alice-key", "Fake VL")
        assert first.status == Episode.Status.COMPLETED
        asked = len(fake.requests)
        assert asked == first.steps_taken > 0

        # Bob asks the same questions with a key that does not work: the provider hears him
        # (with his key) and refuses; nothing of alice's answers reaches his run.
        second = play(bob, fake, "bob-wrong-key", "Fake VL")
        assert second.status == Episode.Status.ERROR
        assert len(fake.requests) > asked
        assert fake.keys_seen()[asked:] == ["Bearer bob-wrong-key"] * (len(fake.requests) - asked)
        assert not Step.objects.filter(episode=second, option__isnull=False).exists()

        # Alice's own rerun is answered from her cache, without a request.
        before = len(fake.requests)
        third = play(alice, fake, "alice-key", "Fake VL")
        assert third.status == Episode.Status.COMPLETED
        assert len(fake.requests) == before


def test_the_cache_scope_is_the_owner_or_the_server(alice):
    entry = model_entry_upsert(name="Random", kind=ModelEntry.Kind.BASELINE)
    server = run_create(model_entry=entry, config=RunConfig(agent="random", scenes=SCENE))
    hosted = run_create(
        model_entry=entry, config=RunConfig(agent="random", scenes=SCENE), owner=alice
    )
    assert worker.cache_scope(server) == "server"
    assert worker.cache_scope(hosted) == f"user:{alice.pk}"


def hosted(user: Any, **changes: Any) -> Run:
    data = {
        "provider": "openai",
        "model": "gpt-4o",
        "entry_name": "",
        "kind": ModelEntry.Kind.PROPRIETARY,
        "params_b": None,
        "api_key": "sk-test",
        "levels": [0],
        "scenes": SCENE,
        "private": False,
        "base_url": "",
    }
    return hosted_run_create(user=user, data={**data, **changes})


def counts() -> tuple[int, int, int, int]:
    return (
        ModelEntry.objects.count(),
        Run.objects.count(),
        Episode.objects.count(),
        RunSecret.objects.count(),
    )


def test_a_hosted_run_creates_its_owners_entry_and_reuses_it(alice):
    first = hosted(alice, entry_name="Alice VLM")
    second = hosted(alice, entry_name="alice vlm")
    assert first.model_entry == second.model_entry
    assert first.model_entry.owner == alice and first.model_entry.name == "Alice VLM"


@pytest.mark.parametrize("name", ["Alice VLM", "ALICE vlm", "Random", "random", "Human"])
def test_nobody_joins_an_entry_that_is_not_theirs(alice, bob, name):
    hosted(alice, entry_name="Alice VLM")
    model_entry_upsert(name="Random", kind=ModelEntry.Kind.BASELINE)
    model_entry_upsert(name="Human", kind=ModelEntry.Kind.HUMAN)
    before = counts()
    with pytest.raises(FieldError) as refused:
        hosted(bob, entry_name=name)
    assert refused.value.field == "entry_name"
    assert "not yours" in refused.value.message
    assert counts() == before


def test_a_users_run_named_like_a_baseline_leaves_the_baselines_run_listed(alice, bundles):
    from tests.leaderboard.factories import board_run

    baseline = board_run(bundles["random"], "Random", kind=ModelEntry.Kind.BASELINE)
    assert Run.objects.get(pk=baseline.pk).listed
    with pytest.raises(FieldError):
        hosted(alice, entry_name="Random")
    assert Run.objects.get(pk=baseline.pk).listed


def test_a_moderator_may_attach_a_run_to_the_sites_entries(moderator):
    entry = model_entry_upsert(name="Random", kind=ModelEntry.Kind.BASELINE)
    assert hosted(moderator, entry_name="Random").model_entry == entry


def test_the_active_runs_cap_refuses_one_more_and_writes_nothing(alice, bob, settings):
    settings.MIRRORBENCH_MAX_ACTIVE_RUNS = 2
    hosted(alice)
    hosted(alice)
    before = counts()
    with pytest.raises(FieldError) as refused:
        hosted(alice)
    assert refused.value.field == "non_field_errors"
    assert "2 hosted runs pending or running" in refused.value.message
    assert counts() == before
    hosted(bob, entry_name="Bob's")  # caps are per user
    Run.objects.filter(owner=alice).update(status=Run.Status.COMPLETED)
    hosted(alice)  # a finished run frees its place


def test_the_daily_episode_cap_counts_what_was_started_in_24_hours(alice, settings):
    settings.MIRRORBENCH_MAX_ACTIVE_RUNS = 100
    settings.MIRRORBENCH_MAX_EPISODES_PER_DAY = 3
    hosted(alice, levels=[0, 1])
    before = counts()
    with pytest.raises(FieldError) as refused:
        hosted(alice, levels=[2, 3])
    assert "started 2 in the last 24 hours" in refused.value.message
    assert counts() == before
    hosted(alice, levels=[3])


def test_staff_have_no_caps(moderator, settings):
    settings.MIRRORBENCH_MAX_ACTIVE_RUNS = 0
    hosted(moderator)
