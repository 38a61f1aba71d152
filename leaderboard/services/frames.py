"""Writes: rendered frames, content-addressed PNG + WebP in Django storage (local or S3)."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from PIL import Image

from leaderboard.models import Episode
from leaderboard.selectors import episode_cells, frame_exists, frame_path
from simulation.catalogue import Scene, get_scene
from simulation.dynamics import Vec3
from simulation.render import Renderer, frame_key, renderer_version

WEBP_QUALITY = 80


def frame_store(*, key: str, png: bytes) -> bool:
    """Store a frame's PNG and its WebP under its key; return False if it was already there."""
    if frame_exists(key):
        return False
    webp = io.BytesIO()
    # method 1: a fast encoder setting; a viewer's WebP need not be the smallest possible.
    Image.open(io.BytesIO(png)).convert("RGB").save(
        webp, format="WEBP", quality=WEBP_QUALITY, method=1
    )
    for extension, data in (("png", png), ("webp", webp.getvalue())):
        path = frame_path(key, extension)
        if not default_storage.exists(path):
            default_storage.save(path, ContentFile(data))
    return True


@dataclass
class FrameCount:
    rendered: int = 0
    reused: int = 0


def _default_renderer() -> Renderer:
    from simulation.mujoco_backend import MujocoRenderer

    return MujocoRenderer()


_local = threading.local()


def _thread_renderer(scene: Scene, make_renderer: Callable[[], Renderer]) -> Renderer:
    """Return this thread's renderer with ``scene`` loaded (an OpenGL context is per thread).

    A render worker keeps one renderer per thread for its whole life and reloads it only when
    the scene changes: making a context and compiling a scene cost more than a frame.
    """
    cached = getattr(_local, "renderer", None)
    if cached is None or _local.factory is not make_renderer:
        if cached is not None:
            cached.close()
        cached = make_renderer()
        _local.renderer, _local.factory, _local.scene_id = cached, make_renderer, None
    if _local.scene_id != scene.id:
        cached.load(scene)
        _local.scene_id = scene.id
    return cached


def frames_render(
    *,
    scene_id: str,
    cells: Iterable[Vec3],
    size: int,
    make_renderer: Callable[[], Renderer] = _default_renderer,
) -> FrameCount:
    """Render and store the frames of ``scene_id`` at ``cells`` that are not stored yet."""
    from evaluation.runner import encode_png

    scene: Scene = get_scene(scene_id)
    version = renderer_version()
    count = FrameCount()
    for cell in dict.fromkeys(cells):
        key = frame_key(version, scene.id, cell, size)
        if frame_exists(key):
            count.reused += 1
            continue
        renderer = _thread_renderer(scene, make_renderer)
        renderer.set_hand(cell)
        frame_store(key=key, png=encode_png(renderer.render(size)))
        count.rendered += 1
    return count


def episode_frames_render(
    *, episode_id: int, size: int, make_renderer: Callable[[], Renderer] = _default_renderer
) -> FrameCount:
    """Render and store the frames of an episode that are not stored yet."""
    episode = Episode.objects.select_related("scene").get(pk=episode_id)
    return frames_render(
        scene_id=episode.scene.scene_id,
        cells=episode_cells(episode),
        size=size,
        make_renderer=make_renderer,
    )
