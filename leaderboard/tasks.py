"""Celery tasks: thin interfaces that take ids, call a service, and retry on database hiccups.

Two queues (``CELERY_TASK_ROUTES`` in the settings): ``models`` (episodes: model calls are
I/O-bound, many run at once) and ``render`` (frames: CPU- or GPU-bound). Every task is safe to
run twice.
"""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from leaderboard import selectors
from leaderboard.services import runs

THROTTLE_DELAY_S = 5


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True)
def run_start(run_id: int) -> int:
    """Start a run and queue one task per pending episode; return how many were queued."""
    episode_ids = runs.run_start(run_id=run_id)
    for episode_id in episode_ids:
        episode_evaluate.delay(episode_id)
    return len(episode_ids)


@shared_task(
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def episode_evaluate(episode_id: int) -> str:
    """Play one episode, storing every step as it happens."""
    outcome = runs.episode_evaluate(episode_id=episode_id)
    if outcome == "throttled":
        # The provider's parallel cap is reached: come back when a slot may be free.
        episode_evaluate.apply_async((episode_id,), countdown=THROTTLE_DELAY_S)
    return outcome


@shared_task
def episodes_requeue_stale() -> int:
    """Queue again the episodes whose task went silent (a worker died); return how many."""
    episode_ids = selectors.episodes_stale()
    for episode_id in episode_ids:
        episode_evaluate.delay(episode_id)
    return len(episode_ids)


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True)
def run_render_frames(run_id: int, size: int) -> int:
    """Queue one frame task per scene of a finished run (render queue); return how many."""
    from leaderboard.selectors import run_scene_cells

    scenes = run_scene_cells(run_id=run_id)
    for scene_id, cells in scenes.items():
        scene_render_frames.delay(scene_id, [list(c) for c in dict.fromkeys(cells)], size)
    return len(scenes)


@shared_task(acks_late=True)
def scene_render_frames(scene_id: str, cells: list[list[int]], size: int) -> dict[str, int]:
    """Render and store the missing frames of one scene (render queue)."""
    from leaderboard.services.frames import frames_render

    count = frames_render(scene_id=scene_id, cells=[(c[0], c[1], c[2]) for c in cells], size=size)
    return {"rendered": count.rendered, "reused": count.reused}
