"""Writes: an episode's animation, made once from its stored frames and kept in storage.

Each stored animation has an ``Animation`` row (its size, when last used): animations count in
the frames' disk budget and the sweep evicts the least recently used (``frames_evict``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from evaluation.animation import animation_key, episode_animation
from leaderboard.frames.services import USED_EVERY_S, frame_png
from leaderboard.models import Animation


class FramesMissing(Exception):
    """A frame the animation needs is not stored (evicted or lost since it was checked)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"frame {key} is not stored")
        self.key = key


def animation_path(key: str, fmt: str) -> str:
    """Return the storage path of an animation: ``animations/ab/<key>.<fmt>`` (sharded)."""
    return f"animations/{key[:2]}/{key}.{fmt}"


def episode_animation_store(
    *,
    frame_keys: Sequence[str],
    distances: Sequence[int | None],
    fmt: str,
    charge: Callable[[], None] | None = None,
) -> str:
    """Return the storage path of the animation of views ``frame_keys``, making it first if
    it is not stored: its key is derived from the frame keys (``animation_key``), so each is
    made once. ``charge`` is called before a new one is made, and may refuse it.

    Raises:
        FramesMissing: A frame's PNG is not stored.
    """
    path = animation_path(animation_key(frame_keys, fmt), fmt)
    if default_storage.exists(path):
        animation_used(path)
        return path
    pngs = []
    for key in frame_keys:
        png = frame_png(key)
        if png is None:
            raise FramesMissing(key)
        pngs.append(png)
    if charge is not None:
        charge()
    data = episode_animation(pngs, distances, fmt=fmt)
    if default_storage.exists(path):  # made by another request meanwhile
        animation_used(path)
        return path
    try:
        saved = default_storage.save(path, ContentFile(data))
    except BaseException:
        with contextlib.suppress(Exception):
            default_storage.delete(path)  # never leave a truncated file to pass for made
        raise
    if saved != path:
        # Another request stored it first; the store kept ours under another name.
        default_storage.delete(saved)
    _animation_record(path, size=len(data))
    return path


def _animation_record(path: str, *, size: int) -> None:
    Animation.objects.update_or_create(
        path=path, defaults={"size_bytes": size, "used": timezone.now()}
    )
    cache.set(f"animation-used:{path}", 1, USED_EVERY_S)


def animation_used(path: str) -> None:
    """Note that the stored animation at ``path`` was served now (its place in the eviction
    order; written at most hourly). One stored before animations were counted is counted now."""
    if not cache.add(f"animation-used:{path}", 1, USED_EVERY_S):
        return
    if not Animation.objects.filter(path=path).update(used=timezone.now()):
        with contextlib.suppress(OSError):
            _animation_record(path, size=default_storage.size(path))
