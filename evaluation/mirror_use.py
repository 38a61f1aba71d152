"""How much of a model's score comes from the mirror: its main run against its control runs.

A control condition (``vocabulary.CONTROL_CONDITIONS``) plays the paper's episodes with one
change: no mirror, the mark unseen, or the mark moved. For each table (a level, and overall,
the mean of the levels) and metric, ``mirror_use`` gives the main score, each control's score
and the difference **main minus control**: how much of the main score the control takes away
(main minus no-mirror: what needs the mirror; main minus moved-mark: what a fixed habit earned
rather than the reflection). Each difference has a paired percentile bootstrap interval over
scenes: every resample draws the scenes (within their track, as ``metrics.bootstrap_ci`` does)
once and scores every run on that same draw, so the runs' shared scene-to-scene variation
cancels. Only scenes every run completed an episode of count, so all scores stand on the same
scenes; with repeats, a scene's repeats are pooled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from evaluation.deferred import Deferred
from evaluation.metrics import EpisodeResult, metrics_from_sums, scene_sums
from evaluation.vocabulary import LEVEL_KEYS, MAIN_CONDITION, METRICS, OVERALL

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
else:
    np = Deferred("numpy")  # the bootstrap's: a site process loads it on first use

CONTRAST_METRICS = ("avg", "tsr")
"""The metrics the mirror-use view compares: AVG (the paper's headline) and TSR."""


def mirror_use(
    runs: Mapping[str, Iterable[EpisodeResult]],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Return a model's main and control scores and their differences, with intervals.

    Args:
        runs: The episodes of each condition's run, ``main`` among them.
        n_resamples: Bootstrap resamples.
        seed: The generator's seed: the same seed gives the same intervals.
        confidence: The intervals' coverage.

    Returns:
        ``{"scenes": n, "conditions": [...], "tables": {"0": {"avg": {"scores": {condition:
        value}, "differences": {control: {"value": d, "ci": [low, high]}}}, ...}, ...,
        "overall": {...}}}``; a value is None where a table has no episode.

    Raises:
        ValueError: ``runs`` has no ``main`` run.
    """
    if MAIN_CONDITION not in runs:
        raise ValueError("mirror_use needs the main run")
    sums = {condition: scene_sums(results) for condition, results in runs.items()}
    shared = sorted(set.intersection(*(set(s.scenes) for s in sums.values())))
    conditions = [MAIN_CONDITION, *sorted(c for c in sums if c != MAIN_CONDITION)]
    # Per condition, the shared scenes' statistics, shape (scenes, levels, 6).
    aligned = {
        condition: np.array(
            [sums[condition].sums[sums[condition].scenes.index(scene)] for scene in shared]
        ).reshape(len(shared), len(LEVEL_KEYS), 6)
        for condition in conditions
    }
    rng = np.random.default_rng(seed)
    counts = _paired_counts([track for track, _ in shared], n_resamples, rng)
    point = {c: _table_metrics(a.sum(axis=0)[None]) for c, a in aligned.items()}
    resampled = {
        c: _table_metrics((counts @ a.reshape(len(shared), -1)).reshape(n_resamples, -1, 6))
        for c, a in aligned.items()
    }
    low_q, high_q = 50 * (1 - confidence), 50 * (1 + confidence)
    tables: dict[str, Any] = {}
    for t, table in enumerate([*LEVEL_KEYS, OVERALL]):
        tables[table] = {}
        for metric in CONTRAST_METRICS:
            m = METRICS.index(metric)
            scores = {c: _number(point[c][0, t, m]) for c in conditions}
            differences = {}
            for control in conditions[1:]:
                value = scores[MAIN_CONDITION], scores[control]
                draws = resampled[MAIN_CONDITION][:, t, m] - resampled[control][:, t, m]
                draws = draws[~np.isnan(draws)]
                differences[control] = {
                    "value": None if None in value else value[0] - value[1],  # type: ignore[operator]
                    "ci": [float(v) for v in np.percentile(draws, [low_q, high_q])]
                    if draws.size
                    else None,
                }
            tables[table][metric] = {"scores": scores, "differences": differences}
    return {"scenes": len(shared), "conditions": conditions, "tables": tables}


def _paired_counts(
    tracks: list[str], n_resamples: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """How often each scene is drawn in each resample, (resamples, scenes): scenes drawn with
    replacement within their track, so each track keeps its size."""
    counts = np.zeros((n_resamples, len(tracks)))
    for track in sorted(set(tracks)):
        index = [i for i, t in enumerate(tracks) if t == track]
        n = len(index)
        counts[:, index] = rng.multinomial(n, np.full(n, 1 / n), size=n_resamples)
    return counts


def _table_metrics(sums: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Per resample, the metrics of each level and of overall (their mean), shape
    (resamples, levels + 1, metrics), from statistic sums (resamples, levels, 6)."""
    levels = metrics_from_sums(sums)
    with np.errstate(invalid="ignore"):
        overall = levels.mean(axis=1, keepdims=True)
    return np.concatenate([levels, overall], axis=1)


def _number(value: float) -> float | None:
    return None if np.isnan(value) else float(value)
