"""``python manage.py import_bundle FILE --model NAME``: verify a results bundle and list it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.bundle import BundleError, read_bundle
from leaderboard.models import ModelEntry, Run
from leaderboard.services.entries import model_entry_upsert
from leaderboard.services.imports import BundleRejected, run_import_bundle


class Command(BaseCommand):
    help = "Verify a results bundle (mirrorbench run) and add it to the leaderboard."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("bundle", type=Path)
        parser.add_argument("--model", required=True, help="model entry name (created if new)")
        parser.add_argument("--kind", choices=ModelEntry.Kind.values, default="open-weights")
        parser.add_argument("--organisation", default="")
        parser.add_argument("--params-b", type=float, default=None)
        parser.add_argument(
            "--source", choices=[Run.Source.EVALUATED, Run.Source.VERIFIED], default="verified"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            bundle = read_bundle(options["bundle"])
        except BundleError as exc:
            raise CommandError(str(exc)) from None
        existing = ModelEntry.objects.filter(name=options["model"]).first()
        entry = existing or model_entry_upsert(
            name=options["model"],
            kind=options["kind"],
            organisation=options["organisation"],
            params_b=options["params_b"],
        )
        try:
            imported = run_import_bundle(model_entry=entry, bundle=bundle, source=options["source"])
        except BundleRejected as exc:
            if existing is None:
                entry.delete()
            for problem in exc.problems:
                self.stderr.write(problem)
            raise CommandError(
                f"{options['bundle']} does not verify; nothing was imported"
            ) from None
        self.stdout.write(
            f"Imported run {imported.run.pk} of {entry.name}: {imported.episodes} episodes"
        )
