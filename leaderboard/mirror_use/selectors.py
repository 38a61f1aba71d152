"""Reads of the mirror-use view: per model, its newest public completed run of each condition,
and ``evaluation.mirror_use``'s scores, differences and intervals over them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from evaluation.mirror_use import CONTRAST_METRICS, mirror_use
from evaluation.vocabulary import (
    CONDITIONS,
    CONTROL_CONDITIONS,
    LEVEL_KEYS,
    MAIN_CONDITION,
    OVERALL,
)
from leaderboard.models import ModelEntry, Run
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

    @property
    def reference(self) -> bool:
        """A baseline's row: what no use of the mirror (or perfect use) looks like."""
        return self.entry.kind == ModelEntry.Kind.BASELINE


def mirror_use_rows(*, version: str = BENCHMARK_VERSION) -> list[MirrorUseRow]:
    """Return a row per model with a main run and at least one control run (a query, then one
    per run shown).

    Only public, completed runs of benchmark ``version`` count, the newest of each condition.
    Models come first, ranked by their overall main AVG, the baselines after them.
    """
    runs = (
        Run.objects.public()
        .filter(status=Run.Status.COMPLETED, benchmark__name=version)
        .exclude(source=Run.Source.REPORTED)
        .select_related("model_entry")
        .order_by("-finished", "-pk")
    )
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
        # run_results knows how a run's episodes are scored (their repeats too): a query a run.
        use = mirror_use({c: run_results(run=run) for c, run in ordered.items()})
        rows.append(MirrorUseRow(next(iter(ordered.values())).model_entry, ordered, use))

    def order(row: MirrorUseRow) -> tuple[bool, float, str]:
        main = row.use["tables"][OVERALL]["avg"]["scores"][MAIN_CONDITION]
        return (row.reference, -(main if main is not None else -9), row.entry.name)

    return sorted(rows, key=order)


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
