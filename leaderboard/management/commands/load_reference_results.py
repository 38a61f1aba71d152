"""``python manage.py load_reference_results``: the paper's published results (idempotent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from leaderboard.runs.imports import REFERENCE_FIXTURE, reference_results_load


class Command(BaseCommand):
    help = "Load the paper's published results (Tables II and IV-VII) as reported runs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--fixture", type=Path, default=REFERENCE_FIXTURE)

    def handle(self, *args: Any, **options: Any) -> None:
        count = reference_results_load(path=options["fixture"])
        self.stdout.write(
            f"Loaded the paper's results for {count} models from {options['fixture']}"
        )
