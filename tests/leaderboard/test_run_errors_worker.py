"""The re-run of errored episodes end to end: a real Celery worker plays a run against a
loopback model server that fails, then, asked again, plays only the errored episode afresh."""

from __future__ import annotations

import time

import pytest

from evaluation.config import RunConfig
from evaluation.outbound import ALLOW_PRIVATE_ENV
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.models import Episode, Run, Step
from leaderboard.runs.services import run_create, run_errored_rerun
from tests.evaluation.fake_providers import FakeOpenAI, Scripted
from tests.leaderboard.workers import start_worker, stop_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.waits]


def _completed(run: Run, deadline_s: float = 180) -> Run:
    deadline = time.monotonic() + deadline_s
    while (fresh := Run.objects.get(pk=run.pk)).status != Run.Status.COMPLETED:
        assert time.monotonic() < deadline, "the run did not finish"
        time.sleep(0.3)
    return fresh


def test_the_errored_episode_is_played_again_and_the_completed_one_kept(settings, monkeypatch):
    settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS = True
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")
    with FakeOpenAI() as fake:
        # The first request of the first episode played fails twice (the retry budget): that
        # episode ends in error; every other request is answered.
        fake.enqueue(Scripted(500), Scripted(503))
        worker = start_worker(
            extra_env={"MIRRORBENCH_RETRY_ATTEMPTS": "2", "MIRRORBENCH_RETRY_BASE_MS": "10"},
            concurrency=1,
        )
        try:
            entry = model_entry_upsert(name="flaky-vl", kind="open-weights")
            config = RunConfig(
                agent="openai:flaky-vl",
                base_url=fake.base_url,
                image_size=32,
                scenes="GR1_T2-allegro-logo_0",
                levels=(1, 2),
            )
            run = _completed(run_create(model_entry=entry, config=config))
            errored = Episode.objects.get(run=run, status=Episode.Status.ERROR)
            kept = Episode.objects.get(run=run, status=Episode.Status.COMPLETED)
            kept_steps = list(kept.steps.values_list("pk", flat=True))
            assert errored.error_category == "server_error"
            sent = len(fake.requests)

            assert run_errored_rerun(run=run) == 1
            assert run_errored_rerun(run=run) == 0  # asked twice: nothing more
            run = _completed(run)
        finally:
            stop_worker(worker)
    errored.refresh_from_db()
    assert errored.status == Episode.Status.COMPLETED and errored.error_category == ""
    assert errored.steps.count() == len(fake.requests) - sent > 0
    assert list(kept.steps.values_list("pk", flat=True)) == kept_steps  # untouched
    assert not Episode.objects.filter(run=run, status=Episode.Status.ERROR).exists()
    assert Step.objects.filter(episode__run=run).count() == len(fake.requests) - 2
