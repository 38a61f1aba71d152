"""``python manage.py prepare_data_dir``: create the data directory and its secret key.

``make run`` calls it before ``migrate``; running it again changes nothing. Reading the
settings never writes files, so this is where the data directory comes to exist.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connections


def secret_key_write(path: Path) -> bool:
    """Write a new random secret key to ``path`` (owner-only) unless it exists; return whether
    this call wrote it."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "w") as file:
        file.write(secrets.token_urlsafe(50))
    return True


class Command(BaseCommand):
    help = "Create the data directory (SQLite's folder, static root) and its secret key."

    def handle(self, *args: Any, **options: Any) -> None:
        folders = [Path(settings.DATA_DIR), Path(settings.STATIC_ROOT)]
        database = connections["default"].settings_dict
        if database["ENGINE"] == "django.db.backends.sqlite3":
            folders.append(Path(database["NAME"]).parent)
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
        key_file = Path(settings.MIRRORBENCH_SECRET_KEY_FILE)
        if secret_key_write(key_file):
            self.stdout.write(f"Wrote a new secret key to {key_file}")
        self.stdout.write(f"Data directory ready: {settings.DATA_DIR}")
