"""Procedural textures for the six MirrorBench marks (``protocol.md``, section "Marks").

A mark is a flat square texture stuck on the body's chest. Every texture is drawn here from
fixed geometry (no files, no randomness), supersampled and downscaled so edges are smooth, and
is identical on every call. Row 0 is the top of the mark and column 0 its left edge, both as
seen by someone facing the mark (not as seen in the mirror).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw

from simulation.catalogue import MARKS

MARK_IDS: tuple[str, ...] = tuple(MARKS)

MARK_DESCRIPTIONS: dict[str, str] = {m.id: m.description for m in MARKS.values()}
"""What each texture shows; the catalogue owns the wording that the prompts use."""

MIN_SIZE = 16
"""Smallest texture edge, in pixels, that :func:`mark_texture` accepts."""

Point = tuple[float, float]
RGB = tuple[int, int, int]


def mark_texture(mark_id: str, size: int = 256) -> np.ndarray:
    """Draws one mark as a square RGB image.

    Args:
        mark_id: One of :data:`MARK_IDS`.
        size: Edge length in pixels; at least :data:`MIN_SIZE`.

    Returns:
        A fresh ``(size, size, 3)`` ``uint8`` array; row 0 is the top of the mark and column 0
        its left edge as seen when facing it. The same arguments always give the same pixels.

    Raises:
        KeyError: ``mark_id`` is not one of :data:`MARK_IDS` (the message lists them).
        ValueError: ``size`` is below :data:`MIN_SIZE`.
    """
    if mark_id not in _PAINTERS:
        raise KeyError(f"unknown mark {mark_id!r}; valid marks are {', '.join(MARK_IDS)}")
    if size < MIN_SIZE:
        raise ValueError(f"mark size must be at least {MIN_SIZE} pixels, got {size}")
    return _cached_texture(mark_id, int(size)).copy()


@lru_cache(maxsize=64)
def _cached_texture(mark_id: str, size: int) -> np.ndarray:
    canvas = max(1, min(4, 2048 // size)) * size
    image = _PAINTERS[mark_id](canvas)
    if canvas != size:
        image = image.resize((size, size), Image.Resampling.LANCZOS)
    array = np.asarray(image.convert("RGB"), dtype=np.uint8)
    array.setflags(write=False)
    return array


def _scaled(points: Sequence[Point], s: int) -> list[Point]:
    """Maps unit-square points (x right, y down) to canvas pixels."""
    return [(x * s, y * s) for x, y in points]


def _ellipse(cx: float, cy: float, rx: float, ry: float, angle: float = 0.0) -> list[Point]:
    """Polygon of an ellipse centred at ``(cx, cy)``, rotated by ``angle`` radians."""
    ca, sa = math.cos(angle), math.sin(angle)
    points = []
    for k in range(96):
        t = 2 * math.pi * k / 96
        x, y = rx * math.cos(t), ry * math.sin(t)
        points.append((cx + x * ca - y * sa, cy + x * sa + y * ca))
    return points


def _polar(cx: float, cy: float, radius: Callable[[float], float], n: int = 360) -> list[Point]:
    """Polygon of the closed curve ``r = radius(theta)`` around ``(cx, cy)``."""
    thetas = (2 * math.pi * k / n for k in range(n))
    return [(cx + radius(t) * math.cos(t), cy + radius(t) * math.sin(t)) for t in thetas]


def _disc(draw: ImageDraw.ImageDraw, s: int, cx: float, cy: float, r: float, fill: RGB) -> None:
    draw.ellipse([(cx - r) * s, (cy - r) * s, (cx + r) * s, (cy + r) * s], fill=fill)


def _splash(s: int) -> Image.Image:
    red: RGB = (205, 20, 30)
    image = Image.new("RGB", (s, s), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    cx, cy = 0.5, 0.52

    def blob(t: float) -> float:
        return 0.2 * (1 + 0.1 * math.sin(3 * t + 0.4) + 0.07 * math.sin(5 * t + 1.3))

    draw.polygon(_scaled(_polar(cx, cy, blob), s), fill=red)
    # Spikes: (direction in degrees, tip distance, tip radius).
    for deg, reach, tip in [(-100, 0.37, 0.045), (-62, 0.27, 0.03), (-30, 0.38, 0.04),
                            (12, 0.3, 0.05), (62, 0.39, 0.045), (100, 0.29, 0.03),
                            (140, 0.38, 0.055), (185, 0.3, 0.035), (228, 0.39, 0.045)]:  # fmt: skip
        a = math.radians(deg)
        ux, uy, nx, ny = math.cos(a), math.sin(a), -math.sin(a), math.cos(a)
        base, half = 0.12, 0.075
        tx, ty = cx + reach * ux, cy + reach * uy
        draw.polygon(
            _scaled(
                [
                    (cx + base * ux + half * nx, cy + base * uy + half * ny),
                    (tx + 0.8 * tip * nx, ty + 0.8 * tip * ny),
                    (tx - 0.8 * tip * nx, ty - 0.8 * tip * ny),
                    (cx + base * ux - half * nx, cy + base * uy - half * ny),
                ],
                s,
            ),
            fill=red,
        )
        _disc(draw, s, tx, ty, tip, red)
    for deg, dist, r in [
        (-80, 0.42, 0.025),
        (35, 0.41, 0.03),
        (118, 0.42, 0.02),
        (205, 0.42, 0.028),
    ]:
        a = math.radians(deg)
        _disc(draw, s, cx + dist * math.cos(a), cy + dist * math.sin(a), r, red)
    return image


def _leaf_0(s: int) -> Image.Image:
    green: RGB = (22, 92, 42)
    image = Image.new("RGB", (s, s), (250, 251, 247))
    draw = ImageDraw.Draw(image)
    bx, by = 0.5, 0.64
    draw.line(_scaled([(bx, by), (0.47, 0.8), (0.42, 0.92)], s), fill=green, width=round(0.04 * s))
    _disc(draw, s, 0.42, 0.92, 0.02, green)
    for deg in (-58.0, 0.0, 58.0):
        a = math.radians(deg - 90)
        reach = 0.24 if deg == 0 else 0.2
        lobe = _ellipse(bx + reach * math.cos(a), by + reach * math.sin(a), 0.2, 0.13, a)
        draw.polygon(_scaled(lobe, s), fill=green)
    _disc(draw, s, bx, by - 0.04, 0.12, green)
    return image


def _leaf_1(s: int) -> Image.Image:
    image = Image.new("RGB", (s, s), (188, 224, 246))
    draw = ImageDraw.Draw(image)
    angle = math.radians(-50)  # leaf axis from base (lower left) to tip (upper right)
    bx, by, length = 0.25, 0.78, 0.72
    ux, uy, nx, ny = math.cos(angle), math.sin(angle), -math.sin(angle), math.cos(angle)

    def at(along: float, across: float) -> Point:
        return bx + along * ux + across * nx, by + along * uy + across * ny

    def half_width(f: float) -> float:
        return 0.2 * math.sin(math.pi * f) ** 0.8 * (1 - 0.3 * f)

    fs = [k / 60 for k in range(61)]
    outline = [at(f * length, half_width(f)) for f in fs]
    outline += [at(f * length, -half_width(f)) for f in reversed(fs)]
    draw.line(_scaled([at(-0.14, 0.02), at(0.02, 0.0)], s), fill=(60, 120, 40),
              width=round(0.03 * s))  # fmt: skip
    draw.polygon(_scaled(outline, s), fill=(68, 160, 58), outline=(30, 95, 35),
                 width=max(1, round(0.012 * s)))  # fmt: skip
    vein: RGB = (214, 238, 168)
    draw.line(_scaled([at(0.0, 0.0), at(0.95 * length, 0.0)], s), fill=vein,
              width=round(0.018 * s))  # fmt: skip
    for f in (0.18, 0.36, 0.54, 0.72):
        for side in (1, -1):
            reach = 0.75 * half_width(f + 0.1)
            draw.line(_scaled([at(f * length, 0.0), at(f * length + 0.1, side * reach)], s),
                      fill=vein, width=round(0.01 * s))  # fmt: skip
    return image


def _bread(s: int) -> Image.Image:
    image = Image.new("RGB", (s, s), (28, 58, 205))
    draw = ImageDraw.Draw(image)

    def edge(t: float) -> float:
        c, si = math.cos(t), math.sin(t)
        square = (abs(c / 0.36) ** 3.2 + abs(si / 0.32) ** 3.2) ** (-1 / 3.2)
        return square * (1 + 0.07 * math.sin(9 * t + 0.5))

    draw.polygon(_scaled(_polar(0.5, 0.5, edge), s), fill=(120, 38, 170))
    draw.polygon(_scaled(_polar(0.5, 0.5, lambda t: edge(t) - 0.065), s), fill=(172, 216, 250))
    return image


_LOGO_0_TOP = np.array([115, 190, 255])
_LOGO_0_BOTTOM = np.array([8, 55, 170])


def _logo_0(s: int) -> Image.Image:
    """A blue rounded diamond, lighter at the top, with a gloss and a dark oval hole.

    Computed on rows and columns broadcast against each other, not on full coordinate grids: the
    gradient is a function of the row alone (made once per row, then repeated), and the gloss
    changes only the pixels of its small highlight. Every pixel gets the same arithmetic as on
    full grids, so the same bytes (compared at every size from 16 to 299 and 511 to 2048, and
    pinned at three sizes by tests/simulation/test_marks.py), in two thirds of the time: a
    1024 px canvas, which a 256 px texture is drawn on, took 155 ms of CPU and takes 103 ms,
    which every process that loads a scene with this mark paid.
    """
    coords = (np.arange(s, dtype=np.float64) + 0.5) / s
    dx, dy = coords[None, :] - 0.5, coords[:, None] - 0.5
    # Signed distance to a square with rounded corners, rotated 45 degrees.
    half, corner = 0.3, 0.08
    qu = np.abs(dx + dy) / math.sqrt(2) - (half - corner)
    qv = np.abs(dx - dy) / math.sqrt(2) - (half - corner)
    outside = np.hypot(np.maximum(qu, 0), np.maximum(qv, 0))
    dist = outside + np.minimum(np.maximum(qu, qv), 0) - corner
    diamond = np.clip(0.5 - dist * s, 0, 1)[..., None]
    t = np.clip((coords[:, None] - 0.12) / 0.76, 0, 1)[..., None]
    blue = np.repeat((1 - t) * _LOGO_0_TOP + t * _LOGO_0_BOTTOM, s, axis=1)
    gloss = np.clip(1 - ((dx + 0.04) / 0.2) ** 2 - ((dy + 0.16) / 0.09) ** 2, 0, 1)
    rows, cols = np.nonzero(gloss)
    if rows.size:  # elsewhere the gloss is 0, and adds 0
        box = np.s_[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]
        blue[box] += 0.55 * (gloss[box] ** 0.6)[..., None] * (255 - blue[box])
    blue *= 1 - 0.35 * np.clip((dist + 0.03) / 0.03, 0, 1)[..., None]  # darker rim
    oval_dist = (np.hypot(dx / 0.12, dy / 0.075) - 1) * 0.075
    oval = np.clip(0.5 - oval_dist * s, 0, 1)[..., None]
    pixels = (1 - diamond) * 255 + diamond * blue
    pixels *= 1 - oval
    return Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8), "RGB")


def _logo_1(s: int) -> Image.Image:
    image = Image.new("RGB", (s, s), (0, 0, 0))
    draw = ImageDraw.Draw(image)
    radius, band, gap = 0.2, 0.06, 0.022
    centres = [
        (0.5 + 0.13 * math.cos(math.radians(a)), 0.52 + 0.13 * math.sin(math.radians(a)))
        for a in (-90, 30, 150)
    ]

    def ring(c: Point, start: float = 0.0, end: float = 360.0) -> None:
        for extra, colour in ((gap, (0, 0, 0)), (0.0, (255, 255, 255))):
            r = radius + band / 2 + extra
            box = [(c[0] - r) * s, (c[1] - r) * s, (c[0] + r) * s, (c[1] + r) * s]
            draw.arc(box, start, end, fill=colour, width=round((band + 2 * extra) * s))

    for centre in centres:
        ring(centre)
    # Weave: ring 0 passes back over ring 2 at both crossings, so each ring is over one
    # neighbour and under the other.
    (ax, ay), (cx, cy) = centres[0], centres[2]
    mx, my, d = (ax + cx) / 2, (ay + cy) / 2, math.hypot(cx - ax, cy - ay)
    h = math.sqrt(radius**2 - (d / 2) ** 2)
    for sign in (1, -1):
        px, py = mx + sign * h * (ay - cy) / d, my + sign * h * (cx - ax) / d
        mid = math.degrees(math.atan2(py - ay, px - ax))
        ring(centres[0], mid - 24, mid + 24)
    return image


_PAINTERS: dict[str, Callable[[int], Image.Image]] = {
    "splash": _splash,
    "leaf_0": _leaf_0,
    "leaf_1": _leaf_1,
    "bread": _bread,
    "logo_0": _logo_0,
    "logo_1": _logo_1,
}
