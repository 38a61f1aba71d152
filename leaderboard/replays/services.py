"""Writes: an episode's animation, made once from its stored frames and kept in storage."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from evaluation.animation import animation_key, episode_animation
from leaderboard.frames.services import frame_png


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
    return path
