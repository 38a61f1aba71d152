"""An episode's frames as one animation (animated WebP or GIF), for slides.

Each frame carries its step and its distance to the mark, drawn on a band along its bottom
edge. The drawing is part of ``ANIMATION_VERSION``, which the site's cache key holds with the
frame keys, so a change here never serves an animation drawn the old way.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evaluation.deferred import Deferred
from evaluation.metrics import D_TH

if TYPE_CHECKING:
    from PIL import Image, ImageDraw, ImageFont
else:
    # Pillow loads with the first animation made, not in every process that imports the views.
    Image = Deferred("PIL.Image")
    ImageDraw = Deferred("PIL.ImageDraw")
    ImageFont = Deferred("PIL.ImageFont")

ANIMATION_VERSION = "1"
FORMATS = {"webp": "image/webp", "gif": "image/gif"}
"""The formats an animation is made in, with their media types."""
FRAME_MS = 800
"""How long each view is shown (the replay's 1x speed)."""
LAST_FRAME_MS = 2400
"""The last view stays longer, before the animation starts again."""
WEBP_QUALITY = 80


def animation_key(frame_keys: Sequence[str], fmt: str) -> str:
    """Return the content key of the animation of views ``frame_keys`` in ``fmt``.

    The frame keys fix every pixel and every label (a view's cell fixes its distance), so the
    same episode's animation is made once.
    """
    text = f"mirrorbench-animation {ANIMATION_VERSION} {fmt}\n" + "\n".join(frame_keys)
    return hashlib.sha1(text.encode()).hexdigest()


def view_label(index: int, last: int, distance: int | None) -> str:
    """Return the words drawn on view ``index`` of ``last``."""
    where = "start" if index == 0 else f"step {index}"
    text = f"{where} / {last}"
    if distance is not None:
        text += f"   distance {distance}"
        if distance <= D_TH:
            text += " (at the mark)"
    return text


def _labelled(png: bytes, label: str) -> Image.Image:
    image = Image.open(io.BytesIO(png)).convert("RGB")
    side = min(image.size)
    font = ImageFont.load_default(size=max(8, side // 22))
    draw = ImageDraw.Draw(image, "RGBA")
    left, top, _, bottom = draw.textbbox((0, 0), label, font=font)
    pad = max(2, side // 64)
    band = bottom - top + 2 * pad
    draw.rectangle((0, image.height - band, image.width, image.height), fill=(0, 0, 0, 170))
    draw.text((pad - left, image.height - band + pad - top), label, font=font, fill="white")
    return image


def episode_animation(
    frames: Sequence[bytes], distances: Sequence[int | None], *, fmt: str = "webp"
) -> bytes:
    """Return the views ``frames`` (PNG, one per view) as one looping animation in ``fmt``,
    each view labelled with its step and ``distances`` entry."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if not frames or len(frames) != len(distances):
        raise ValueError(f"one distance per frame: {len(frames)} frames, {len(distances)}")
    last = len(frames) - 1
    images = [
        _labelled(png, view_label(i, last, distance))
        for i, (png, distance) in enumerate(zip(frames, distances, strict=True))
    ]
    durations = [FRAME_MS] * last + [LAST_FRAME_MS]
    buffer = io.BytesIO()
    options: dict[str, object] = {"save_all": True, "append_images": images[1:], "loop": 0}
    if fmt == "webp":
        options.update(quality=WEBP_QUALITY, method=1)
    else:
        # GIF: one palette per frame; no dithering keeps the labels crisp.
        images = [image.quantize(colors=256, dither=Image.Dither.NONE) for image in images]
        options.update(append_images=images[1:], optimize=False, disposal=1)
    images[0].save(buffer, format=fmt.upper(), duration=durations, **options)
    return buffer.getvalue()
