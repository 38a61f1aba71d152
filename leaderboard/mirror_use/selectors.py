"""Reads of the mirror-use view: per model, its newest public completed run of each condition,
and ``evaluation.mirror_use``'s scores, differences and intervals over them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from evaluation.mirror_use import CONTRAST_METRICS, mirror_use
from evaluation.process_metrics import ATTRIBUTION, process_json
from evaluation.vocabulary import (
    COMPLETED,
    CONDITIONS,
    CONTROL_CONDITIONS,
    LEVEL_KEYS,
    MAIN_CONDITION,
    OVERALL,
    TRACK_KEYS,
    level_short,
)
from leaderboard.models import Episode, ModelEntry, Run, Step
from leaderboard.runs.selectors import run_results
from simulation.versions import BENCHMARK_VERSION

TABLES = (*LEVEL_KEYS, OVERALL)
"""The rows of each model: its levels, then overall (the mean of the levels)."""


@dataclass(frozen=True)
class MirrorUseRow:
    """One model's main and control runs, contrasted (``evaluation.mirror_use``)."""

    entry: ModelEntry
    runs: dict[str, Run]
    use: dict[str, Any]
    process: dict[str, Any]
    """What the main run's answers say (``run_process_metrics``)."""

    @property
    def reference(self) -> bool:
        """A baseline's row: what no use of the mirror (or perfect use) looks like."""
        return self.entry.kind == ModelEntry.Kind.BASELINE


def mirror_use_rows(*, version: str = BENCHMARK_VERSION) -> list[MirrorUseRow]:
    """Return a row per model with a main run and at least one control run (a query, then one
    per run shown and one for each main run's answers).

    Only public, completed runs of benchmark ``version`` count, the newest of each condition.
    Models come first, ranked by their overall main AVG, the baselines after them.
    """
    runs = _counted_runs(version).select_related("model_entry")
    chosen: dict[int, dict[str, Run]] = defaultdict(dict)
    for run in runs:
        chosen[run.model_entry_id].setdefault(run.condition, run)
    chosen = {
        entry: by_condition
        for entry, by_condition in chosen.items()
        if MAIN_CONDITION in by_condition and len(by_condition) > 1
    }
    rows = []
    for by_condition in chosen.values():
        ordered = {c: by_condition[c] for c in CONDITIONS if c in by_condition}
        use = _contrast(ordered)
        main = ordered[MAIN_CONDITION]
        process = run_process_metrics(run=main)
        rows.append(MirrorUseRow(main.model_entry, ordered, use, process))

    def order(row: MirrorUseRow) -> tuple[bool, float, str]:
        main = row.use["tables"][OVERALL]["avg"]["scores"][MAIN_CONDITION]
        return (row.reference, -(main if main is not None else -9), row.entry.name)

    return sorted(rows, key=order)


def _counted_runs(version: str) -> QuerySet[Run]:
    """The runs the mirror-use contrasts may count, newest first: public, completed, measured
    here or uploaded (the paper's rows have no episodes), of benchmark ``version``."""
    return (
        Run.objects.public()
        .filter(status=Run.Status.COMPLETED, benchmark__name=version)
        .exclude(source=Run.Source.REPORTED)
        .order_by("-finished", "-pk")
    )


def _contrast(ordered: dict[str, Run]) -> dict[str, Any]:
    """``evaluation.mirror_use`` over one model's runs, a condition each (a query a run:
    ``run_results`` knows how a run's episodes are scored, their repeats too)."""
    return mirror_use({c: run_results(run=run) for c, run in ordered.items()})


@dataclass(frozen=True)
class ModelMirrorUse:
    """A model page's control runs beside its main run (issue 36)."""

    runs: dict[str, Run]
    """The newest public completed run of each condition, in ``CONDITIONS`` order."""
    use: dict[str, Any] | None
    """``evaluation.mirror_use`` over ``runs``; None without both a main and a control run."""
    process: list[tuple[Run, list[dict[str, Any]]]]
    """Each of ``runs`` with its process metrics as ``process_table_rows`` gives them."""
    controls: list[Run]
    """Every public control run of the model, by condition, newest first (unfinished ones
    too)."""

    @property
    def tables(self) -> list[dict[str, Any]]:
        """The contrasts as a page shows them: per metric (AVG, then TSR) its rows
        (``mirror_use_table_rows``); none without ``use``."""
        if self.use is None:
            return []
        return [
            {"metric": metric, "rows": mirror_use_table_rows(self.use, metric)}
            for metric in CONTRAST_METRICS
        ]


def model_mirror_use(*, runs: Iterable[Run], version: str = BENCHMARK_VERSION) -> ModelMirrorUse:
    """Return one model's main and control runs contrasted, as ``mirror_use_rows`` does for
    the mirror-use view, and what each counted run's answers say.

    ``runs`` are the model's public runs (a model page has them already: no query for them).
    The counted runs are the newest completed one of each condition of benchmark ``version``
    that is not the paper's (its rows keep no answers), as the view counts them: a query for
    each one's answers, and with a main and a control run, one more for each one's episodes.
    """
    runs = list(runs)
    controls = sorted(
        (r for r in runs if r.condition != MAIN_CONDITION),
        key=lambda r: (CONDITIONS.index(r.condition), -r.pk),
    )
    counted = [
        r
        for r in runs
        if r.status == Run.Status.COMPLETED
        and r.source != Run.Source.REPORTED
        and r.benchmark.name == version
    ]
    chosen: dict[str, Run] = {}
    for run in sorted(counted, key=lambda r: (r.finished is not None, r.finished, r.pk)):
        chosen[run.condition] = run  # the newest last
    ordered = {c: chosen[c] for c in CONDITIONS if c in chosen}
    use = _contrast(ordered) if MAIN_CONDITION in ordered and len(ordered) > 1 else None
    process = [(run, process_table_rows(run_process_metrics(run=run))) for run in ordered.values()]
    return ModelMirrorUse(ordered, use, process, controls)


def mirror_use_table_rows(use: dict[str, Any], metric: str) -> list[dict[str, Any]]:
    """Return one metric of ``evaluation.mirror_use``'s result as rows for a page: per table
    (each level, then overall) its ``scores`` and ``differences`` by condition."""
    return [
        {"table": table, "label": _table_label(table), **use["tables"][table][metric]}
        for table in TABLES
    ]


def process_table_rows(process: dict[str, Any]) -> list[dict[str, Any]]:
    """Return process metrics (``process_json``) as rows for a page: each level, the pooled
    attribution levels, then overall, each with its cells per track (overall first)."""
    tables = {**process["levels"], ATTRIBUTION: process[ATTRIBUTION], OVERALL: process[OVERALL]}
    return [
        {
            "table": table,
            "label": _table_label(table),
            "cells": [row[track] for track in (OVERALL, *TRACK_KEYS)],
        }
        for table, row in tables.items()
    ]


def _table_label(table: str) -> str:
    if table == OVERALL:
        return "Overall"
    return table if table == ATTRIBUTION else level_short(table)


def mirror_use_csv_rows(rows: list[MirrorUseRow]) -> tuple[list[str], list[list[Any]]]:
    """Return the view's CSV: one line per model, table and metric, with every condition's
    score and each control's difference from main with its interval."""
    header = ["model", "slug", "reference", "table", "metric", "scenes"]
    header += [f"{c}_score" for c in CONDITIONS]
    for control in CONTROL_CONDITIONS:
        header += [
            f"main_minus_{control}",
            f"main_minus_{control}_low",
            f"main_minus_{control}_high",
        ]
    lines = []
    for row in rows:
        for table in TABLES:
            for metric in CONTRAST_METRICS:
                cell = row.use["tables"][table][metric]
                line = [row.entry.name, row.entry.slug, row.reference, table, metric]
                line += [row.use["scenes"], *(cell["scores"].get(c) for c in CONDITIONS)]
                for control in CONTROL_CONDITIONS:
                    diff = cell["differences"].get(control)
                    ci = diff["ci"] if diff and diff["ci"] else [None, None]
                    line += [diff["value"] if diff else None, *ci]
                lines.append(line)
    return header, lines


def run_process_metrics(*, run: Run) -> dict[str, Any]:
    """Return what a run's answers say (``evaluation.process_metrics.process_json``) from its
    completed episodes' stored steps (one query)."""
    episodes: dict[int, dict[str, Any]] = {}
    steps = (
        Step.objects.filter(episode__run=run, episode__status=Episode.Status.COMPLETED)
        .order_by("episode_id", "index")
        .values_list("episode_id", "episode__level", "episode__scene__track", "response", "option")
    )
    for episode_id, level, track, response, option in steps:
        episode = episodes.setdefault(
            episode_id, {"level": level, "track": track, "status": COMPLETED, "steps": []}
        )
        episode["steps"].append({"response": response, "option": option})
    return process_json(episodes.values())


PROCESS_COLUMNS = (
    "responses",
    "mirror_mentions",
    "mirror_share",
    "own_reflection",
    "own_share",
    "stated_direction",
    "consistent",
    "consistency",
)
"""The columns of a process-metrics cell, in the CSV's order."""


def process_csv_rows(process: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """Return process metrics as CSV: one line per table (each level, L2+L3, overall) and
    track, with the method named on every line."""
    header = ["method", "table", "track", *PROCESS_COLUMNS]
    tables = {**process["levels"], ATTRIBUTION: process[ATTRIBUTION], OVERALL: process[OVERALL]}
    lines = [
        [process["method"], table, track, *(cell[c] for c in PROCESS_COLUMNS)]
        for table, row in tables.items()
        for track, cell in row.items()
    ]
    return header, lines
