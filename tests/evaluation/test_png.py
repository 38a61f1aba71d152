"""The frame PNG encoder: standard PNGs that decode to exactly the pixels given."""

import io
import zlib

import numpy as np
import pytest
from PIL import Image

from evaluation.png import encode_png


def _decode(data: bytes) -> np.ndarray:
    image = Image.open(io.BytesIO(data))
    image.load()
    assert image.mode == "RGB" and image.format == "PNG"
    return np.asarray(image)


@pytest.mark.parametrize("shape", [(1, 1, 3), (2, 3, 3), (32, 32, 3), (17, 64, 3), (256, 255, 3)])
def test_any_pixels_decode_back_exactly(shape):
    pixels = np.random.default_rng(sum(shape)).integers(0, 256, size=shape, dtype=np.uint8)
    assert np.array_equal(_decode(encode_png(pixels)), pixels)


def test_extremes_and_wraparound_decode_back_exactly():
    pixels = np.zeros((8, 8, 3), np.uint8)
    pixels[:, ::2] = 255  # every Sub difference wraps around
    pixels[3] = [1, 254, 128]
    assert np.array_equal(_decode(encode_png(pixels)), pixels)


def test_a_rendered_frame_decodes_to_the_same_pixels_as_pillows_png():
    from simulation.catalogue import get_scene
    from simulation.mujoco_backend import MujocoRenderer

    with MujocoRenderer() as renderer:
        renderer.load(get_scene("male_0-mano_white-splash"))
        pixels = renderer.render(64)
    ours = encode_png(pixels)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG", compress_level=3)
    assert np.array_equal(_decode(ours), _decode(buffer.getvalue()))


def test_every_chunk_has_a_valid_crc():
    data = encode_png(np.full((4, 5, 3), 7, np.uint8))
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, tags = 8, []
    while at < len(data):
        length = int.from_bytes(data[at : at + 4], "big")
        tag, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        crc = int.from_bytes(data[at + 8 + length : at + 12 + length], "big")
        assert zlib.crc32(tag + body) == crc, tag
        tags.append(tag)
        at += 12 + length
    assert tags == [b"IHDR", b"IDAT", b"IEND"]


@pytest.mark.parametrize(
    "bad",
    [np.zeros((4, 4), np.uint8), np.zeros((4, 4, 4), np.uint8), np.zeros((4, 4, 3), np.float32)],
)
def test_anything_but_uint8_rgb_is_refused(bad):
    with pytest.raises(ValueError, match="expected uint8 RGB"):
        encode_png(bad)
