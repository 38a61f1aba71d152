"""``python manage.py export_run RUN_ID --out FILE``: a run as a results bundle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.models import Run
from leaderboard.runs.selectors import run_bundle


class Command(BaseCommand):
    help = "Write a run evaluated here as a results bundle that `mirrorbench verify` accepts."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run_id", type=int)
        parser.add_argument("--out", type=Path, required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        run = Run.objects.filter(pk=options["run_id"], source=Run.Source.EVALUATED).first()
        if run is None:
            raise CommandError(f"no run {options['run_id']} evaluated here")
        records = run_bundle(run=run)
        options["out"].write_text(
            "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
        )
        self.stdout.write(f"{options['out']}: {len(records) - 1} episodes of run {run.pk}")
