"""A worker killed (SIGKILL) while it scores a finished run, and while it renders a run's
frames: a new worker and beat finish the work, with nothing lost and nothing stored twice.

The embedded broker forgets a message once a worker has taken it: the killed worker's task is
gone, and only beat's periodic check (``episodes_requeue_stale``) can notice the work it left
undone. The kill lands inside the step named, through ``tests.faults.celery_faults``.
"""

from __future__ import annotations

import time

import pytest

from leaderboard.models import Episode, Frame, Run, RunScore, Step
from tests.faults.processes import empty_queues, start_beat, start_celery_worker, wait_until
from tests.leaderboard.workers import stop_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.waits]

FAST_CHECK = {"MIRRORBENCH_EPISODE_STALE_S": "2", "MIRRORBENCH_STALE_CHECK_S": "1"}


def small_run(agent: str = "random") -> Run:
    from evaluation.config import RunConfig
    from leaderboard.boards.entries import model_entry_upsert
    from leaderboard.runs.services import run_create

    entry = model_entry_upsert(name=agent.title(), kind="baseline")
    config = RunConfig(agent=agent, scenes="robot", levels=(1,), image_size=32)
    return run_create(model_entry=entry, config=config)


def step_rows(run: Run) -> list[tuple[int, int]]:
    return list(
        Step.objects.filter(episode__run=run)
        .order_by("episode", "index")
        .values_list("episode", "index")
    )


def test_a_worker_killed_while_scoring_a_finished_run(tmp_path, fault_row, settings):
    settings.MIRRORBENCH_EPISODE_STALE_S = 2
    markers = tmp_path / "markers"
    empty_queues()
    first = start_celery_worker(
        env=FAST_CHECK,
        queues=("models",),
        slow={"leaderboard.worker:run_scores_refresh": 120},
        markers=markers,
    )
    try:
        run = small_run()
        wait_until(
            (markers / "run_scores_refresh").exists, timeout=90, what="the run was never scored"
        )
    finally:
        stop_worker(first, kill=True)
    # Every episode is stored, the run is not: its completion and scores were one transaction.
    episodes = Episode.objects.filter(run=run)
    assert Run.objects.get(pk=run.pk).status == Run.Status.RUNNING
    assert episodes.filter(status="completed").count() == run.episodes_expected
    assert not RunScore.objects.filter(run=run).exists()
    steps = step_rows(run)
    started = time.monotonic()
    second = start_celery_worker(env=FAST_CHECK, queues=("models",))
    beat = start_beat(env=FAST_CHECK)
    try:
        wait_until(
            lambda: Run.objects.get(pk=run.pk).status == Run.Status.COMPLETED,
            timeout=60,
            what="the run was not completed after the worker was killed while scoring it",
        )
        recovered = time.monotonic() - started
    finally:
        stop_worker(beat)
        stop_worker(second)
    run.refresh_from_db()
    # Scored once: one row per table and track, and the episodes were not played again.
    scores = list(RunScore.objects.filter(run=run).values_list("table", "track"))
    assert scores and len(scores) == len(set(scores))
    assert ("1", "robot") in scores and run.finished is not None
    assert [e.attempts for e in episodes] == [1] * run.episodes_expected
    assert step_rows(run) == steps
    fault_row(
        "worker killed while scoring a run",
        run.episodes_expected,
        episodes.filter(status="completed").count(),
        len(steps) - len(set(steps)) + sum(e.attempts - 1 for e in episodes),
        recovered,
    )


def test_a_worker_killed_while_rendering_a_runs_frames(tmp_path, fault_row, settings):
    from django.core.files.storage import default_storage
    from PIL import Image

    from leaderboard.frames.selectors import FRAME_VARIANTS, frame_path
    from leaderboard.frames.services import run_eager_frame_keys

    settings.MIRRORBENCH_EPISODE_STALE_S = 2
    markers = tmp_path / "markers"
    empty_queues()
    # The render queue's worker stops inside storing a frame it has just rendered.
    first = start_celery_worker(
        env=FAST_CHECK,
        slow={"leaderboard.frames.services:frame_store": 120},
        markers=markers,
    )
    try:
        run = small_run()
        wait_until((markers / "frame_store").exists, timeout=120, what="no frame was ever rendered")
    finally:
        stop_worker(first, kill=True)
    assert Run.objects.get(pk=run.pk).status == Run.Status.COMPLETED
    eager = run_eager_frame_keys(run=run)
    stored_before = Frame.objects.filter(pk__in=eager, stored__isnull=False).count()
    assert stored_before < len(eager)
    started = time.monotonic()
    second = start_celery_worker(env=FAST_CHECK)
    beat = start_beat(env=FAST_CHECK)
    try:
        wait_until(
            lambda: Frame.objects.filter(pk__in=eager, stored__isnull=True).count() == 0,
            timeout=90,
            what="the run's eager frames were not all stored after the render worker died",
        )
        recovered = time.monotonic() - started
    finally:
        stop_worker(beat)
        stop_worker(second)
    # Every eager frame is whole, each variant stored once under its own name.
    names = set()
    for key in eager:
        for variant in FRAME_VARIANTS:
            path = frame_path(key, variant)
            with default_storage.open(path, "rb") as handle:
                Image.open(handle).verify()
            names.add(path)
    folders = {p.rsplit("/", 1)[0] for p in names}
    on_disk = {
        f"{folder}/{name}" for folder in folders for name in default_storage.listdir(folder)[1]
    }
    extra = sorted(p for p in on_disk - names if any(k in p for k in eager))
    assert not extra, f"files stored twice under other names: {extra}"
    fault_row(
        "worker killed while rendering frames",
        len(eager),
        Frame.objects.filter(pk__in=eager, stored__isnull=False).count(),
        len(extra),
        recovered,
    )
