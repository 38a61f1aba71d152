"""leaderboard.queue: services queue tasks by name; every name is a task the worker runs, sent
to its queue, and only once the transaction commits."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import transaction

import leaderboard.tasks  # noqa: F401  (registers the tasks)
from leaderboard import queue
from mirrorbench_site.celery import app


@pytest.mark.parametrize("name", queue.TASK_NAMES)
def test_each_queued_name_is_a_registered_task_with_a_route(name):
    assert name in app.tasks
    assert name in settings.CELERY_TASK_ROUTES


def test_a_task_is_sent_only_once_the_transaction_commits(monkeypatch, transactional_db):
    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, args: sent.append((name, args)))
    with transaction.atomic():
        queue.task_send_on_commit(queue.RUN_START, 7)
        assert sent == []
    assert sent == [(queue.RUN_START, (7,))]
    with pytest.raises(RuntimeError), transaction.atomic():
        queue.task_send_on_commit(queue.RUN_START, 8)
        raise RuntimeError("rolled back")
    assert sent == [(queue.RUN_START, (7,))]
