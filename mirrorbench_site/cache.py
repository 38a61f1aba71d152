"""The embedded caches: Django's file cache, made when first written to rather than when opened,
and the limits' cache, which never evicts a live entry.

Django's ``FileBasedCache`` creates its folder as soon as the cache object exists (a system
check is enough); reading the settings must write nothing (``manage.py prepare_data_dir``
makes the data directory), and the folder is made again on every write anyway.

Two aliases (settings ``CACHES``): ``default`` holds what may be thrown away, rendered tables
and charts, and culls entries at random when full; ``limits`` holds the state of every limit,
the throttles' histories and the verification slots among them, where no other traffic can
push it out (``limits_cache``).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from typing import Any, BinaryIO

from django.core.cache import caches
from django.core.cache.backends.base import DEFAULT_TIMEOUT, BaseCache
from django.core.cache.backends.filebased import FileBasedCache
from django.utils.connection import ConnectionProxy

LIMITS = "limits"
limits_cache: Any = ConnectionProxy(caches, LIMITS)
"""The cache of the limits' state (alias ``limits``): throttles, slots, marks of work queued."""


class LazyFileBasedCache(FileBasedCache):
    """A file cache whose folder appears with its first entry."""

    def __init__(self, dir: str, params: dict[str, Any]) -> None:
        BaseCache.__init__(self, params)
        self._dir = os.path.abspath(dir)


class LimitsFileCache(LazyFileBasedCache):
    """The limits' file cache: an entry goes only when it expires or is deleted.

    Past ``MAX_ENTRIES`` files it deletes expired entries (at most once every
    ``SWEEP_EVERY_S`` per process), never live ones, so no amount of other traffic can reset a
    limit. ``add`` is atomic across processes: the entry is linked into place only if no live
    one is there, so two requests never both take one slot.
    """

    SWEEP_EVERY_S = 60.0

    # FileBasedCache's own helpers, which django-stubs leaves out.
    _list_cache_files: Callable[[], list[str]]
    _is_expired: Callable[[BinaryIO], bool]
    _createdir: Callable[[], None]
    _key_to_file: Callable[[Any, int | None], str]
    _write_content: Callable[[BinaryIO, Any, Any], None]

    def __init__(self, dir: str, params: dict[str, Any]) -> None:
        super().__init__(dir, params)
        self._next_sweep = 0.0

    def _cull(self) -> None:
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self.SWEEP_EVERY_S
        names = self._list_cache_files()
        if len(names) < self._max_entries:
            return
        for name in names:
            try:
                with open(name, "rb") as entry:
                    self._is_expired(entry)  # deletes the file when it has expired
            except FileNotFoundError:
                pass

    def add(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None
    ) -> bool:
        if self.has_key(key, version):  # an expired entry is deleted here
            return False
        self._createdir()
        name = self._key_to_file(key, version)
        self._cull()
        fd, tmp_path = tempfile.mkstemp(dir=self._dir)
        try:
            with open(fd, "wb") as tmp:
                self._write_content(tmp, timeout, value)
            try:
                os.link(tmp_path, name)
            except FileExistsError:
                return False  # another process has just added it
            return True
        finally:
            os.remove(tmp_path)
