"""Queue Celery tasks by name, so that services never import ``leaderboard.tasks``.

``tasks.py`` sits above the services (it imports them at the top); a service that queues work
names the task here instead. The names are checked against the registered tasks by
``tests/leaderboard/test_queue.py``, and routed to their queue by ``CELERY_TASK_ROUTES``.
"""

from __future__ import annotations

from django.db import transaction

RUN_START = "leaderboard.tasks.run_start"
RUN_RENDER_FRAMES = "leaderboard.tasks.run_render_frames"
EPISODE_RENDER_FRAMES = "leaderboard.tasks.episode_render_frames"

TASK_NAMES = (RUN_START, RUN_RENDER_FRAMES, EPISODE_RENDER_FRAMES)


def task_send(name: str, *args: object) -> None:
    """Send the task ``name`` with ``args`` to its queue now."""
    from mirrorbench_site.celery import app

    app.send_task(name, args=args)


def task_send_on_commit(name: str, *args: object) -> None:
    """Send the task ``name`` with ``args`` once the current transaction commits (at once when
    there is none), so that a worker never looks for rows that are not there yet."""
    transaction.on_commit(lambda: task_send(name, *args))
