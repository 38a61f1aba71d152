"""An episode's views as one animation, each with its step and distance drawn on it."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageChops

from evaluation.animation import (
    FRAME_MS,
    LAST_FRAME_MS,
    animation_key,
    episode_animation,
    view_label,
)


def _png(shade: int, side: int = 64) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (side, side), (shade, 90, 160)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("fmt", ["webp", "gif"])
def test_every_view_is_one_frame_of_a_looping_animation(fmt):
    frames = [_png(shade) for shade in (10, 60, 110, 160)]
    data = episode_animation(frames, [7, 6, 6, 2], fmt=fmt)
    image = Image.open(io.BytesIO(data))
    assert image.format == fmt.upper()
    assert image.n_frames == 4 and image.size == (64, 64)
    durations = []
    for index in range(image.n_frames):
        image.seek(index)
        image.load()  # WebP reads a frame's timing with its pixels
        durations.append(image.info["duration"])
    assert durations == [FRAME_MS] * 3 + [LAST_FRAME_MS]


def test_the_label_is_drawn_on_the_bottom_band_only():
    plain = Image.open(io.BytesIO(_png(10))).convert("RGB")
    drawn = Image.open(io.BytesIO(episode_animation([_png(10)], [5], fmt="webp"))).convert("RGB")
    box = ImageChops.difference(plain, drawn).point(lambda v: 255 if v > 40 else 0).getbbox()
    assert box is not None
    assert box[1] > 64 // 2  # the upper half, where the hand and mirror are, is untouched


def test_labels_say_the_step_and_the_distance():
    assert view_label(0, 12, 9) == "start / 12   distance 9"
    assert view_label(12, 12, 1) == "step 12 / 12   distance 1 (at the mark)"
    assert view_label(3, 12, None) == "step 3 / 12"


def test_the_key_follows_the_frames_and_the_format():
    keys = ["a" * 40, "b" * 40]
    assert animation_key(keys, "webp") == animation_key(list(keys), "webp")
    assert animation_key(keys, "webp") != animation_key(keys, "gif")
    assert animation_key(keys, "webp") != animation_key(keys[::-1], "webp")


def test_a_format_other_than_webp_or_gif_is_refused():
    with pytest.raises(ValueError, match="webp, gif"):
        episode_animation([_png(0)], [1], fmt="png")
