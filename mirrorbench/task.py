"""The task: ``inspect eval mirrorbench/mirror_test -T levels=0,3 -T scenes=robot``.

Its version is the benchmark's (``simulation.versions.BENCHMARK_VERSION``), written into every
log with the versions of the scene set, prompts, dynamics and renderer (the task's metadata),
so a log says which measurement it holds and ``mirrorbench import-inspect`` refuses another.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai.model import GenerateConfig

from evaluation.bundle import benchmark_version
from evaluation.vocabulary import MAIN_CONDITION, parse_condition
from mirrorbench.dataset import episode_samples, selected_levels, selected_scenes
from mirrorbench.scorer import episode_metrics
from mirrorbench.solver import play_episode
from simulation.backends import renderer_version
from simulation.renderer import DEFAULT_SIZE
from simulation.versions import BENCHMARK_VERSION

TASK_NAME = "mirrorbench/mirror_test"
METADATA_KEY = "mirrorbench"
"""The task metadata's key for what the log's episodes depend on (``task_metadata``)."""


def task_metadata(
    *,
    levels: Sequence[int],
    scene_ids: Sequence[str],
    image_size: int,
    image_history: int,
    condition: str = MAIN_CONDITION,
) -> dict[str, Any]:
    """Return what a log of this task must carry to become a results bundle: the benchmark's
    versions, the renderer, the selection and a control's condition (the bundle header's
    fields of the same names)."""
    return {
        **({"condition": condition} if condition != MAIN_CONDITION else {}),
        "benchmark": benchmark_version(),
        "renderer": {
            "version": renderer_version(),
            "image_size": image_size,
            "image_history": image_history,
        },
        "selection": {"levels": list(levels), "scenes": list(scene_ids)},
    }


@task
def mirror_test(
    levels: int | str | Sequence[int | str] = "0,1,2,3",
    scenes: str | Sequence[str] = "all",
    image_size: int = DEFAULT_SIZE,
    image_history: int = 1,
    render_threads: int | None = None,
    condition: str = MAIN_CONDITION,
) -> Task:
    """MirrorBench: guide a virtual hand to a mark on a body seen only in a mirror.

    Args:
        levels: Prompt levels, ``0`` (most disclosed) to ``3`` (neither mirror nor body):
            ``0,3`` or a list (default all four).
        scenes: ``all`` (66 scenes), ``human`` (48), ``robot`` (18) or scene ids.
        image_size: Frame size in pixels (the protocol's is 1024).
        image_history: Previous frames shown with the current one (the protocol's is 1).
        render_threads: Renderers of this process's render pool (default one per core).
        condition: ``main`` (the paper's protocol) or a control condition (``no-mirror``,
            ``mark-unseen``, ``moved-mark``) the scenes are played under.
    """
    chosen_levels = selected_levels(levels)
    chosen_condition = parse_condition(condition)
    chosen_scenes = selected_scenes(scenes, chosen_condition)
    return Task(
        dataset=episode_samples(chosen_scenes, chosen_levels),
        solver=play_episode(
            image_size=image_size, image_history=image_history, render_threads=render_threads
        ),
        scorer=episode_metrics(),
        # The protocol sends temperature 0 and nothing else (no output cap, no seed).
        config=GenerateConfig(temperature=0.0),
        epochs=1,
        version=BENCHMARK_VERSION,
        metadata={
            METADATA_KEY: task_metadata(
                levels=chosen_levels,
                scene_ids=[s.id for s in chosen_scenes],
                image_size=image_size,
                image_history=image_history,
                condition=chosen_condition,
            )
        },
    )
