"""``python manage.py prepare_data_dir``: create the data directory and its secret key, private.

``make run`` calls it before ``migrate``; running it again changes nothing. Reading the
settings never writes files, so this is where the data directory comes to exist.

The data directory holds the database (and its write-ahead log), the private runs' bundles and
frames, the broker's messages and the secret key: none of it is for other accounts on the
machine. Folders are made 0700 and files 0600, what is already there and belongs to this account
loses its group and other bits, and the SQLite database is created empty and 0600 here, so that
SQLite (which gives its -wal and -shm files the database's mode) keeps it private. The collected
static files, under ``STATIC_ROOT``, are public anyway and left as they are. The serving
processes (``manage.py serve`` and ``manage.py worker``) run with umask ``PRIVATE_UMASK``, so
what they create later is private too.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connections

# Files the serving processes create are readable and writable by their owner only.
PRIVATE_UMASK = 0o077


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


def private_folder(path: Path) -> None:
    """Create ``path`` (and missing parents) and make it the owner's only."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    make_private(path)


def private_file(path: Path) -> bool:
    """Create ``path`` empty and owner-only unless it exists; return whether it was created."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return False
    return True


def make_private(path: Path) -> bool:
    """Take the group and other bits off ``path`` if this account owns it (links are left
    alone); return whether its mode changed."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.geteuid() or not mode & 0o077:
        return False
    path.chmod(mode & ~0o077)
    return True


def make_tree_private(root: Path, *, leave: tuple[Path, ...] = ()) -> int:
    """Make ``root`` and everything under it private (``leave`` and what is under it aside);
    return how many entries changed. Links are not followed."""
    changed = int(make_private(root))
    for folder, folders, files in os.walk(root):
        here = Path(folder)
        folders[:] = [name for name in folders if here / name not in leave]
        changed += sum(make_private(here / name) for name in (*folders, *files))
    return changed


class Command(BaseCommand):
    help = (
        "Create the data directory (SQLite's folder and database, static root) and its secret "
        "key; make what it holds private to this account (the collected static files aside)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        data_dir, static_root = Path(settings.DATA_DIR), Path(settings.STATIC_ROOT)
        private_folder(data_dir)
        database = connections["default"].settings_dict
        if database["ENGINE"] == "django.db.backends.sqlite3":
            sqlite = Path(database["NAME"])
            if not sqlite.parent.exists():
                private_folder(sqlite.parent)
            private_file(sqlite)
            for path in (sqlite, Path(f"{sqlite}-wal"), Path(f"{sqlite}-shm")):
                make_private(path)
        static_root.mkdir(parents=True, exist_ok=True)
        key_file = Path(settings.MIRRORBENCH_SECRET_KEY_FILE)
        if secret_key_write(key_file):
            self.stdout.write(f"Wrote a new secret key to {key_file}")
        changed = make_tree_private(data_dir, leave=(static_root,))
        if changed:
            self.stdout.write(f"Made {changed} files and folders of {data_dir} private")
        self.stdout.write(f"Data directory ready: {settings.DATA_DIR}")
