"""The embedded cache: Django's file cache, made when first written to rather than when opened.

Django's ``FileBasedCache`` creates its folder as soon as the cache object exists (a system
check is enough); reading the settings must write nothing (``manage.py prepare_data_dir``
makes the data directory), and the folder is made again on every write anyway.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.filebased import FileBasedCache


class LazyFileBasedCache(FileBasedCache):
    """A file cache whose folder appears with its first entry."""

    def __init__(self, dir: str, params: dict[str, Any]) -> None:
        BaseCache.__init__(self, params)
        self._dir = os.path.abspath(dir)
