"""A fast lossless PNG encoder for rendered frames: numpy filtering, ISA-L deflate.

A frame is 8-bit RGB. Each row gets PNG's "Sub" filter (the byte minus the byte three to its
left, modulo 256), computed for the whole image at once with numpy, and the filtered rows are
deflated by ISA-L (``isal``, a zlib-compatible library) at its fastest level. The result is a
standard PNG that any decoder reads back to exactly the pixels given: only the bytes differ
from another encoder's, and frame keys never depend on them (``simulation.renderer.frame_key``
hashes what the frame shows, not its file).

A 1024 x 1024 frame: about 4.5 ms and 337 KiB, against Pillow's 31-75 ms and 299 KiB at zlib
level 3 (``make bench`` prints both). Without ``isal`` (a platform with no wheel) the same
filtering goes through the standard library's zlib at level 1, slower but the same pixels.
"""

from __future__ import annotations

import struct
import types
import zlib
from typing import TYPE_CHECKING

from evaluation.deferred import Deferred

if TYPE_CHECKING:
    import numpy as np
else:
    np = Deferred("numpy")  # a site process that stores no frame never loads it

_deflate_module: types.ModuleType
try:
    from isal import isal_zlib as _deflate_module
except ImportError:  # pragma: no cover - isal ships wheels for every platform we support
    _deflate_module = zlib
_LEVEL = 1

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_SUB = 1


def _chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def encode_png(pixels: np.ndarray) -> bytes:
    """Return ``pixels`` (``uint8``, height x width x 3, RGB) as a lossless PNG."""
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] != 3:
        raise ValueError(f"expected uint8 RGB pixels (H, W, 3), got {pixels.dtype} {pixels.shape}")
    height, width, _ = pixels.shape
    rows = np.ascontiguousarray(pixels).reshape(height, width * 3)
    filtered = np.empty((height, width * 3 + 1), np.uint8)
    filtered[:, 0] = _SUB
    filtered[:, 1:4] = rows[:, :3]
    np.subtract(rows[:, 3:], rows[:, :-3], out=filtered[:, 4:])  # wraps modulo 256
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit truecolour
    data = _deflate_module.compress(filtered.tobytes(), _LEVEL)
    return _SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", data) + _chunk(b"IEND", b"")
