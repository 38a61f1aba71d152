"""The scorer and its metric: the paper's four metrics per episode, its tables per run.

A sample's score is its episode's TSR, SIR, FCR, PCR and their mean (``evaluation.metrics``,
the paper's Table I). The metric aggregates them as the paper's tables do: per level and track
TSR, FCR and PCR are means over episodes and SIR is pooled over steps (improving steps over
steps); the Overall column pools both tracks' episodes; the run's row (Table II) is the mean of
its level tables. An episode that did not complete (a limit or an error ended it) is unscored
(NaN) and counts nowhere, as the engine leaves out an episode that ends in error.
"""

from __future__ import annotations

import math
from typing import Any

from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    Value,
    metric,
    scorer,
)
from inspect_ai.solver import TaskState

from evaluation.metrics import (
    EpisodeResult,
    LevelTable,
    episode_score,
    level_table,
    overall_table,
)
from evaluation.vocabulary import AVG, COMPLETED, ERROR, METRICS, OVERALL, level_short
from mirrorbench.solver import EPISODE_KEY

HEADLINE = AVG
"""The number Inspect shows for the eval (its first metric): the run's mean of the four
metrics (the paper's Table II, Overall column)."""


def metric_key(metric_name: str, *, level: int | None = None, track: str = OVERALL) -> str:
    """Return the name of one number of the tables: ``avg`` (the run's), ``human_tsr`` (a track
    of the run's row), ``L0_sir`` (a level's Overall column), ``L0_robot_pcr``."""
    parts = [] if level is None else [level_short(level)]
    if track != OVERALL:
        parts.append(track)
    return "_".join([*parts, metric_name])


def _flatten(table: LevelTable, level: int | None) -> dict[str, float]:
    # The Overall column first, its AVG first of all: the number Inspect shows as the eval's.
    tracks = sorted(table, key=lambda track: track != OVERALL)
    return {
        metric_key(m, level=level, track=track): cell[m]
        for track in tracks
        if (cell := table[track]) is not None
        for m in sorted(METRICS, key=lambda m: m != HEADLINE)
    }


def paper_table_values(results: list[EpisodeResult]) -> dict[str, float]:
    """Return every number of the paper's tables for these episodes, named by ``metric_key``:
    a level table per level present, and the mean of those as the run's row."""
    levels = sorted({r.level for r in results})
    if not levels:
        return {}
    tables = {level: level_table(results, level) for level in levels}
    values = _flatten(overall_table({str(k): t for k, t in tables.items()}), None)
    for level, table in tables.items():
        values.update(_flatten(table, level))
    return values


def episode_result(score: Score) -> EpisodeResult | None:
    """Return the episode a score stands for; None for an unscored one."""
    metadata = score.metadata or {}
    if not isinstance(score.value, dict) or metadata.get("status") != COMPLETED:
        return None
    return EpisodeResult(
        scene_id=metadata["scene"],
        track=metadata["track"],
        level=metadata["level"],
        distances=tuple(metadata["distances"]),
    )


@metric
def paper_tables() -> Metric:
    """The paper's tables over the scored samples (see the module docstring)."""

    def compute(scores: list[SampleScore]) -> Value:
        results = [r for s in scores if (r := episode_result(s.score)) is not None]
        return paper_table_values(results)

    return compute


def _explanation(distances: list[int], success: bool, budget: int) -> str:
    steps = len(distances) - 1
    if success:
        return f"reached the mark in {steps} of {budget} steps"
    return (
        f"did not reach the mark: {distances[-1]} steps away after {steps} steps "
        f"(closest {min(distances)}, start {distances[0]})"
    )


@scorer(metrics=[paper_tables()])
def episode_metrics() -> Scorer:
    """Score an episode with the paper's four metrics and their mean (``tsr``, ``sir``,
    ``fcr``, ``pcr``, ``avg``); the answer lists the options played (``-``: a bad response)."""

    async def score(state: TaskState, target: Target) -> Score:
        episode: dict[str, Any] = state.store.get(EPISODE_KEY) or {}
        metadata = {
            "scene": state.metadata["scene"],
            "track": state.metadata["track"],
            "level": state.metadata["level"],
            "status": episode.get("status", ERROR),
            "distances": episode.get("distances"),
            "success": episode.get("success"),
            "options": [step["option"] for step in episode.get("steps", [])],
        }
        answer = " ".join(str(o) if o is not None else "-" for o in metadata["options"])
        if metadata["status"] != COMPLETED:
            why = episode.get("error") or "the episode did not finish (a limit or an error)"
            return Score(value=math.nan, answer=answer, explanation=why, metadata=metadata)
        distances = episode["distances"]
        result = episode_score(distances)
        return Score(
            value={m: getattr(result, m) for m in METRICS},
            answer=answer,
            explanation=_explanation(distances, episode["success"], state.metadata["budget"]),
            metadata=metadata,
        )

    return score
