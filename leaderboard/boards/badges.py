"""Reads: a model's score as a badge (an SVG drawn here) and as model-card results (YAML).

A badge shows one score of a model's run on the current board with its 95% interval, never a
rank: a rank without its interval misleads. ``/models/<slug>/eval_results.yaml`` gives the
same run's tables as a Hugging Face model repository's ``.eval_results/`` file (one AVG per
table and track, the run page as the source, the interval in its notes), and
``/models/<slug>/model-index.yaml`` in the older ``model-index`` form of a model card's
metadata (every metric of every run on the board).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from django.urls import reverse

from evaluation.vocabulary import (
    LEVEL_KEYS,
    METRIC_NAMES,
    METRICS,
    OVERALL,
    TRACK_KEYS,
    TRACKS,
    metric_label,
    table_label,
    track_label,
)
from leaderboard.exports import published_float
from leaderboard.models import ModelEntry, Run, RunScore
from simulation.versions import BENCHMARK_VERSION

BADGE_METRICS: tuple[str, ...] = tuple(f"{t}_{m}" for t in TRACKS for m in METRICS)
"""What ``?metric=`` takes: a column of the overall board, ``<track>_<metric>``."""
DEFAULT_METRIC = f"{OVERALL}_avg"


class UnknownMetric(ValueError):
    """A ``metric`` that is no badge metric; the message names the parameter and the choices."""

    def __init__(self, metric: str) -> None:
        super().__init__(
            f"metric: {metric!r} is not a badge metric; use one of {', '.join(BADGE_METRICS)}"
        )


@dataclass(frozen=True)
class BadgeScore:
    """One score of a model's run: its value and, when the run has episodes, its interval."""

    metric: str
    value: float
    interval: tuple[float, float] | None
    run_id: int


def badge_label(metric: str) -> str:
    """Return a badge metric for people: ``overall_avg`` -> ``Overall AVG``."""
    track, name = metric.split("_", 1)
    return f"{track_label(track)} {metric_label(name)}"


def badge_message(score: BadgeScore | None) -> str:
    """Return the right half of a badge: the value and its 95% interval (or why there is none)."""
    if score is None:
        return "no score yet"
    if score.interval is None:
        return f"{score.value:.3f} (no interval: reported)"
    low, high = score.interval
    return f"{score.value:.3f} (95% CI {low:.3f}\u2013{high:.3f})"


def _board_runs(entry: ModelEntry, version: str) -> list[Run]:
    """The entry's runs on the board of ``version``: those with episodes (and so intervals)
    first, then the newest."""
    runs = list(Run.objects.on_board(version).filter(model_entry=entry).order_by("-pk"))
    runs.sort(key=lambda run: run.source == Run.Source.REPORTED)
    return runs


def model_badge_score(
    *, entry: ModelEntry, metric: str, version: str = BENCHMARK_VERSION
) -> BadgeScore | None:
    """Return the badge's score: ``metric`` in the overall table of the entry's run on the
    board (``_board_runs``' first with that cell); None without one.

    Raises:
        UnknownMetric: ``metric`` is not one of ``BADGE_METRICS``.
    """
    if metric not in BADGE_METRICS:
        raise UnknownMetric(metric)
    track, name = metric.split("_", 1)
    for run in _board_runs(entry, version):
        row = RunScore.objects.filter(run=run, table=OVERALL, track=track).first()
        if row is None:
            continue
        ci = (row.ci or {}).get(name)
        interval = (float(ci[0]), float(ci[1])) if ci else None
        return BadgeScore(metric, float(getattr(row, name)), interval, run.pk)
    return None


# Verdana 11 px advance widths (shields' font), in pixels; other characters count as 7.
_NARROW = {**dict.fromkeys(" .,:;!|'()[]", 3.9), **dict.fromkeys("fijlrt", 4.0)}
_WIDE = {**dict.fromkeys("MW", 10.5), **dict.fromkeys("mw", 9.5)}


def _text_width(text: str) -> float:
    width = 0.0
    for char in text:
        if char in _NARROW:
            width += _NARROW[char]
        elif char in _WIDE:
            width += _WIDE[char]
        elif char.isdigit() or char.islower():
            width += 6.8
        else:
            width += 7.5
    return width


def badge_svg(label: str, message: str, *, colour: str = "#2f6fb3") -> str:
    """Return a flat, shields-style badge: ``label`` on grey, ``message`` on ``colour``."""
    left = round(_text_width(label) + 12)
    right = round(_text_width(message) + 12)
    width = left + right
    title = escape(f"{label}: {message}")
    label_text, message_text = escape(label), escape(message)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" '
        f'role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        '<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" '
        'stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>'
        f'<clipPath id="r"><rect width="{width}" height="20" rx="3" fill="#fff"/></clipPath>'
        '<g clip-path="url(#r)">'
        f'<rect width="{left}" height="20" fill="#555"/>'
        f'<rect x="{left}" width="{right}" height="20" fill="{colour}"/>'
        f'<rect width="{width}" height="20" fill="url(#s)"/></g>'
        '<g fill="#fff" text-anchor="middle" '
        'font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="{left / 2}" y="15" fill="#010101" fill-opacity=".3">{label_text}</text>'
        f'<text x="{left / 2}" y="14">{label_text}</text>'
        f'<text x="{left + right / 2}" y="15" fill="#010101" fill-opacity=".3">'
        f"{message_text}</text>"
        f'<text x="{left + right / 2}" y="14">{message_text}</text></g></svg>'
    )


def model_badge(*, entry: ModelEntry, metric: str) -> str:
    """Return the SVG badge of ``metric`` for ``entry`` (UnknownMetric for a bad metric)."""
    score = model_badge_score(entry=entry, metric=metric)
    return badge_svg(f"MirrorBench {badge_label(metric)}", badge_message(score))


_TABLE_CONFIGS = {**{level: f"level-{level}" for level in LEVEL_KEYS}, OVERALL: OVERALL}
_TRACK_SPLITS = {**{key: key for key in TRACK_KEYS}, OVERALL: "all"}


def _result(
    *, table: str, track: str, row: RunScore, version: str, source: dict[str, str]
) -> dict[str, Any]:
    name = f"MirrorBench {version}, {table_label(table)}, {track_label(track)}"
    return {
        "task": {"type": "robotics", "name": "Embodied mirror self-recognition"},
        "dataset": {
            "type": "mirrorbench",
            "name": name,
            "config": _TABLE_CONFIGS[table],
            "split": _TRACK_SPLITS[track],
            "revision": version,
        },
        "metrics": [
            {
                "type": metric,
                "name": f"{METRIC_NAMES[metric]} ({metric_label(metric)})",
                "value": published_float(float(getattr(row, metric))),
                "verified": False,
            }
            for metric in METRICS
        ],
        "source": source,
    }


def model_eval_results(
    *, entry: ModelEntry, absolute: Callable[[str], str], version: str = BENCHMARK_VERSION
) -> dict[str, Any]:
    """Return the entry's results on the board of ``version`` as a model card's
    ``model-index``: for each of its runs there, every table's pooled (both tracks) cell and
    the overall table's Human and Robot cells, each with the run page as its source."""
    results: list[dict[str, Any]] = []
    for run in _board_runs(entry, version):
        rows = {(s.table, s.track): s for s in RunScore.objects.filter(run=run)}
        source = {
            "name": f"MirrorBench leaderboard, run {run.pk} ({run.get_source_display()})",
            "url": absolute(reverse("leaderboard:run", args=[run.pk])),
        }
        cells: Sequence[tuple[str, str]] = [
            *((table, OVERALL) for table in (OVERALL, *LEVEL_KEYS)),
            *((OVERALL, track) for track in TRACK_KEYS),
        ]
        for table, track in cells:
            row = rows.get((table, track))
            if row is not None:
                results.append(
                    _result(table=table, track=track, row=row, version=version, source=source)
                )
    return {"model-index": [{"name": entry.name, "results": results}]}


def _hub_task(table: str, track: str) -> str:
    """The task of a Hub result: ``overall``, ``level-2``, ``overall-robot``..."""
    config = _TABLE_CONFIGS[table]
    return config if track == OVERALL else f"{config}-{track}"


def _hub_notes(table: str, track: str, row: RunScore, version: str) -> str:
    interval = (row.ci or {}).get("avg")
    spread = (
        f"; 95% bootstrap interval over scenes {float(interval[0]):.3f}-{float(interval[1]):.3f}"
        if interval
        else "; no interval (the paper's reported numbers)"
    )
    return (
        f"MirrorBench {version}, {table_label(table)}, {track_label(track)}: AVG, the mean of "
        f"TSR, SIR, FCR and PCR, from 0 to 1{spread}"
    )


def model_hub_eval_results(
    *,
    entry: ModelEntry,
    absolute: Callable[[str], str],
    dataset: str,
    version: str = BENCHMARK_VERSION,
) -> list[dict[str, Any]]:
    """Return the entry's results as a Hugging Face ``.eval_results/*.yaml`` file: for every
    table's pooled cell and the overall table's tracks, the AVG of the entry's run on the board
    (``_board_runs``' first with that cell, as its badge shows), under the Hub benchmark
    ``dataset``, dated when the run finished, with its run page as the source."""
    cells: Sequence[tuple[str, str]] = [
        *((table, OVERALL) for table in (OVERALL, *LEVEL_KEYS)),
        *((OVERALL, track) for track in TRACK_KEYS),
    ]
    runs = _board_runs(entry, version)
    scores = {
        (row.run_id, row.table, row.track): row for row in RunScore.objects.filter(run__in=runs)
    }
    results: list[dict[str, Any]] = []
    for table, track in cells:
        for run in runs:
            row = scores.get((run.pk, table, track))
            if row is None:
                continue
            result: dict[str, Any] = {
                "dataset": {"id": dataset, "task_id": _hub_task(table, track)},
                "value": published_float(float(row.avg)),
            }
            if run.finished is not None:
                result["date"] = run.finished.date().isoformat()
            result["source"] = {
                "url": absolute(reverse("leaderboard:run", args=[run.pk])),
                "name": f"MirrorBench leaderboard, run {run.pk} ({run.get_source_display()})",
            }
            result["notes"] = _hub_notes(table, track, row, version)
            results.append(result)
            break
    return results


def model_share(*, entry: ModelEntry, absolute: Callable[[str], str]) -> dict[str, str]:
    """Return what a model page offers to paste elsewhere: its badge's Markdown and the
    address of its model-card results."""
    page = absolute(reverse("leaderboard:model", args=[entry.slug]))
    badge = absolute(reverse("leaderboard:model-badge", args=[entry.slug]))
    label = f"MirrorBench {badge_label(DEFAULT_METRIC)}"
    return {
        "badge_url": f"{badge}?metric={DEFAULT_METRIC}",
        "badge_markdown": f"[![{label}]({badge}?metric={DEFAULT_METRIC})]({page})",
        "eval_results_url": absolute(reverse("leaderboard:model-eval-results", args=[entry.slug])),
        "model_index_url": absolute(reverse("leaderboard:model-index", args=[entry.slug])),
    }
