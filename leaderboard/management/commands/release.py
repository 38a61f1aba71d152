"""``python manage.py release VERSION``: an immutable snapshot of the board (docs/exports.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.errors import FieldError
from leaderboard.releases.services import release_create


class Command(BaseCommand):
    help = (
        "Write release VERSION into the site's storage: every table as CSV and parquet, every "
        "listed run's bundle and details, the versions, a changelog entry and a manifest with "
        "each file's SHA-256. An existing version is never overwritten."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("version", help="one to three whole numbers joined by dots: 1.0")
        parser.add_argument(
            "--site-url",
            default="http://127.0.0.1:8000",
            help="the site's address, which the details name for run, episode and frame pages",
        )
        parser.add_argument("--note", default="", help="a line for the changelog entry")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            manifest = release_create(
                version=options["version"],
                site_url=options["site_url"],
                note=options["note"],
                log=lambda path: self.stdout.write(path) if options["verbosity"] > 1 else None,
            )
        except FieldError as exc:
            raise CommandError(str(exc)) from None
        total = sum(f["bytes"] for f in manifest["files"])
        self.stdout.write(
            f"release {manifest['release']}: {len(manifest['files'])} files, {total} bytes, "
            f"{len(manifest['runs'])} runs (releases/{manifest['release']}/manifest.json)"
        )
