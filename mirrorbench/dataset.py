"""The task's samples: one per (scene, level), scene by scene as the engine's runs go."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inspect_ai.dataset import MemoryDataset, Sample

from evaluation.prompts import task_text
from evaluation.vocabulary import level_short, parse_levels
from simulation.catalogue import MAIN, Scene, select_scenes

DATASET_NAME = "mirrorbench"


def sample_id(scene_id: str, level: int) -> str:
    """Return the id of the sample of ``scene_id`` at ``level``: ``male_0-mano_white-splash-L2``."""
    return f"{scene_id}-{level_short(level)}"


def sample_metadata(scene: Scene, level: int) -> dict[str, Any]:
    """Return a sample's metadata: what the episode is (scene, body, hand, mark, track, level)
    and its step budget."""
    return {
        "scene": scene.id,
        "body": scene.body.id,
        "hand": scene.hand.id,
        "mark": scene.mark.id,
        "track": scene.track,
        "level": level,
        "budget": scene.max_steps,
        "d0_steps": scene.d0_steps,
        # A control's episodes name it; the paper's protocol's samples are as they were.
        **({"condition": scene.condition} if scene.condition != MAIN else {}),
    }


def episode_samples(scenes: Sequence[Scene], levels: Sequence[int]) -> MemoryDataset:
    """Return one sample per (scene, level): scene by scene, all levels of a scene together
    (their first views are the same frames, which the render pool then serves from memory).

    A sample's input is its level's fixed text for its scene (what the model is asked); each
    step's full prompt, with its images, is built by the engine when the episode is played.
    """
    return MemoryDataset(
        [
            Sample(
                id=sample_id(scene.id, level),
                input=task_text(scene, level),
                metadata=sample_metadata(scene, level),
            )
            for scene in scenes
            for level in levels
        ],
        name=DATASET_NAME,
    )


def selected_levels(levels: int | str | Sequence[int | str]) -> tuple[int, ...]:
    """Return the levels a task argument names: ``0``, ``"0,3"`` or ``[0, 3]`` (``-T levels=0,3``
    arrives as ``["0", "3"]``).

    Raises:
        ValueError: A level that is not one of the protocol's.
    """
    if isinstance(levels, int | str):
        return parse_levels(str(levels))
    return parse_levels(",".join(str(level) for level in levels))


def selected_scenes(scenes: str | Sequence[str], condition: str = MAIN) -> list[Scene]:
    """Return the scenes a task argument names: ``all``, ``human``, ``robot``, or scene ids
    (a comma-separated string or a list), under ``condition``.

    Raises:
        simulation.catalogue.UnknownSceneError: An id that names no scene.
        ValueError: Nothing selected.
    """
    selector = scenes if isinstance(scenes, str) else ",".join(scenes)
    selected = select_scenes(selector, condition)
    if not selected:
        raise ValueError(f"scenes={selector!r} selects no scene; use all, human, robot or ids")
    return selected
