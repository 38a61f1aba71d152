"""Reads: where a frame is stored, which frames a run or the scene gallery shows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.core.files.storage import default_storage
from django.db.models import QuerySet

from leaderboard.models import (
    Episode,
    Frame,
    Run,
    Scene,
    Step,
)
from simulation.backends import renderer_version
from simulation.dynamics import Vec3
from simulation.renderer import DEFAULT_SIZE, frame_key
from simulation.versions import BENCHMARK_VERSION

FRAME_VARIANTS = ("png", "webp", "thumb")
"""A stored frame's files: the lossless PNG a model saw, the viewer's WebP, a list thumbnail."""


_FRAME_SUFFIX = {"png": "png", "webp": "webp", "thumb": "thumb.webp"}


def frame_path(key: str, variant: str) -> str:
    """Return the storage path of a frame's file: ``frames/ab/<key>.<suffix>`` (sharded)."""
    return f"frames/{key[:2]}/{key}.{_FRAME_SUFFIX[variant]}"


def frame_exists(key: str) -> bool:
    """Return whether every file of a frame is stored."""
    return all(default_storage.exists(frame_path(key, v)) for v in FRAME_VARIANTS)


def frames_stored(keys: Iterable[str]) -> set[str]:
    """Return which of ``keys`` name frames whose files are stored (one query): the others
    would be rendered when first asked for."""
    return set(
        Frame.objects.filter(key__in=list(keys), stored__isnull=False).values_list("key", flat=True)
    )


def run_image_size(run: Run) -> int:
    """Return the side of the images of a run: its configuration's, else its bundle header's."""
    config = run.config
    if config is not None:
        return config.image_size
    return int((run.metadata or {}).get("renderer", {}).get("image_size", DEFAULT_SIZE))


def run_final_cells(*, run_id: int) -> dict[str, list[Vec3]]:
    """Return, per scene of a run, the distinct hand cells its episodes ended at."""
    last: dict[int, tuple[int, list[int]]] = {}
    for episode_id, index, cell in Step.objects.filter(episode__run_id=run_id).values_list(
        "episode_id", "index", "hand_cell"
    ):
        if episode_id not in last or index > last[episode_id][0]:
            last[episode_id] = (index, cell)
    cells: dict[str, list[Vec3]] = {}
    for episode_id, scene_id in Episode.objects.filter(run_id=run_id).values_list(
        "pk", "scene__scene_id"
    ):
        x, y, z = last[episode_id][1] if episode_id in last else (0, 0, 0)
        found = cells.setdefault(scene_id, [])
        if (x, y, z) not in found:
            found.append((x, y, z))
    return cells


def gallery_scenes(*, version: str = BENCHMARK_VERSION) -> QuerySet[Scene]:
    """Return the scenes of a benchmark version, in catalogue order."""
    return Scene.objects.filter(benchmark__name=version).order_by("id")


def episode_cells(episode: Episode) -> list[Vec3]:
    """Return every hand cell an episode showed: the start, then the cell after each step."""
    cells: list[Vec3] = [(0, 0, 0)]
    for step in Step.objects.filter(episode=episode).order_by("index").only("hand_cell"):
        x, y, z = step.hand_cell
        cells.append((x, y, z))
    return cells


def run_scene_cells(*, run_id: int) -> dict[str, list[Vec3]]:
    """Return, for each scene of a run, every hand cell its episodes showed (two queries)."""
    cells: dict[str, list[Vec3]] = {}
    scene_of = dict(Episode.objects.filter(run_id=run_id).values_list("pk", "scene__scene_id"))
    for scene_id in scene_of.values():
        cells.setdefault(scene_id, [(0, 0, 0)])
    for episode_id, cell in Step.objects.filter(episode__run_id=run_id).values_list(
        "episode_id", "hand_cell"
    ):
        x, y, z = cell
        cells[scene_of[episode_id]].append((x, y, z))
    return cells


def episode_frame_keys(episode: Episode, cells: Sequence[Vec3] | None = None) -> list[str]:
    """Return the key of each view of an episode (``cells``: ``episode_cells``, when at hand),
    registered when the episode was stored; reading them writes nothing."""
    size = run_image_size(episode.run)
    version = renderer_version()
    cells = episode_cells(episode) if cells is None else cells
    condition = episode.run.condition
    return [
        frame_key(version, episode.scene.scene_id, cell, size, condition=condition)
        for cell in cells
    ]


def frames_registered(keys: Sequence[str]) -> dict[str, Frame]:
    """Return the registered frames among ``keys`` (one query), by key."""
    return {frame.key: frame for frame in Frame.objects.filter(pk__in=list(keys))}


def frame_file_read(key: str, variant: str) -> bytes | None:
    """Return one stored file of a frame (``FRAME_VARIANTS``), or None when it is not there."""
    try:
        with default_storage.open(frame_path(key, variant), "rb") as handle:
            data: bytes = handle.read()
    except FileNotFoundError:
        return None
    return data
