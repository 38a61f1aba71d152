"""``python manage.py worker``: one Celery worker in the foreground (what ``make worker`` runs).

The worker embeds beat, the stale-episode check's scheduler, unless ``--no-beat``: a worker
that runs alone needs it, but a deployment must run exactly one beat. Beside ``manage.py serve``
(``make run``), which runs its own beat, or beside another worker that embeds it, start extra
workers with ``--no-beat``. Its log level is ``MIRRORBENCH_LOG_LEVEL``.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.management.commands.prepare_data_dir import PRIVATE_UMASK
from mirrorbench_site.celery import QUEUES, worker_command


class Command(BaseCommand):
    help = (
        "Run one worker on both queues in the foreground, with beat (the stale-episode check) "
        "embedded unless --no-beat; a deployment runs exactly one beat."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--concurrency", type=int, default=4, help="worker threads")
        parser.add_argument(
            "--queues",
            default=",".join(QUEUES),
            help="comma-separated: models (episodes), render (frames); default both. A GPU "
            "machine can serve only render, a small one only models.",
        )
        parser.add_argument(
            "--no-beat",
            action="store_true",
            help="another process runs beat (manage.py serve, another worker, celery beat)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        queues = tuple(q.strip() for q in options["queues"].split(",") if q.strip())
        try:
            command = worker_command(
                concurrency=options["concurrency"], beat=not options["no_beat"], queues=queues
            )
        except ValueError as exc:
            raise CommandError(f"--{exc}") from None
        os.umask(PRIVATE_UMASK)  # what the worker creates is private to this account
        os.execv(command[0], command)  # the worker takes over this process, signals included
