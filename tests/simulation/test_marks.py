"""Tests for the procedural mark textures (simulation.assets.marks)."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pytest

from simulation.assets.marks import MARK_DESCRIPTIONS, MARK_IDS, mark_texture

SIZE = 128


def _fraction(mask: np.ndarray) -> float:
    return float(mask.mean())


def _channels(mark_id: str, size: int = SIZE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    image = mark_texture(mark_id, size).astype(np.int32)
    return image[..., 0], image[..., 1], image[..., 2]


def _corners(image: np.ndarray, margin: int = 4) -> np.ndarray:
    return np.concatenate(
        [
            image[:margin, :margin].reshape(-1, 3),
            image[:margin, -margin:].reshape(-1, 3),
            image[-margin:, :margin].reshape(-1, 3),
            image[-margin:, -margin:].reshape(-1, 3),
        ]
    ).astype(np.int32)


def test_the_six_marks_of_the_protocol_are_listed_in_order() -> None:
    assert MARK_IDS == ("splash", "leaf_0", "leaf_1", "bread", "logo_0", "logo_1")


def test_every_mark_has_a_short_description() -> None:
    assert set(MARK_DESCRIPTIONS) == set(MARK_IDS)
    for description in MARK_DESCRIPTIONS.values():
        assert 10 < len(description) < 120


@pytest.mark.parametrize("size", [16, 64, 256, 100])
@pytest.mark.parametrize("mark_id", MARK_IDS)
def test_every_mark_is_a_square_rgb_image(mark_id: str, size: int) -> None:
    image = mark_texture(mark_id, size)
    assert image.shape == (size, size, 3)
    assert image.dtype == np.uint8


def test_the_default_size_is_256_pixels() -> None:
    assert mark_texture("splash").shape == (256, 256, 3)


@pytest.mark.parametrize("mark_id", MARK_IDS)
def test_every_mark_is_the_same_on_every_call(mark_id: str) -> None:
    first = mark_texture(mark_id, 64)
    first[:] = 0  # the caller owns its copy; changing it must not leak into later calls
    assert np.array_equal(mark_texture(mark_id, 64), mark_texture(mark_id, 64))
    assert mark_texture(mark_id, 64).any()


def test_an_unknown_mark_raises_a_key_error_naming_the_valid_marks() -> None:
    with pytest.raises(KeyError) as caught:
        mark_texture("moustache")
    for mark_id in MARK_IDS:
        assert mark_id in str(caught.value)


@pytest.mark.parametrize("size", [15, 0, -4])
def test_a_size_below_sixteen_pixels_is_refused(size: int) -> None:
    with pytest.raises(ValueError, match="at least 16"):
        mark_texture("splash", size)


def test_splash_is_a_large_red_emblem_on_white() -> None:
    r, g, b = _channels("splash")
    assert _fraction((r > 180) & (g < 60) & (b < 70)) > 0.2
    assert _fraction((r > 240) & (g > 240) & (b > 240)) > 0.4
    assert (_corners(mark_texture("splash", SIZE)) > 240).all()


def test_leaf_0_is_a_dark_green_leaf_on_a_light_ground() -> None:
    r, g, b = _channels("leaf_0")
    dark_green = (g > r + 30) & (g > b + 20) & (g < 130)
    assert _fraction(dark_green) > 0.15
    assert _fraction((r > 235) & (g > 235) & (b > 235)) > 0.4
    width = dark_green.sum(axis=1)
    top_lobe, stem = width[SIZE // 4 : SIZE // 2].mean(), width[-SIZE // 5 :].mean()
    assert top_lobe > 3 * stem > 0  # the lobes are above the narrow stem (row 0 is the top)


def test_leaf_1_is_a_green_leaf_with_pale_veins_on_light_blue() -> None:
    r, g, b = _channels("leaf_1")
    assert _fraction((b > 225) & (r > 170) & (r < 210) & (g > 205)) > 0.4
    assert _fraction((g > r + 50) & (g > b + 50)) > 0.1
    assert _fraction((r > 190) & (g > 220) & (b < 195)) > 0.005
    corners = _corners(mark_texture("leaf_1", SIZE))
    assert (corners[:, 2] > corners[:, 0] + 30).all()


def test_bread_is_a_purple_outlined_light_blue_shape_on_solid_blue() -> None:
    r, g, b = _channels("bread")
    saturated_blue = (b > 180) & (r < 60) & (g < 90)
    purple = (r > 90) & (b > 140) & (g < 70)
    light_blue = (b > 230) & (g > 200) & (r > 150) & (r < 200)
    assert _fraction(saturated_blue) > 0.3
    assert _fraction(purple) > 0.05
    assert _fraction(light_blue) > 0.2
    assert light_blue[SIZE // 2, SIZE // 2]
    corners = _corners(mark_texture("bread", SIZE))
    assert (corners[:, 2] > 180).all() and (corners[:, 0] < 60).all()


def test_logo_0_is_a_glossy_blue_diamond_with_a_black_centre_on_white() -> None:
    r, g, b = _channels("logo_0")
    blue = (b > 150) & (b > r + 60)
    assert _fraction(blue) > 0.2
    assert _fraction((r > 245) & (g > 245) & (b > 245)) > 0.3
    centre = mark_texture("logo_0", SIZE)[
        SIZE // 2 - 3 : SIZE // 2 + 3, SIZE // 2 - 3 : SIZE // 2 + 3
    ]
    assert (centre < 20).all()
    brightness = r + g + b
    half = SIZE // 2
    assert brightness[:half][blue[:half]].mean() > brightness[half:][blue[half:]].mean() + 60
    assert (_corners(mark_texture("logo_0", SIZE)) > 245).all()


def test_logo_1_is_white_bands_on_black_without_colour() -> None:
    image = mark_texture("logo_1", SIZE).astype(np.int32)
    assert (image.max(axis=2) - image.min(axis=2) <= 2).all()
    grey = image[..., 0]
    assert _fraction(grey < 20) > 0.5
    assert _fraction(grey > 235) > 0.15
    assert (_corners(image) < 5).all()


@pytest.mark.parametrize(("first", "second"), list(itertools.combinations(MARK_IDS, 2)))
def test_marks_differ_from_each_other(first: str, second: str) -> None:
    one = mark_texture(first, 64).astype(np.int32)
    other = mark_texture(second, 64).astype(np.int32)
    assert np.abs(one - other).mean() > 25


MARK_BYTES = {
    ("splash", 256): "01f3a2bfa371cf27",
    ("leaf_0", 256): "e33701184c2e4fd0",
    ("leaf_1", 256): "dc86761abe7629b3",
    ("bread", 256): "8215e580b568d9fb",
    ("logo_0", 16): "b7f2091e7603a8fe",
    ("logo_0", 256): "b689b0d2d42937ad",
    ("logo_0", 512): "6411c8e82b4da667",
    ("logo_1", 256): "d5d5b6c596e14a9f",
}
"""The first 16 hex digits of each texture's SHA-256, as the benchmark's frames were rendered
with (256 px: the size the renderer asks for): a change that draws a mark faster must keep its
bytes, or it changes every frame that shows it."""


@pytest.mark.parametrize(("mark_id", "size"), list(MARK_BYTES), ids=lambda v: str(v))
def test_every_mark_keeps_its_bytes(mark_id: str, size: int) -> None:
    digest = hashlib.sha256(mark_texture(mark_id, size).tobytes()).hexdigest()[:16]
    assert digest == MARK_BYTES[mark_id, size]
