"""A data directory of its own for each pytest-xdist worker (``make test`` runs ``-n auto``).

Everything a test writes outside its ``tmp_path`` lives under the data directory: the test
database (``test-db.sqlite3``), the caches (the "limits" cache holds every throttle count), the
embedded broker's folders, media, and the data directory that the workers, web servers and beat
a test starts are given. Two xdist workers sharing it would see each other's rows, messages and
counts, so each works in ``<data dir>/xdist-<worker id>`` instead.

pytest-django reads the settings, and with them ``MIRRORBENCH_DATA_DIR``, before any conftest
is loaded: this module is loaded earlier, with ``-p`` in pyproject.toml's ``addopts``, and only
changes the environment. xdist names the worker (``PYTEST_XDIST_WORKER``) before the worker's
pytest starts; without xdist (``-n 0``, ``-p no:xdist``) nothing changes.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "MIRRORBENCH_DATA_DIR"


def worker_data_dir(environ: dict[str, str] | os._Environ[str]) -> Path | None:
    """Return the data directory of this xdist worker, or None outside a worker.

    It sits in the directory the run was given (``MIRRORBENCH_DATA_DIR``, else ``var/``), which
    ``make test`` removes at the end, private to this account as the data directory is.
    """
    worker = environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return None
    base = environ.get(DATA_DIR_ENV) or str(Path(__file__).resolve().parents[1] / "var")
    return Path(base).expanduser().resolve() / f"xdist-{worker}"


def _use_worker_data_dir() -> None:
    folder = worker_data_dir(os.environ)
    if folder is None:
        return
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.environ[DATA_DIR_ENV] = str(folder)


_use_worker_data_dir()
