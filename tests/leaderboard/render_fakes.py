"""Fixtures for tests of who renders frames and when, without OpenGL (a pytest plugin loaded
by tests/conftest.py): a render pool of the test's own, and a fake render that records the key
of each frame it makes and returns a tiny PNG."""

from __future__ import annotations

import io

import pytest
from PIL import Image


def tiny_png(side: int = 8, shade: int = 0) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (side, side), (shade, 0, 0)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def own_render_pool(monkeypatch):
    """A render pool of this test's own: frames another test had made are not in its memory."""
    from evaluation.render_pool import RenderPool
    from leaderboard.frames import services as frames_service  # once Django is set up

    pool = RenderPool(1)
    monkeypatch.setattr(frames_service, "render_pool", lambda: pool)
    yield pool
    pool.close()


@pytest.fixture
def renders(monkeypatch) -> list[str]:
    """No OpenGL: each frame rendered is a tiny PNG, its key recorded here in order."""
    from leaderboard.frames import services as frames_service  # once Django is set up

    made: list[str] = []

    def fake(frame, timeout_s=None):
        made.append(frame.key)
        return tiny_png()

    monkeypatch.setattr(frames_service, "_frame_png_render", fake)
    return made
