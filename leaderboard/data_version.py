"""The data version: a token that every change to what the tables show replaces.

Rendered tables, CSV rows and chart figures are cached under keys that contain the token
(``data_version_cached``), so replacing it makes every cached copy stale at once. The token
lives in one database row (``DataVersion``), which every web process, worker and machine
shares; the cached copies live in the Django cache (files under the data directory, or Redis
with ``MIRRORBENCH_CACHE_URL``), which need not be shared: a machine that has not seen a token
builds its own copy.

Call ``data_version_bump()`` inside the transaction that changes what a table shows: a new
result, a listing, a visibility change, a moderation decision, an entry's name or kind. The
new token then commits with the data: a request that reads the new token reads the new data,
and a transaction that rolls back takes its token with it. Tokens are random, never counted,
so a token that rolled back is never issued again for other data.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.cache import cache

from leaderboard.models import DataVersion

T = TypeVar("T")

CACHE_TIMEOUT_S = 24 * 3600
"""How long a cached copy may stay unread; a stale one is simply never asked for again."""
_LOCAL_SIZE = 32
_ROW = 1


def data_version() -> str:
    """Return the current data version token ("" before the first bump); one query."""
    token = DataVersion.objects.filter(pk=_ROW).values_list("token", flat=True).first()
    return token or ""


def data_version_bump() -> str:
    """Replace the data version token: every cached table, CSV and chart is rebuilt on its
    next request. Return the new token.

    One conditional update of one row: safe with any number of processes and machines (two
    bumps at once both leave a token that no cached copy was made with).
    """
    token = uuid.uuid4().hex
    if not DataVersion.objects.filter(pk=_ROW).update(token=token):
        # The first bump (or a flushed test database): make the row, unless another process
        # has just made it, then set the token either way.
        DataVersion.objects.bulk_create([DataVersion(pk=_ROW, token=token)], ignore_conflicts=True)
        DataVersion.objects.filter(pk=_ROW).update(token=token)
    return token


class _Recent:
    """The process's most recently used copies, in front of the shared cache.

    Keys contain the data version, so a copy here is never stale: a bump changes the keys.
    """

    def __init__(self, size: int) -> None:
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


_recent = _Recent(_LOCAL_SIZE)


def cache_key(name: str, *parts: object, version: str | None = None) -> str:
    """Return the cache key of ``name`` for ``parts`` at the data version (current if None)."""
    digest = hashlib.sha256(repr(parts).encode()).hexdigest()[:32]
    token = data_version() if version is None else version
    return f"mirrorbench:{name}:{token or 'none'}:{digest}"


def data_version_cached(name: str, parts: tuple[object, ...], build: Callable[[], T]) -> T:
    """Return ``build()``'s value for ``parts``, cached until the next data version bump.

    ``parts`` must name everything the value depends on (the table, the query): never the
    user, so only what every visitor sees may be cached this way.
    """
    key = cache_key(name, *parts)
    value = _recent.get(key)
    if value is not None:
        return value
    value = cache.get(key)
    if value is None:
        value = build()
        cache.set(key, value, CACHE_TIMEOUT_S)
    _recent.put(key, value)
    return value


def data_version_cache_clear() -> None:
    """Forget this process's recent copies (tests that change rows behind the services)."""
    _recent.clear()
