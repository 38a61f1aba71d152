"""Beat started twice by mistake (``manage.py serve``'s beat and a worker's embedded one, say):
every stale-episode check runs twice and queues every forgotten episode twice, and no episode
is claimed, played or stored twice."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from leaderboard.models import Episode, Run, Step
from tests.faults.processes import (
    beat_sent,
    empty_queues,
    start_beat,
    start_celery_worker,
    wait_until,
)
from tests.leaderboard.workers import stop_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.waits]

# The check every second. An episode is stale after 20 s of silence: the run's episodes,
# forgotten 30 s ago, are queued at once, while no episode being played (a step takes well
# under a second, even on a busy machine) can look stale and be taken over: a takeover is
# the stale check's own business, not a second claim.
FAST_CHECK = {"MIRRORBENCH_EPISODE_STALE_S": "20", "MIRRORBENCH_STALE_CHECK_S": "1"}


def test_two_beats_queue_each_episode_twice_and_each_is_claimed_once(results, fault_row):
    from evaluation.config import RunConfig
    from leaderboard.boards.entries import model_entry_upsert
    from leaderboard.runs.services import run_create, run_start

    entry = model_entry_upsert(name="Random", kind="baseline")
    config = RunConfig(agent="random", scenes="robot", levels=(1,), image_size=32)
    run = run_create(model_entry=entry, config=config)
    # The run is started but the messages of its episodes are gone (a broker lost them): only
    # the stale-episode check, which beat schedules, can queue them again.
    episodes = run_start(run_id=run.pk)
    Run.objects.filter(pk=run.pk).update(started=timezone.now() - timedelta(seconds=30))
    empty_queues()
    beats = [start_beat(env=FAST_CHECK, name=f"beat-{n}") for n in "ab"]
    worker = None
    try:
        # Both beats have scheduled the check before any worker runs one: each check queued
        # finds the run idle and queues all its episodes.
        wait_until(
            lambda: all(beat_sent(beat) >= 2 for beat in beats),
            timeout=60,
            what="the two beats did not both send the stale-episode check",
        )
        started = time.monotonic()
        worker = start_celery_worker(
            env={**FAST_CHECK, **results.env}, concurrency=4, queues=("models",)
        )
        wait_until(
            lambda: Run.objects.get(pk=run.pk).status == Run.Status.COMPLETED,
            timeout=90,
            what="the run did not complete",
        )
        recovered = time.monotonic() - started
        checks = sum(beat_sent(beat) for beat in beats)
        # The run completes when the last episode is played, with copies queued by a second
        # check still waiting: no check queues more once the beats stop (the run is done), and
        # the worker runs every copy queued before it is stopped.
        for beat in beats:
            stop_worker(beat)
        wait_until(
            lambda: _episode_tasks_run(results.returned()),
            timeout=60,
            what="the worker did not run every episode task the checks queued",
        )
    finally:
        for process in [*beats, *([worker] if worker else [])]:
            stop_worker(process)
    outcomes = results.returned()
    played = [o for o in outcomes if o in ("completed", "error", "lost")]
    refused = outcomes.count("claimed-elsewhere")
    rows = Episode.objects.filter(run=run)
    steps = Step.objects.filter(episode__run=run)
    duplicated = len(played) - len(episodes) + sum(e.attempts - 1 for e in rows)
    fault_row(
        "beat started twice",
        len(episodes),
        rows.filter(status="completed").count(),
        duplicated,
        recovered,
    )
    assert checks >= 4
    # Every episode was queued more than once, claimed once, played once.
    assert refused >= len(episodes), outcomes
    assert sorted(played) == ["completed"] * len(episodes)
    assert [e.attempts for e in rows] == [1] * len(episodes)
    for episode in rows.prefetch_related("steps"):
        assert [s.index for s in episode.steps.all()] == list(range(episode.steps_taken))
    assert steps.count() == sum(e.steps_taken for e in rows)
    assert duplicated == 0


def _episode_tasks_run(outcomes: list[object]) -> bool:
    """Whether the episode tasks that have run are as many as the checks queued: a check
    returns how many it queued (an int), an episode task its outcome (a string)."""
    queued = sum(o for o in outcomes if isinstance(o, int) and not isinstance(o, bool))
    return sum(isinstance(o, str) for o in outcomes) >= queued
