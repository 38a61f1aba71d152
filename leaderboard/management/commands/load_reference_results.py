"""``python manage.py load_reference_results``: the paper's published results (idempotent).

It also registers the scene gallery's frames for this process's renderer, so that a deployment
that changed ``MIRRORBENCH_RENDERER`` serves its gallery (pages never register frames).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from leaderboard.frames.services import gallery_frames_register
from leaderboard.runs.imports import REFERENCE_FIXTURE, reference_results_load
from simulation.renderer import DEFAULT_SIZE


class Command(BaseCommand):
    help = "Load the paper's published results (Tables II and IV-VII) as reported runs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--fixture", type=Path, default=REFERENCE_FIXTURE)

    def handle(self, *args: Any, **options: Any) -> None:
        count = reference_results_load(path=options["fixture"])
        gallery_frames_register(size=DEFAULT_SIZE)
        self.stdout.write(
            f"Loaded the paper's results for {count} models from {options['fixture']}"
        )
