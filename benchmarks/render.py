"""Rendering benchmark: median milliseconds per frame (``make bench``).

Targets on a 2-core CPU: a 1024 x 1024 frame in at most 250 ms with shadows and 100 ms
without. The hand moves between frames, as it does in an episode. The small sizes show what a
human scene's round shapes cost at each frame size (``shape_detail``, the ``shapes`` column:
slices x stacks); a robot has none.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

from simulation.catalogue import get_scene
from simulation.mujoco_backend import MujocoRenderer, shape_detail

SCENES = ("male_0-mano_white-splash", "tienkung-shadow_hand-logo_0")
SIZES = (32, 128, 256, 512, 1024)
TARGET_MS = {True: 250.0, False: 100.0}
FRAMES = int(os.environ.get("BENCH_FRAMES", "15"))
CELLS = [(0, 0, 0), (-1, 0, 0), (-1, 1, 0), (-1, 1, -1), (-2, 1, -1)]


def median_frame_ms(
    scene_id: str, size: int, shadows: bool, antialias: bool = False
) -> tuple[float, float]:
    """Return (median ms per frame, scene load ms) for one configuration."""
    with MujocoRenderer(shadows=shadows, antialias=antialias) as renderer:
        start = time.perf_counter()
        renderer.load(get_scene(scene_id))
        load_ms = (time.perf_counter() - start) * 1000
        renderer.render(size)  # warm-up: creates the GL context and uploads textures
        times = []
        for i in range(FRAMES):
            renderer.set_hand(CELLS[i % len(CELLS)])
            start = time.perf_counter()
            renderer.render(size)
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), load_ms


def encoder_ms(scene_id: str, size: int = 1024, repeats: int = 9) -> dict[str, tuple[float, int]]:
    """Median ms and bytes of one frame as PNG: Pillow at zlib level 3 (before) and ours."""
    import io

    from PIL import Image

    from evaluation.png import encode_png

    with MujocoRenderer() as renderer:
        renderer.load(get_scene(scene_id))
        pixels = renderer.render(size)

    def pillow(frame: np.ndarray) -> bytes:
        buffer = io.BytesIO()
        Image.fromarray(frame).save(buffer, format="PNG", compress_level=3)
        return buffer.getvalue()

    results = {}
    for name, encode in (("Pillow, zlib 3 (before)", pillow), ("evaluation.png", encode_png)):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            data = encode(pixels)
            times.append((time.perf_counter() - start) * 1000)
        results[name] = (statistics.median(times), len(data))
    return results


def main() -> None:
    print(f"MirrorBench render benchmark (MUJOCO_GL={os.environ['MUJOCO_GL']}, {FRAMES} frames)")
    print(
        f"{'scene':32} {'size':>5} {'shapes':>7} {'shadows':>7} {'median ms':>10} "
        f"{'target':>7} {'ratio':>6}"
    )
    for scene_id in SCENES:
        for size in SIZES:
            shapes = "x".join(str(n) for n in shape_detail(size))
            for shadows in (True, False):
                ms, load_ms = median_frame_ms(scene_id, size, shadows)
                line = (
                    f"{scene_id:32} {size:>5} {shapes:>7} {('on' if shadows else 'off'):>7} "
                    f"{ms:>10.1f}"
                )
                if size == 1024:
                    target = TARGET_MS[shadows]
                    line += f" {target:>7.0f} {ms / target:>6.2f}"
                print(line, flush=True)
        ms, _ = median_frame_ms(scene_id, 1024, True, antialias=True)
        print(
            f"{scene_id:32} {1024:>5} {'28x16':>7} {'on+msaa':>7} {ms:>10.1f}   "
            "(4x multisampling, optional)"
        )
        print(f"{scene_id:32} scene load {load_ms:.0f} ms (build + compile, warm mesh cache)")
    encoders = encoder_ms(SCENES[0])
    base = encoders["Pillow, zlib 3 (before)"][0]
    for name, (ms, size) in encoders.items():
        print(f"PNG encoder {name:26} {ms:6.1f} ms {size / 1024:5.0f} KiB  ratio {ms / base:.2f}")


if __name__ == "__main__":
    main()
