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

It also says how many workers ``-n auto`` starts: two more than the cores (``auto_workers``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA_DIR_ENV = "MIRRORBENCH_DATA_DIR"
EXTRA_WORKERS = 2
"""Workers ``-n auto`` starts beyond one per core. About a third of a worker's time goes on
waiting, not computing: for a fault's outage to be noticed, a stale episode to be taken over, a
server or browser to answer. The extra workers compute meanwhile. On 2 cores, 4 workers ran the
suite in 521 s where 2 took 645 s (the same revision, a quiet machine)."""


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


def auto_workers(cores: int) -> int:
    """Return the workers ``-n auto`` starts on a machine with ``cores`` cores."""
    return max(cores, 1) + EXTRA_WORKERS


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: ``auto_workers`` of the cores this process may run on, unless
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` names a number (then xdist's own hook answers)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return auto_workers(len(os.sched_getaffinity(0)))
