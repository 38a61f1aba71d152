"""``python manage.py import_bundle FILE --model NAME``: verify a results bundle and list it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from evaluation.bundle import BundleError, read_bundle
from leaderboard.models import ModelEntry, Run
from leaderboard.runs.imports import BundleRejected, model_entry_import_bundle

SHOWN_PROBLEMS = 20
"""Problems quoted in the error; ``mirrorbench verify FILE`` lists every one."""


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
        path = options["bundle"]
        try:
            bundle = read_bundle(path)
            imported = model_entry_import_bundle(
                name=options["model"],
                kind=options["kind"],
                organisation=options["organisation"],
                params_b=options["params_b"],
                bundle=bundle,
                source=options["source"],
            )
        except BundleError as exc:
            raise CommandError(f"{exc}; nothing was imported") from None
        except BundleRejected as exc:
            shown = [f"{path}: {problem}" for problem in exc.problems[:SHOWN_PROBLEMS]]
            more = len(exc.problems) - len(shown)
            if more:
                shown.append(f"... and {more} more (mirrorbench verify {path} lists them all)")
            raise CommandError(
                f"{path} does not verify ({len(exc.problems)} problems); nothing was imported:\n"
                + "\n".join(shown)
            ) from None
        except ValueError as exc:  # a name refused by leaderboard.accounts.names, or like another's
            raise CommandError(f"{exc}; nothing was imported") from None
        except DatabaseError as exc:
            # Whatever verifies fits the columns; this is a bug or a database outage.
            raise CommandError(
                f"{path}: the database refused the import ({exc}); nothing was imported"
            ) from exc
        self.stdout.write(
            f"Imported run {imported.run.pk} of {imported.run.model_entry.name}: "
            f"{imported.episodes} episodes"
        )
