"""WhiteNoise's table of static files, scanned once per test process instead of once per test.

Django's test ``Client`` builds a request handler, and so the whole middleware chain, for every
client it makes (each test's ``client`` fixture is a new one). WhiteNoise's middleware scans
every staticfiles finder as it starts (``WHITENOISE_USE_FINDERS``): 185 files, each stat-ed and
given its headers, about 30 ms of CPU per test that sends a request, a minute over the suite.
A served site builds its chain once per process, so it never paid this.

``share_static_index`` makes the scan a process's first middleware of each configuration does
serve the later ones: the same ``StaticFile`` objects, by the same settings.
``tests/test_static_index.py`` checks that a shared table is the one a fresh scan builds.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from whitenoise.middleware import WhiteNoiseMiddleware

_SCAN = WhiteNoiseMiddleware.add_files_from_finders
_TABLES: dict[tuple[Any, ...], dict[str, Any]] = {}


def _key(middleware: WhiteNoiseMiddleware) -> tuple[Any, ...]:
    """Everything a table's entries depend on: the finders and their folders, and the
    middleware's own settings that go into each file's headers."""
    return (
        tuple(settings.STATICFILES_FINDERS),
        tuple(str(folder) for folder in settings.STATICFILES_DIRS),
        tuple(settings.INSTALLED_APPS),
        middleware.static_prefix,
        middleware.max_age,
        middleware.allow_all_origins,
        middleware.charset,
        middleware.add_headers_function,
        middleware.index_file,
        repr(getattr(settings, "WHITENOISE_MIMETYPES", None)),
        # Which files are immutable (cached forever) asks the static files' storage.
        repr(getattr(settings, "WHITENOISE_IMMUTABLE_FILE_TEST", None)),
        repr(settings.STORAGES.get("staticfiles")),
    )


def _add_files_from_finders(self: WhiteNoiseMiddleware) -> None:
    key = _key(self)
    if key not in _TABLES:
        # WhiteNoise's own scan, into an empty table: what the finders serve, nothing else.
        collected, self.files = self.files, {}
        _SCAN(self)
        _TABLES[key], self.files = self.files, collected
    self.files.update(_TABLES[key])


def share_static_index() -> None:
    """Scan the finders once per process and configuration (idempotent)."""
    WhiteNoiseMiddleware.add_files_from_finders = _add_files_from_finders


def scan_afresh(middleware: WhiteNoiseMiddleware) -> None:
    """What WhiteNoise itself does: for the check that a shared table is the same."""
    _SCAN(middleware)
