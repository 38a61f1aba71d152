"""Play's prefetch (issue 37, "play feels instant"): while a player reads a step, the views the
next move can lead to are made, the likeliest first, and their files saved, so that the key
press finds its frame stored; rows are marked by request threads, and a saved view nobody asked
for still counts in the disk budget."""

from __future__ import annotations

import pytest

from leaderboard.boards.entries import benchmark_current
from leaderboard.frames import services as frames_service
from leaderboard.frames.selectors import frame_exists
from leaderboard.frames.services import (
    FrameSpec,
    frame_render_now,
    frames_prefetch,
    frames_prefetch_wait,
    frames_register,
    frames_stored_bytes,
)
from leaderboard.models import Frame, Scene
from leaderboard.play import services as play_service
from simulation.catalogue import get_scene
from simulation.dynamics import Action, apply_action

pytestmark = pytest.mark.django_db
SCENE = "male_1-mano_white-splash"


@pytest.fixture(autouse=True)
def _own_pool_and_media(own_render_pool, settings, tmp_path):
    """A render pool (``tests/leaderboard/render_fakes.py``) and a media folder of its own."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return own_render_pool


def _scene() -> Scene:
    return Scene.objects.get(scene_id=SCENE, benchmark=benchmark_current())


def _views(cells) -> list[str]:
    return frames_register(FrameSpec(_scene(), cell, 32) for cell in cells)


def test_the_views_are_made_in_the_order_given_and_their_files_saved(renders):
    keys = _views([(0, 0, 1), (0, 0, 2), (0, 1, 0), (1, 0, 0)])
    wanted = [keys[2], keys[0], keys[3], keys[1]]
    assert frames_prefetch(wanted) == 4
    assert frames_prefetch_wait(30)
    assert renders == wanted
    # Saved, not yet recorded: rows are written by request threads.
    assert all(frame_exists(key) for key in keys)
    assert Frame.objects.filter(pk__in=keys, stored__isnull=False).count() == 0
    # The key press: the frame's files are there, recorded at no render.
    assert frame_render_now(wanted[0])
    assert len(renders) == 4
    assert Frame.objects.get(pk=wanted[0]).stored is not None
    # Files saved but out of the render pool's memory: recorded, not made again (nor charged).
    frames_service.render_pool().forget(wanted[1])
    assert frame_render_now(wanted[1], charge=_no_charge)
    assert len(renders) == 4
    # The next step's prefetch records the views nobody asked for: the disk budget counts them.
    frames_prefetch([])
    stored = Frame.objects.filter(pk__in=keys, stored__isnull=False)
    assert stored.count() == 4
    assert frames_stored_bytes() == sum(f.png_bytes + f.webp_bytes + f.thumb_bytes for f in stored)


def test_the_view_of_the_last_move_again_is_made_first(monkeypatch, renders):
    asked: list[list[str]] = []
    monkeypatch.setattr(play_service, "frames_prefetch", lambda keys: asked.append(list(keys)))
    scene = _scene()
    engine = get_scene(SCENE)
    here = (0, 0, 0)
    for last in (Action.FORWARD, Action.LEFT, None):
        asked.clear()
        with _on_commit():
            play_service._next_views_prefetch(scene, here, 32, last=last)
        (keys,) = asked
        first = apply_action(engine, here, last or Action(1)).cell
        assert keys[0] == FrameSpec(scene, first, 32).key
        others = [apply_action(engine, here, action).cell for action in Action]
        assert sorted(keys) == sorted(
            {FrameSpec(scene, c, 32).key for c in others} - {FrameSpec(scene, here, 32).key}
        )


def _on_commit():
    from django.test import TestCase

    return TestCase.captureOnCommitCallbacks(execute=True)


def _no_charge() -> None:
    raise AssertionError("a frame whose files are saved was charged as a new render")
