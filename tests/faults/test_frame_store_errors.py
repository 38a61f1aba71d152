"""Fast checks behind the fault tests: a frame store that fails for a while is waited for, one
that keeps failing raises ``FrameStoreError`` and leaves no file that would pass for stored, and
a frame whose storing failed is not kept in the render pool's memory."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from PIL import Image

from leaderboard.frames import services as frames
from leaderboard.frames.selectors import FRAME_VARIANTS, frame_exists, frame_path

pytestmark = pytest.mark.django_db


def png_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    monkeypatch.setattr(frames, "STORE_BACKOFF_S", 0.0)


def failing_saves(monkeypatch, failures: int, *, partial: bool) -> list[str]:
    """Make the next ``failures`` saves fail as a full disk does, after writing a piece."""
    real_save = default_storage.save
    calls: list[str] = []

    def save(name, content, *args, **kwargs):
        calls.append(name)
        if len(calls) <= failures:
            if partial:
                path = Path(default_storage.path(name))
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(b"\x89PNG half")
            raise OSError(28, "No space left on device")
        return real_save(name, content, *args, **kwargs)

    monkeypatch.setattr(default_storage, "save", save)
    return calls


def test_a_store_that_fails_for_a_while_is_waited_for(monkeypatch):
    key = "f" * 40
    calls = failing_saves(monkeypatch, 3, partial=True)
    assert frames.frame_store(key=key, png=png_bytes()) is True
    assert frame_exists(key) and len(calls) == 3 + len(FRAME_VARIANTS)
    for variant in FRAME_VARIANTS:
        with default_storage.open(frame_path(key, variant), "rb") as handle:
            Image.open(handle).verify()  # whole, not the piece written before the failure


def test_a_store_that_keeps_failing_raises_and_leaves_nothing(monkeypatch):
    key = "e" * 40
    failing_saves(monkeypatch, 1000, partial=True)
    with pytest.raises(frames.FrameStoreError, match="No space left on device"):
        frames.frame_store(key=key, png=png_bytes())
    assert not any(default_storage.exists(frame_path(key, v)) for v in FRAME_VARIANTS)
    assert frames.frame_png(key) is None


def test_a_frame_that_could_not_be_stored_is_rendered_again_by_whoever_asks_next():
    from evaluation.runner import FrameSource
    from simulation.catalogue import get_scene

    stored: list[str] = []
    fail = [True]

    def on_render(key: str, png: bytes) -> None:
        if fail[0]:
            raise frames.FrameStoreError("the store is down")
        stored.append(key)

    scene = get_scene("tienkung-allegro-logo_0")
    source = FrameSource(16, on_render=on_render, threads=1)
    try:
        with pytest.raises(frames.FrameStoreError):
            source.png(scene, (0, 0, 0))
        fail[0] = False
        _, key = source.png(scene, (0, 0, 0))
    finally:
        source.pool.close()
    assert stored == [key]


def test_a_frame_two_processes_store_at_once_is_kept_once(monkeypatch, settings, tmp_path):
    """The web and a render worker (or two workers' episodes) store one frame at once: the
    other's whole store lands between this one's look and its save, and the store, which
    never overwrites, would keep this copy under another name, never to be served or evicted."""
    settings.MEDIA_ROOT = tmp_path / "media"
    key = "d" * 40
    real_save = default_storage.save
    other: list[bool] = []

    def save(name, content, *args, **kwargs):
        if not other:
            other.append(True)
            assert frames.frame_store(key=key, png=png_bytes())  # the other process, all of it
        return real_save(name, content, *args, **kwargs)

    monkeypatch.setattr(default_storage, "save", save)
    frames.frame_store(key=key, png=png_bytes())
    folder = frame_path(key, "png").rsplit("/", 1)[0]
    assert sorted(default_storage.listdir(folder)[1]) == sorted(
        frame_path(key, variant).rsplit("/", 1)[1] for variant in FRAME_VARIANTS
    )


def test_registering_a_frame_while_the_store_fails_registers_it_unmarked(monkeypatch):
    """A model run registers each step's frame inside the step's transaction: a store that
    answers 503 then (botocore's ClientError) must not fail the step, and so the episode."""
    from botocore.exceptions import ClientError

    from leaderboard.boards.entries import benchmark_current
    from leaderboard.models import Frame

    scene = benchmark_current().scenes.get(scene_id="tienkung-allegro-logo_0")
    key = frames.FrameSpec(scene, (3, 1, 4), 16).key
    assert frames.frame_store(key=key, png=png_bytes())
    Frame.objects.filter(pk=key).delete()  # stored by the run, not registered yet

    def exists(name):
        raise ClientError({"Error": {"Code": "503", "Message": "Slow Down"}}, "HeadObject")

    monkeypatch.setattr(default_storage, "exists", exists)
    assert frames.frames_register([frames.FrameSpec(scene, (3, 1, 4), 16)]) == [key]
    assert Frame.objects.get(pk=key).stored is None  # left for whoever finds it next
    monkeypatch.undo()
    assert frames.frames_register([frames.FrameSpec(scene, (3, 1, 4), 16)]) == [key]
    assert frames.frames_render([key]).reused == 1
    assert Frame.objects.get(pk=key).stored is not None
