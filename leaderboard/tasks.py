"""Celery tasks: thin interfaces that take ids, call a service, and retry on database hiccups.

Two queues (``CELERY_TASK_ROUTES`` in the settings): ``models`` (episodes: model calls are
I/O-bound, many run at once) and ``render`` (frames: CPU- or GPU-bound). Every task is safe to
run twice.
"""

from __future__ import annotations

from django.db import OperationalError

from leaderboard import worker
from leaderboard.frames.services import (
    FrameStoreError,
    episode_frames_render,
    frames_evict,
    frames_render,
    run_eager_frame_keys,
    run_frames_register,
    runs_frames_requeue,
)
from leaderboard.models import Frame, Run
from leaderboard.runs import selectors
from leaderboard.runs import services as runs
from leaderboard.runs.limits import owner_quota_wait_s
from mirrorbench_site.celery import app

THROTTLE_DELAY_S = 5


@app.task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True)
def run_start(run_id: int) -> int:
    """Start a run and queue one task per pending episode; return how many were queued."""
    episode_ids = runs.run_start(run_id=run_id)
    for episode_id in episode_ids:
        episode_evaluate.delay(episode_id)
    return len(episode_ids)


@app.task(
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, FrameStoreError),
    retry_backoff=True,
    max_retries=5,
)
def episode_evaluate(episode_id: int) -> str:
    """Play one episode, storing every step as it happens."""
    outcome = worker.episode_evaluate(episode_id=episode_id)
    if outcome == "throttled":
        # The provider's parallel cap is reached: come back when a slot may be free.
        episode_evaluate.apply_async((episode_id,), countdown=THROTTLE_DELAY_S)
    elif outcome == "quota":
        # The owner's requests for today are used up: come back when the count starts again.
        wait = max(THROTTLE_DELAY_S, int(owner_quota_wait_s()) + 1)
        episode_evaluate.apply_async((episode_id,), countdown=wait)
    return outcome


@app.task
def episodes_requeue_stale() -> int:
    """Queue again the episodes whose task went silent (a worker died); return how many.

    Also what a dead worker left undone after the episodes: runs whose every episode has
    finished but that were never completed (the worker died while scoring), and eager frames
    never stored (it died while rendering them). Beat runs this every
    ``MIRRORBENCH_STALE_CHECK_S``; twice at once (two beats) does no harm.
    """
    episode_ids = selectors.episodes_stale()
    for episode_id in episode_ids:
        episode_evaluate.delay(episode_id)
    for run_id in selectors.runs_done_uncompleted():
        worker.run_finish_if_done(run_id=run_id)
    runs_frames_requeue()
    return len(episode_ids)


@app.task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True)
def run_render_frames(run_id: int, size: int | None = None) -> int:
    """Register a finished run's frames and queue its eager ones, a task per scene (render queue).

    Eager frames are each scene's start view and each episode's final view (the thumbnails and
    every replay's first frame); a replay renders the rest when opened. ``size`` is ignored
    (the run's own image size is used); it stays for tasks queued by older releases.
    """
    run = Run.objects.get(pk=run_id)
    run_frames_register(run=run)
    by_scene: dict[int, list[str]] = {}
    for key, scene in Frame.objects.filter(pk__in=run_eager_frame_keys(run=run)).values_list(
        "pk", "scene_id"
    ):
        by_scene.setdefault(scene, []).append(key)
    for keys in by_scene.values():
        frames_render_keys.delay(keys)
    return len(by_scene)


@app.task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=3)
def frames_sweep() -> dict[str, int]:
    """Keep stored frames and animations within MIRRORBENCH_FRAMES_MAX_BYTES (beat, render
    queue)."""
    evicted = frames_evict()
    return {
        "frames": evicted.frames,
        "animations": evicted.animations,
        "bytes": evicted.bytes,
        "stored_bytes": evicted.stored_bytes,
    }


@app.task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True)
def episode_render_frames(episode_id: int) -> dict[str, int]:
    """Render the missing frames of one episode, for a replay that is being watched."""
    count = episode_frames_render(episode_id=episode_id)
    return {"rendered": count.rendered, "reused": count.reused}


@app.task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True)
def frames_render_keys(keys: list[str]) -> dict[str, int]:
    """Render and store the registered frames ``keys`` that are missing (render queue)."""
    count = frames_render(keys)
    return {"rendered": count.rendered, "reused": count.reused}
