"""Shared test set-up: headless rendering.

The data directory is chosen before this file is read (pytest-django loads the settings
first): `make test` passes a fresh `MIRRORBENCH_DATA_DIR`; a bare `pytest` uses `var/`, where
the test database is its own file (`test-db.sqlite3`) and never the site's.
"""

import os

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

# The browser fixtures (chromium driven by Playwright) for every test module that uses them;
# pytester for the tests of the suite's own helpers (tests/test_parts.py).
pytest_plugins = ["tests.leaderboard.browser", "pytester"]


@pytest.fixture(autouse=True)
def _empty_cache():
    """Each test starts with no throttle counts and no cached tables: the caches are folders
    shared by the suite, and a flushed database may repeat a data version."""
    from django.core.cache import caches

    from leaderboard.data_version import data_version_cache_clear

    def clear() -> None:
        for alias in ("default", "limits"):
            caches[alias].clear()
        data_version_cache_clear()

    clear()
    yield
    clear()
