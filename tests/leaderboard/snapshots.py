"""The rows a module's transactional tests share, made once and put back before each test.

A test with the live server is transactional (``django_db(transaction=True)``): it ends by
emptying every table, so each next test of its module made the same rows again. For the site's
browser tests that is the paper's rows and two full runs, about 2 s of CPU a test. On SQLite, the
test database is copied after the first test made them (SQLite's backup API, into memory) and
copied back before each later one, in milliseconds. On another database they are made again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Generic, TypeVar

from django.contrib.contenttypes.models import ContentType
from django.db import connection

T = TypeVar("T")


class DatabaseSnapshot(Generic[T]):
    """What ``make`` wrote to the test database, and what it returned, kept for the next tests.

    ``make`` should return plain values (primary keys, names), not model instances: a test may
    change an instance it was given, and the next test must not see that.
    """

    def __init__(self) -> None:
        self._copy: sqlite3.Connection | None = None
        self._made: T | None = None

    def rows(self, make: Callable[[], T]) -> T:
        """Put the rows back if ``make`` ran before, else run it; return what it returned."""
        if self._copy is not None:
            self._restore(self._copy)
            return self._made  # type: ignore[return-value]
        made = make()
        if connection.vendor == "sqlite":
            connection.ensure_connection()
            copy = sqlite3.connect(":memory:", check_same_thread=False)
            connection.connection.backup(copy)
            self._copy, self._made = copy, made
        return made

    def close(self) -> None:
        if self._copy is not None:
            self._copy.close()
            self._copy = None

    @staticmethod
    def _restore(copy: sqlite3.Connection) -> None:
        connection.ensure_connection()
        copy.backup(connection.connection)
        # Emptying the tables made the content types again under new ids, which the cache of
        # content types now holds; the copy has the old ones back.
        ContentType.objects.clear_cache()
