"""Share-card images: 1200 x 630 PNGs that a link preview shows (Open Graph, Twitter cards).

Plain Pillow, no Django: a score card (a title, a headline score with its interval, a radar of
the four levels) and an episode card (the episode's frame beside its outcome). The same inputs
give the same bytes.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

from evaluation.deferred import Deferred

if TYPE_CHECKING:
    from PIL import Image, ImageDraw, ImageFont

    Font: TypeAlias = ImageFont.FreeTypeFont | ImageFont.ImageFont
else:
    # Pillow loads with the first card drawn, not in every process that imports the views.
    Image = Deferred("PIL.Image")
    ImageDraw = Deferred("PIL.ImageDraw")
    ImageFont = Deferred("PIL.ImageFont")

WIDTH, HEIGHT = 1200, 630
"""The size link previews expect (Open Graph's 1.91:1)."""
BACKGROUND = (255, 255, 255)
INK = (31, 35, 40)
MUTED = (87, 96, 106)
ACCENT = (11, 94, 176)
FILL = (11, 94, 176, 70)
OUTCOME_COLOURS = {"success": (26, 127, 55), "failure": (180, 35, 24), "error": (138, 75, 0)}


def _font(size: int) -> Font:
    return ImageFont.load_default(size=size)


def _fit(draw: ImageDraw.ImageDraw, text: str, size: int, width: int) -> tuple[str, Font]:
    """``text`` in the largest font up to ``size`` that fits ``width`` (cut with "..." at the
    smallest: the default font has no ellipsis glyph)."""
    for points in range(size, 21, -4):
        font = _font(points)
        if draw.textlength(text, font=font) <= width:
            return text, font
    font = _font(22)
    while text and draw.textlength(text + "...", font=font) > width:
        text = text[:-1]
    return text + "...", font


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def _brand(draw: ImageDraw.ImageDraw) -> None:
    draw.rectangle((0, HEIGHT - 56, WIDTH, HEIGHT), fill=(246, 248, 250))
    draw.text((48, HEIGHT - 44), "MirrorBench", font=_font(30), fill=ACCENT)
    draw.text(
        (250, HEIGHT - 38),
        "mirror self-recognition for multimodal LLMs",
        font=_font(22),
        fill=MUTED,
    )


def score_card_png(
    *,
    title: str,
    subtitle: str,
    headline: str,
    detail: str,
    levels: Sequence[tuple[str, float | None]],
) -> bytes:
    """Return a score card: ``title`` and ``subtitle`` at the top left, ``headline`` (the
    score) and ``detail`` (its interval, episodes) below, and a radar of ``levels`` (label,
    value in [0, 1] or None) at the right."""
    image = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
    draw = ImageDraw.Draw(image, "RGBA")
    text, font = _fit(draw, title, 64, 640)
    draw.text((48, 48), text, font=font, fill=INK)
    text, font = _fit(draw, subtitle, 30, 640)
    draw.text((48, 140), text, font=font, fill=MUTED)
    draw.text((48, 230), headline, font=_font(120), fill=ACCENT)
    text, font = _fit(draw, detail, 30, 640)
    draw.text((48, 390), text, font=font, fill=MUTED)
    _radar(draw, levels, centre=(930, 285), radius=200)
    _brand(draw)
    return _png(image)


def _radar(
    draw: ImageDraw.ImageDraw,
    levels: Sequence[tuple[str, float | None]],
    *,
    centre: tuple[int, int],
    radius: int,
) -> None:
    cx, cy = centre
    count = max(len(levels), 3)

    def point(i: int, r: float) -> tuple[float, float]:
        angle = -math.pi / 2 + 2 * math.pi * i / count
        return cx + r * math.cos(angle), cy + r * math.sin(angle)

    for ring in (0.25, 0.5, 0.75, 1.0):
        draw.polygon([point(i, radius * ring) for i in range(count)], outline=(208, 215, 222))
    for i, (label, _) in enumerate(levels):
        draw.line([centre, point(i, radius)], fill=(208, 215, 222), width=2)
        x, y = point(i, radius + 30)
        font = _font(28)
        width = draw.textlength(label, font=font)
        draw.text((x - width / 2, y - 16), label, font=font, fill=INK)
    values = [max(0.0, min(1.0, v)) if v is not None else 0.0 for _, v in levels]
    if any(v is not None for _, v in levels):
        shape = [point(i, radius * v) for i, v in enumerate(values)]
        draw.polygon(shape, fill=FILL, outline=ACCENT, width=4)
        for x, y in shape:
            draw.ellipse((x - 7, y - 7, x + 7, y + 7), fill=ACCENT)


def episode_card_png(
    *, frame: bytes | None, title: str, subtitle: str, outcome: str, outcome_label: str, detail: str
) -> bytes:
    """Return an episode card: the frame (a PNG, or a placeholder when none is stored) at the
    left, the outcome in its colour, ``title``, ``subtitle`` and ``detail`` at the right."""
    image = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
    draw = ImageDraw.Draw(image, "RGBA")
    side = HEIGHT - 56 - 2 * 24
    box = (24, 24, 24 + side, 24 + side)
    if frame is not None:
        with Image.open(io.BytesIO(frame)) as shown:
            image.paste(
                shown.convert("RGB").resize((side, side), Image.Resampling.LANCZOS), box[:2]
            )
    else:
        draw.rectangle(box, fill=(234, 238, 242))
        draw.text(
            (box[0] + 40, box[1] + side // 2 - 20),
            "frame not rendered yet",
            font=_font(30),
            fill=MUTED,
        )
    left = box[2] + 40
    width = WIDTH - left - 40
    colour = OUTCOME_COLOURS.get(outcome, MUTED)
    text, font = _fit(draw, outcome_label, 56, width)
    draw.text((left, 60), text, font=font, fill=colour)
    text, font = _fit(draw, title, 44, width)
    draw.text((left, 170), text, font=font, fill=INK)
    text, font = _fit(draw, subtitle, 30, width)
    draw.text((left, 240), text, font=font, fill=MUTED)
    text, font = _fit(draw, detail, 30, width)
    draw.text((left, 300), text, font=font, fill=MUTED)
    _brand(draw)
    return _png(image)
