"""Reads for the charts: the listed public runs of one benchmark version, with their tables.

Every chart ranks within one benchmark version, as the tables do, and shows only listed public
runs: a private run never reaches a chart, and neither does its model. Cognitive stability is
read as stored by ``services.scores.run_scores_refresh``, never computed here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db.models import QuerySet

from evaluation.vocabulary import AVG, LEVEL_KEYS, METRICS, OVERALL
from leaderboard.boards.costs import RunCost, price_table, run_cost
from leaderboard.boards.selectors import sanity_check
from leaderboard.models import Episode, ModelEntry, Run, RunScore
from simulation.versions import BENCHMARK_VERSION

MLLM_KINDS = (ModelEntry.Kind.PROPRIETARY, ModelEntry.Kind.OPEN_WEIGHTS)
MAX_MODELS = 4
"""Most models one radar, trajectory chart or comparison shows."""
RANDOM_SLUG = "random"
# Which of a model's listed runs stands for it on a chart: one with per-scene results first,
# then this order of sources.
_SOURCE_ORDER: dict[str, int] = {
    Run.Source.EVALUATED: 0,
    Run.Source.VERIFIED: 1,
    Run.Source.REPORTED: 2,
}


@dataclass
class ChartRun:
    """One listed public run as the charts need it."""

    run_id: int
    model: str
    slug: str
    kind: str
    params_b: float | None
    source: str
    cognitive_stability: float | None
    cognitive_stability_ci: tuple[float, float] | None
    tables: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    """Table ("0" to "3", "overall") -> track -> metric -> value."""

    @property
    def overall_avg(self) -> float | None:
        """The AVG of Table II's Overall column: what the leaderboard ranks by."""
        return self.tables.get(OVERALL, {}).get(OVERALL, {}).get(AVG)

    @property
    def has_levels(self) -> bool:
        """Whether the run has the Overall column of all four level tables."""
        return all(OVERALL in self.tables.get(level, {}) for level in LEVEL_KEYS)


def _listed(version: str) -> QuerySet[RunScore]:
    return RunScore.objects.on_board(version)


def chart_runs(
    *, version: str = BENCHMARK_VERSION, slugs: Sequence[str] = (), baselines: bool = False
) -> list[ChartRun]:
    """Return the listed public runs of ``version`` (those of ``slugs`` only, when given); the
    sanity-check baselines only when named in ``slugs`` or with ``baselines``, as on the board.

    One query: the score rows joined with their runs and model entries. Runs are in the
    leaderboard's order: overall AVG, best first, then model name.
    """
    scores = _listed(version)
    if slugs:
        scores = scores.filter(run__model_entry__slug__in=list(slugs))
    values = scores.values(
        "run_id",
        "table",
        "track",
        *METRICS,
        "run__source",
        "run__agent",
        "run__cognitive_stability",
        "run__cognitive_stability_ci",
        "run__model_entry__name",
        "run__model_entry__slug",
        "run__model_entry__kind",
        "run__model_entry__params_b",
    )
    runs: dict[int, ChartRun] = {}
    for v in values:
        run = runs.get(v["run_id"])
        if run is None:
            kind, slug = v["run__model_entry__kind"], v["run__model_entry__slug"]
            if not (baselines or slugs) and sanity_check(
                kind=kind, slug=slug, agent=v["run__agent"]
            ):
                continue
            ci = v["run__cognitive_stability_ci"]
            run = runs[v["run_id"]] = ChartRun(
                run_id=v["run_id"],
                model=v["run__model_entry__name"],
                slug=v["run__model_entry__slug"],
                kind=v["run__model_entry__kind"],
                params_b=v["run__model_entry__params_b"],
                source=v["run__source"],
                cognitive_stability=v["run__cognitive_stability"],
                cognitive_stability_ci=(float(ci[0]), float(ci[1])) if ci else None,
            )
        run.tables.setdefault(v["table"], {})[v["track"]] = {m: v[m] for m in METRICS}
    return sorted(runs.values(), key=_rank_key)


def _rank_key(run: ChartRun) -> tuple[bool, float, str, int]:
    avg = run.overall_avg
    return (avg is None, -(avg or 0.0), run.model, run.run_id)


def _preference(run: ChartRun) -> tuple[bool, int, int]:
    return (run.cognitive_stability is None, _SOURCE_ORDER.get(run.source, 3), -run.run_id)


def runs_by_model(runs: Iterable[ChartRun]) -> dict[str, ChartRun]:
    """Return the run that stands for each model (by slug): one with per-scene results if the
    model has one (evaluated here before uploaded), else its reported row."""
    chosen: dict[str, ChartRun] = {}
    for run in runs:
        if run.slug not in chosen or _preference(run) < _preference(chosen[run.slug]):
            chosen[run.slug] = run
    return chosen


def chart_runs_for(*, version: str, slugs: Sequence[str]) -> list[ChartRun]:
    """Return the run that stands for each model of ``slugs``, in that order (one query).

    A slug without a listed public run in ``version`` is left out; ``slugs_unknown`` names them.
    """
    chosen = runs_by_model(chart_runs(version=version, slugs=slugs))
    return [chosen[slug] for slug in slugs if slug in chosen]


def slugs_unknown(*, version: str, slugs: Sequence[str]) -> list[str]:
    """Return the slugs of ``slugs`` that have no listed public run in ``version`` (one query)."""
    known = set(
        Run.objects.on_board(version)
        .filter(model_entry__slug__in=list(slugs))
        .values_list("model_entry__slug", flat=True)
    )
    return [slug for slug in slugs if slug not in known]


def chart_models(*, version: str = BENCHMARK_VERSION) -> list[tuple[str, str]]:
    """Return (slug, name) of every model with a listed public run in ``version``, by name."""
    rows = (
        Run.objects.on_board(version)
        .values_list("model_entry__slug", "model_entry__name")
        .distinct()
        .order_by("model_entry__name")
    )
    return list(rows)


def default_slugs(runs: Sequence[ChartRun]) -> list[str]:
    """Return the models a chart shows when none is picked: the three best MLLMs with level
    tables, and the random baseline when it has them too (``runs`` in rank order)."""
    with_levels = [run for run in runs if run.has_levels]
    best = list(dict.fromkeys(run.slug for run in with_levels if run.kind in MLLM_KINDS))[:3]
    if any(run.slug == RANDOM_SLUG for run in with_levels):
        best.append(RANDOM_SLUG)
    return best[:MAX_MODELS]


def best_model_slug(*, version: str = BENCHMARK_VERSION) -> str | None:
    """Return the MLLM with the highest overall AVG among those with level tables (one query)."""
    levels = _listed(version).filter(table=LEVEL_KEYS[-1], track=OVERALL).values("run_id")
    row = (
        _listed(version)
        .filter(
            table=OVERALL,
            track=OVERALL,
            run__model_entry__kind__in=MLLM_KINDS,
            run_id__in=levels,
        )
        .order_by("-avg", "run__model_entry__name")
        .values_list("run__model_entry__slug", flat=True)
        .first()
    )
    return row


def model_chart_version(*, entry: ModelEntry) -> str | None:
    """Return the benchmark version whose charts a model's page shows: the current one if the
    model is listed there, else the newest version it is listed in; None if it is listed nowhere.

    ``entry`` comes from ``selectors.model_entry_detail``, its public runs prefetched: no query.
    """
    listed = [run for run in entry.runs.all() if run.listed]
    if not listed:
        return None
    versions = {run.benchmark.name for run in listed}
    if BENCHMARK_VERSION in versions:
        return BENCHMARK_VERSION
    return max(listed, key=lambda run: run.created).benchmark.name


def scene_scores(*, run_ids: Sequence[int]) -> dict[int, dict[str, float]]:
    """Return, for each run, each scene's mean AVG over its completed episodes (one query).

    Only scenes with a completed episode at all four levels count, as in cognitive stability.
    """
    sums: dict[int, dict[str, list[float]]] = {}
    rows = Episode.objects.filter(
        run_id__in=list(run_ids),
        run__visibility=Run.Visibility.PUBLIC,
        status=Episode.Status.COMPLETED,
    ).values_list("run_id", "scene__scene_id", "avg")
    for run_id, scene_id, avg in rows:
        if avg is not None:
            sums.setdefault(run_id, {}).setdefault(scene_id, []).append(avg)
    return {
        run_id: {
            scene: sum(values) / len(values)
            for scene, values in scenes.items()
            if len(values) == len(LEVEL_KEYS)
        }
        for run_id, scenes in sums.items()
    }


def scene_level_episodes(*, run_ids: Sequence[int]) -> dict[int, dict[tuple[str, int], int]]:
    """Return, for each public run of ``run_ids``, its episode ids by (scene id, level)."""
    episodes: dict[int, dict[tuple[str, int], int]] = {}
    rows = Episode.objects.filter(
        run_id__in=list(run_ids), run__visibility=Run.Visibility.PUBLIC
    ).values_list("run_id", "scene__scene_id", "level", "pk")
    for run_id, scene_id, level, pk in rows:
        episodes.setdefault(run_id, {})[(scene_id, level)] = pk
    return episodes


@dataclass(frozen=True)
class CostPoint:
    """A listed run's overall AVG beside what its tokens cost (``boards.costs``)."""

    model: str
    slug: str
    kind: str
    overall_avg: float | None
    cost: RunCost


def cost_points(*, runs: Sequence[ChartRun]) -> list[CostPoint]:
    """Return the runs of ``runs`` (``chart_runs``) with episodes, with their measured tokens
    and cost, in their order (two queries: the runs' token totals and prices, the price table).
    The paper's rows are left out: it publishes no tokens."""
    measured = [r.run_id for r in runs if r.source != Run.Source.REPORTED]
    rows = Run.objects.in_bulk(measured)
    table = price_table()
    return [
        CostPoint(r.model, r.slug, r.kind, r.overall_avg, run_cost(run=rows[r.run_id], table=table))
        for r in runs
        if r.run_id in rows
    ]
