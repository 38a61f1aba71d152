"""``python manage.py worker``: one Celery worker in the foreground (what ``make worker`` runs)."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from mirrorbench_site.celery import worker_command


class Command(BaseCommand):
    help = "Run one worker on both queues with the stale-episode check, in the foreground."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--concurrency", type=int, default=4, help="worker threads")
        parser.add_argument("--no-beat", action="store_true", help="another process runs beat")

    def handle(self, *args: Any, **options: Any) -> None:
        command = worker_command(concurrency=options["concurrency"], beat=not options["no_beat"])
        os.execv(command[0], command)  # the worker takes over this process, signals included
