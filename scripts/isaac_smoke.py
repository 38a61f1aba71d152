"""The two halves of ``scripts/isaac-smoke.sh``, each in its own process.

``mujoco SCENE SIZE OUT``: where the mark's reflection is in the MuJoCo frame (the centroid of
the probe render's reflected mark), written to ``OUT/mujoco.json``; no Kit in this process.

``isaac SCENE SIZE OUT``: render the scene with the Isaac backend, with the mark and with it
hidden (the difference is the reflected mark), and with the hand at the goal; write the frames
and ``OUT/isaac.json``. Kit starts before anything imports ``pxr``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def _centroid(mask: np.ndarray) -> list[float] | None:
    rows, cols = np.nonzero(mask)
    if not len(rows):
        return None
    return [float(cols.mean() + 0.5), float(rows.mean() + 0.5)]


def mujoco_half(scene_id: str, size: int, out: Path) -> None:
    from simulation.catalogue import get_scene
    from simulation.visibility import reflected_mark_mask

    mask = reflected_mark_mask(get_scene(scene_id), size)
    result = {"mark_centroid": _centroid(mask), "mark_pixels": int(mask.sum())}
    (out / "mujoco.json").write_text(json.dumps(result))


def isaac_half(scene_id: str, size: int, out: Path) -> None:
    from PIL import Image

    from simulation.catalogue import get_scene
    from simulation.dynamics import goal_cell
    from simulation.isaac_backend import IsaacRenderer, kit_app

    kit_app(size)  # Kit first: it brings the USD libraries everything below uses
    from pxr import UsdGeom

    from simulation.usd_export import MARK_PATH, camera_pixel, mirror_image

    scene = get_scene(scene_id)
    with IsaacRenderer(stage_dir=out / "stage") as renderer:
        renderer.load(scene)
        start = renderer.render(size)
        mark = UsdGeom.Imageable(renderer.stage.GetPrimAtPath(MARK_PATH))
        mark.MakeInvisible()
        unmarked = renderer.render(size)
        mark.MakeVisible()
        renderer.set_hand(goal_cell(scene))
        at_goal = renderer.render(size)
        centre = tuple(v / 1000 for v in scene.mark_center_mm)
        projected = camera_pixel(renderer.stage, mirror_image(centre), size)
        version = renderer.version
    for name, image in (("start", start), ("no-mark", unmarked), ("goal", at_goal)):
        Image.fromarray(image).save(out / f"isaac-{name}.png")
    mark_mask = np.abs(start.astype(int) - unmarked.astype(int)).max(axis=2) > 40
    hand_moved = np.abs(start.astype(int) - at_goal.astype(int)).max(axis=2) > 40
    result = {
        "version": version,
        "mark_centroid": _centroid(mark_mask),
        "mark_pixels": int(mark_mask.sum()),
        "projected_mark": list(projected),
        "hand_moved_pixels": int(hand_moved.sum()),
        "image_std": float(start.std()),
    }
    (out / "isaac.json").write_text(json.dumps(result))


if __name__ == "__main__":
    half, scene_id, size, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    out.mkdir(parents=True, exist_ok=True)
    {"mujoco": mujoco_half, "isaac": isaac_half}[half](scene_id, size, out)
