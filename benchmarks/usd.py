"""OpenUSD export benchmark (``make bench``): every scene's export time, stage size and camera.

For each of the 66 scenes: the time to export it (MuJoCo model compile included, as for a first
export in a process), the stage's size on disk, and how far apart the USD camera and MuJoCo's
camera put the goal, the mark and their mirror images in a 1024 x 1024 frame.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

import numpy as np

from simulation.catalogue import scene_set
from simulation.usd_export import camera_pixel, export_scene, mirror_image, open_stage
from simulation.visibility import camera_pixel as mujoco_pixel

SIZE = 1024


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="mirrorbench-usd-bench-") as tmp:
        out = Path(tmp)
        started = time.perf_counter()
        for scene in scene_set().values():
            result = export_scene(scene, out)
            stage = open_stage(result.path)
            errors = []
            for mm in (scene.goal_mm, scene.mark_center_mm):
                point = (mm[0] / 1000, mm[1] / 1000, mm[2] / 1000)
                for seen in (point, mirror_image(point)):
                    usd = camera_pixel(stage, seen, SIZE)
                    mujoco = mujoco_pixel(scene, seen, SIZE)
                    errors.append(float(np.hypot(usd[0] - mujoco[0], usd[1] - mujoco[1])))
            rows.append((scene, result.seconds, result.stage_bytes, max(errors)))
        total = time.perf_counter() - started
        textures = sum(p.stat().st_size for p in (out / "textures").iterdir())
        mdl = sum(p.stat().st_size for p in (out / "materials").iterdir())
    print(f"OpenUSD export of {len(rows)} scenes: {total:.1f} s in all (exports and checks)")
    print(
        f"{'track':6} {'scenes':>6} {'export ms (median, max)':>24} {'stage KiB (median, max)':>24}"
    )
    for track in ("Human", "Robot"):
        mine = [r for r in rows if r[0].track == track]
        ms = [r[1] * 1000 for r in mine]
        kib = [r[2] / 1024 for r in mine]
        print(
            f"{track:6} {len(mine):>6} {statistics.median(ms):>13.0f} {max(ms):>10.0f} "
            f"{statistics.median(kib):>13.0f} {max(kib):>10.0f}"
        )
    print(f"shared textures/: {textures / 1024:.0f} KiB; materials/: {mdl} bytes")
    worst = max(rows, key=lambda r: r[3])
    print(
        f"USD vs MuJoCo camera at {SIZE} px (goal, mark and their mirror images, 264 points): "
        f"worst {worst[3]:.4f} px ({worst[0].id}), median "
        f"{statistics.median(r[3] for r in rows):.4f} px"
    )


if __name__ == "__main__":
    main()
