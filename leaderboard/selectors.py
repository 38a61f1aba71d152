"""Reads: the leaderboard tables (pandas), Table III, model and run pages."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Self, overload
from urllib.parse import urlsplit

import pandas as pd
from django.conf import settings
from django.core.files.storage import default_storage
from django.db.models import Avg, Count, Exists, Max, OuterRef, Prefetch, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from evaluation.metrics import METRICS, TRACKS, EpisodeResult, track_table
from leaderboard.models import (
    Episode,
    ModelEntry,
    Run,
    RunScore,
    Scene,
    Step,
)
from simulation.dynamics import Vec3
from simulation.render import DEFAULT_SIZE
from simulation.versions import BENCHMARK_VERSION

TABLES = ("overall", "0", "1", "2", "3")
SCORE_COLUMNS = [f"{track}_{metric}" for track in TRACKS for metric in METRICS]
CSV_COLUMNS = ["rank", "model", "kind", "params_b", "source", *SCORE_COLUMNS, "cognitive_stability"]
SORT_KEYS = ("rank", "model", "params_b", *SCORE_COLUMNS, "cognitive_stability")
_INFO = [
    "run_id",
    "model",
    "slug",
    "kind",
    "params_b",
    "organisation",
    "source",
    "cognitive_stability",
    "reference",
    "agent",
    "partial",
    "renderer",
]
RANKED_KINDS = (ModelEntry.Kind.PROPRIETARY, ModelEntry.Kind.OPEN_WEIGHTS)
"""Only multimodal models are ranked and marked; baselines and the human reference are
reference rows: shown for comparison, never ranked against."""
SANITY_CHECK_AGENTS = ("oracle",)
"""Baselines hidden unless asked for (``baselines=show``): the oracle knows the way to the mark,
so its 1.000s say the scoring works, not how hard the task is."""


def key_column(sort: str) -> str:
    """Return the score column a phone shows beside the model: the sorted one, else the
    ranking score (overall AVG)."""
    return sort if sort in (*SCORE_COLUMNS, "cognitive_stability") else "overall_avg"


@dataclass(frozen=True)
class LeaderboardFilters:
    """What a visitor filtered and sorted by (validated by ``leaderboard.forms``)."""

    kinds: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    params_min: float | None = None
    params_max: float | None = None
    q: str = ""
    sort: str = "rank"
    descending: bool = False
    version: str = BENCHMARK_VERSION
    """The benchmark version whose runs are ranked; versions never share a table."""
    baselines: bool = False
    """Show every baseline, the sanity checks (the oracle) too."""
    intervals: bool = False
    """Show each cell's 95% interval as a half-width beside it, not only on hover."""
    renderer: str = ""
    """Only runs whose agent saw this renderer's frames: "mujoco" or "isaac"; "" for all."""


def episodes_href(run_id: int, table: str, track: str) -> str:
    """Return the address of a table cell's episodes: its run's list, filtered."""
    query = [f"level={table}"] if table != "overall" else []
    query += [f"track={track}"] if track != "overall" else []
    return f"/runs/{run_id}/" + (f"?{'&'.join(query)}" if query else "") + "#episodes"


@dataclass
class LeaderboardTable:
    """A ranked leaderboard: one row per listed run, plus the best and second-best marks."""

    table: str
    frame: pd.DataFrame
    marks: dict[str, dict[int, str]] = field(default_factory=dict)
    """column -> {run_id: "first" | "second"}"""
    total: int = 0
    """Rows before filtering."""
    version: str = BENCHMARK_VERSION
    key: str = "overall_avg"
    """The score column shown beside the model on a phone (``key_column``)."""
    intervals: bool = False
    hidden: int = 0
    """Sanity-check baselines left out (``LeaderboardFilters.baselines``)."""

    def rows(self) -> list[dict[str, Any]]:
        """Return the rows as dicts; ``cells`` holds each score column's value, mark and CI."""
        rows = []
        for record in self.frame.to_dict("records"):
            cells = []
            # Rows with episodes link each cell to them: that run, level and track.
            linked = record["source"] != Run.Source.REPORTED
            for i, column in enumerate(SCORE_COLUMNS):
                value = record[column]
                ci = record.get(f"{column}_ci")
                track = column.split("_")[0]
                cells.append(
                    {
                        "value": None if _missing(value) else value,
                        "mark": self.marks.get(column, {}).get(record["run_id"], ""),
                        "ci": ci if isinstance(ci, list | tuple) else None,
                        "episodes": _count(record.get(f"{track}_episodes")),
                        "group_start": i % len(METRICS) == 0,
                        "href": episodes_href(int(record["run_id"]), self.table, track)
                        if linked
                        else "",
                        "intervals": self.intervals,
                    }
                )
            info = {k: None if _missing(record[k]) else record[k] for k in ("rank", *_INFO)}
            key = record[self.key]
            key_cell = {
                "value": None if _missing(key) else key,
                "mark": self.marks.get(self.key, {}).get(record["run_id"], ""),
            }
            rows.append({**info, "cells": cells, "key": key_cell, "version": self.version})
        return rows

    def csv_rows(self) -> list[list[Any]]:
        """Return the rows of the CSV download (columns ``CSV_COLUMNS``): parameter counts as
        written (``7``, ``0.5``), everything else as its value."""
        rows = []
        for record in self.frame[CSV_COLUMNS].to_dict("records"):
            params = record["params_b"]
            record["params_b"] = "" if _missing(params) else f"{params:g}"
            rank = record["rank"]
            record["rank"] = None if _missing(rank) else int(rank)
            rows.append([record[column] for column in CSV_COLUMNS])
        return rows


def _count(value: Any) -> int | None:
    return None if _missing(value) else int(value)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _public_scores(table: str, version: str) -> QuerySet[RunScore]:
    return RunScore.objects.filter(
        table=table,
        run__listed=True,
        run__visibility=Run.Visibility.PUBLIC,
        run__benchmark__name=version,
    )


def leaderboard_frame(*, table: str, version: str = BENCHMARK_VERSION) -> pd.DataFrame:
    """Return one wide row per listed public run: model info and every score column.

    One query: the scores of ``table`` joined with their runs and model entries.
    """
    values = _public_scores(table, version).values(
        "run_id",
        "track",
        *METRICS,
        "ci",
        "episodes",
        "run__source",
        "run__agent",
        "run__cognitive_stability",
        "run__model_entry__name",
        "run__model_entry__slug",
        "run__model_entry__kind",
        "run__model_entry__params_b",
        "run__model_entry__organisation",
        "run__submission__partial",
        "run__metadata__renderer__version",
    )
    wide: dict[int, dict[str, Any]] = {}
    for v in values:
        row = wide.setdefault(
            v["run_id"],
            {
                "run_id": v["run_id"],
                "model": v["run__model_entry__name"],
                "slug": v["run__model_entry__slug"],
                "kind": v["run__model_entry__kind"],
                "params_b": v["run__model_entry__params_b"],
                "organisation": v["run__model_entry__organisation"],
                "source": v["run__source"],
                "agent": v["run__agent"],
                "reference": v["run__model_entry__kind"] not in RANKED_KINDS,
                # Stored with the scores (services.scores); None without per-scene results.
                "cognitive_stability": v["run__cognitive_stability"],
                # An uploaded bundle of fewer than 264 episodes that a moderator let on.
                "partial": bool(v["run__submission__partial"]),
                "renderer": _renderer_family(
                    v["run__source"], v["run__metadata__renderer__version"]
                ),
            },
        )
        track = v["track"]
        row[f"{track}_episodes"] = v["episodes"]
        for metric in METRICS:
            row[f"{track}_{metric}"] = v[metric]
            if v["ci"]:
                row[f"{track}_{metric}_ci"] = v["ci"].get(metric)
    rows = list(wide.values())
    # Every score column exists even when no row has it (an empty table, a missing track).
    columns = dict.fromkeys([*_INFO, *SCORE_COLUMNS, *(key for row in rows for key in row)])
    return pd.DataFrame(rows, columns=list(columns))


def _sanity_checks(frame: pd.DataFrame) -> pd.Series:
    """Return which rows are sanity-check baselines (hidden unless ``baselines`` is set)."""
    baseline = frame["kind"].eq(ModelEntry.Kind.BASELINE)
    oracle = frame["agent"].isin(SANITY_CHECK_AGENTS) | frame["slug"].isin(SANITY_CHECK_AGENTS)
    return baseline & oracle


def _renderer_family(source: str, version: Any) -> str:
    """Which renderer a run's agent saw: "isaac" for the paper's rows (the authors rendered
    in Isaac Sim) and Isaac runs, "mujoco" for this site's, "" when a bundle does not say."""
    if source == Run.Source.REPORTED:
        return "isaac"
    text = str(version or "")
    if "isaacsim" in text:
        return "isaac"
    return "mujoco" if "mujoco" in text else ""


def _filtered(frame: pd.DataFrame, filters: LeaderboardFilters) -> pd.DataFrame:
    mask = pd.Series(True, index=frame.index)
    if filters.renderer:
        mask &= frame["renderer"] == filters.renderer
    if not filters.baselines:
        mask &= ~_sanity_checks(frame)
    if filters.kinds:
        mask &= frame["kind"].isin(filters.kinds)
    if filters.sources:
        mask &= frame["source"].isin(filters.sources)
    if filters.params_min is not None:
        mask &= frame["params_b"].ge(filters.params_min).fillna(False).astype(bool)
    if filters.params_max is not None:
        mask &= frame["params_b"].le(filters.params_max).fillna(False).astype(bool)
    if filters.q:
        needle = filters.q.lower()
        mask &= frame["model"].str.lower().str.contains(needle, regex=False) | frame[
            "organisation"
        ].str.lower().str.contains(needle, regex=False)
    return frame[mask]


def _marks(frame: pd.DataFrame) -> dict[str, dict[int, str]]:
    """Mark the highest and second-highest value of each column, as the paper does.

    Only multimodal models compete: the human reference and the baselines (reference rows) are
    never marked and never take a mark. A column where every model has the same value gets no
    mark.
    """
    contenders = frame[frame["kind"].isin(RANKED_KINDS)]
    marks: dict[str, dict[int, str]] = {}
    for column in SCORE_COLUMNS:
        values = contenders[column].dropna().astype(float).round(3)
        ranked = sorted(set(values), reverse=True)[:2]
        column_marks: dict[int, str] = {}
        if len(ranked) < 2:
            # Every row ties (e.g. TSR 0.000 everywhere at level 3): a mark would say nothing.
            marks[column] = column_marks
            continue
        for run_id, value in zip(contenders.loc[values.index, "run_id"], values, strict=True):
            if ranked and value == ranked[0]:
                column_marks[int(run_id)] = "first"
            elif len(ranked) > 1 and value == ranked[1]:
                column_marks[int(run_id)] = "second"
        marks[column] = column_marks
    return marks


def leaderboard_table(*, table: str, filters: LeaderboardFilters) -> LeaderboardTable:
    """Return the ranked, filtered and sorted leaderboard for ``table`` (overall or a level).

    Multimodal models are ranked by overall AVG (ties share a rank); reference rows (the human
    reference, the baselines) stand where their overall AVG puts them, without a rank.
    """
    if table not in TABLES:
        raise ValueError(f"table must be one of {', '.join(TABLES)}, got {table!r}")
    frame = leaderboard_frame(table=table, version=filters.version)
    total = len(frame)
    hidden = 0 if filters.baselines else int(_sanity_checks(frame).sum())
    frame = _filtered(frame, filters)
    frame = frame.sort_values(
        ["overall_avg", "model", "run_id"], ascending=[False, True, True], na_position="last"
    )
    ranked = frame["kind"].isin(RANKED_KINDS)
    frame.insert(0, "rank", frame["overall_avg"].where(ranked).rank(method="min", ascending=False))
    # Whole numbers, and None (not NaN) for the reference rows: as the CSV and the API show them.
    frame["rank"] = pd.Series(
        [None if _missing(r) else int(r) for r in frame["rank"]], index=frame.index, dtype=object
    )
    if filters.sort != "rank":
        frame = frame.sort_values(
            [filters.sort, "model", "run_id"],
            ascending=[not filters.descending, True, True],
            na_position="last",
            kind="stable",
        )
    elif filters.descending:
        frame = frame.iloc[::-1]
    return LeaderboardTable(
        table,
        frame.reset_index(drop=True),
        _marks(frame),
        total,
        version=filters.version,
        key=key_column(filters.sort),
        intervals=filters.intervals,
        hidden=hidden,
    )


def leaderboard_table_cached(*, table: str, filters: LeaderboardFilters) -> LeaderboardTable:
    """Return ``leaderboard_table``, cached until the data version changes (the API's rows)."""
    from leaderboard.services.data_version import data_version_cached

    return data_version_cached(
        "table", (table, filters), lambda: leaderboard_table(table=table, filters=filters)
    )


def level_tables_by_run(
    *, kinds: Sequence[str] = (), sources: Sequence[str] = (), version: str = BENCHMARK_VERSION
) -> dict[int, dict[str, Any]]:
    """Return {run id: {level: {track: scores}}} for listed public runs with level tables."""
    scores = RunScore.objects.filter(
        run__listed=True,
        run__visibility=Run.Visibility.PUBLIC,
        run__benchmark__name=version,
        table__in=["0", "1", "2", "3"],
    )
    if kinds:
        scores = scores.filter(run__model_entry__kind__in=kinds)
    if sources:
        scores = scores.filter(run__source__in=sources)
    tables: dict[int, dict[str, Any]] = {}
    for s in scores.values("run_id", "table", "track", *METRICS):
        level = tables.setdefault(s["run_id"], {}).setdefault(s["table"], {})
        level[s["track"]] = {m: s[m] for m in METRICS}
    # Table III and the gaps need both tracks at all four levels.
    return {
        run: t
        for run, t in tables.items()
        if len(t) == 4 and all({"human", "robot"} <= set(level) for level in t.values())
    }


@dataclass
class TracksPage:
    """Table III and the per-model Human minus Robot gaps."""

    table_iii: dict[str, dict[str, float | None]]
    models: int
    gaps: list[dict[str, Any]]


def tracks_page(*, sources: Sequence[str] = (), version: str = BENCHMARK_VERSION) -> TracksPage:
    """Return Table III (mean AVG over MLLM results by level and track) and per-model gaps."""
    mllm = (ModelEntry.Kind.PROPRIETARY, ModelEntry.Kind.OPEN_WEIGHTS)
    by_run = level_tables_by_run(kinds=mllm, sources=sources, version=version)
    table_iii = track_table({str(run): tables for run, tables in by_run.items()}) if by_run else {}
    all_runs = level_tables_by_run(sources=sources, version=version)
    runs = (
        Run.objects.filter(pk__in=all_runs)
        .select_related("model_entry")
        .only("source", "model_entry__name", "model_entry__slug", "model_entry__kind")
    )
    gaps = []
    for run in runs:
        levels = all_runs[run.pk]
        per_level = {
            level: levels[level]["human"]["avg"] - levels[level]["robot"]["avg"]
            for level in ("0", "1", "2", "3")
        }
        gaps.append(
            {
                "model": run.model_entry.name,
                "slug": run.model_entry.slug,
                "kind": run.model_entry.kind,
                "source": run.source,
                "levels": per_level,
                "mean": sum(per_level.values()) / 4,
            }
        )
    gaps.sort(key=lambda g: -g["mean"])
    return TracksPage(table_iii, len(by_run), gaps)


def model_entry_detail(*, slug: str) -> ModelEntry:
    """Return a model entry with its public runs and their scores (three queries)."""
    runs = (
        Run.objects.filter(visibility=Run.Visibility.PUBLIC)
        .select_related("benchmark", "submission")  # a submission's review note and partiality
        .prefetch_related(Prefetch("scores", queryset=RunScore.objects.order_by("table", "track")))
    )
    return _public_entries().prefetch_related(Prefetch("runs", queryset=runs)).get(slug=slug)


def run_tables(run: Run) -> list[dict[str, Any]]:
    """Return a run's tables in page order: levels 0-3, then overall, each with 3 track rows."""
    by_table: dict[str, dict[str, RunScore]] = {}
    for score in run.scores.all():
        by_table.setdefault(score.table, {})[score.track] = score
    tables = []
    for table in ("0", "1", "2", "3", "overall"):
        if table in by_table:
            title = "Overall (Table II)" if table == "overall" else f"Level {table}"
            tables.append(
                {"table": table, "title": title, "rows": [by_table[table].get(t) for t in TRACKS]}
            )
    return tables


def run_owned(*, run_id: int, user: Any) -> Run:
    """Return the run ``run_id`` if ``user`` owns it (Run.DoesNotExist otherwise)."""
    if not getattr(user, "is_authenticated", False):
        raise Run.DoesNotExist(f"no run {run_id} of yours")
    return Run.objects.get(pk=run_id, owner_id=user.pk)


def run_avg_by_level(*, run: Run) -> dict[str, float | None]:
    """Return the overall AVG of each level over the episodes finished so far."""
    from evaluation.metrics import score_json

    scores = score_json(run_results(run=run))
    return {
        level: (table.get("overall") or {}).get("avg") for level, table in scores["levels"].items()
    }


def run_visible(*, run_id: int, user: Any) -> Run:
    """Return a run that ``user`` may see: a public run, or their own private one."""
    visible = Q(visibility=Run.Visibility.PUBLIC)
    if user is not None and user.is_authenticated:
        visible |= Q(owner=user)
    return Run.objects.select_related("model_entry", "benchmark").get(visible, pk=run_id)


def scores_prefetch() -> Prefetch[Any]:
    """Return the prefetch of a run's scores in table and track order."""
    return Prefetch("scores", queryset=RunScore.objects.order_by("table", "track"))


def _public_entries() -> QuerySet[ModelEntry]:
    """Model entries with at least one public run: a private run must not reveal its model."""
    public = Run.objects.filter(model_entry=OuterRef("pk"), visibility=Run.Visibility.PUBLIC)
    return ModelEntry.objects.filter(Exists(public))


def model_entry_list() -> QuerySet[ModelEntry]:
    """Return the public model entries by name."""
    return _public_entries().order_by("name")


def _episode_count(condition: Q) -> Coalesce:
    """Return the number of a run's episodes that meet ``condition``, as an annotation.

    A subquery rather than a join: counting the runs for pagination then leaves it out, and
    only the runs of the page are counted (see ``_RunListQuerySet``).
    """
    counts = (
        Episode.objects.filter(condition, run=OuterRef("pk"))
        .order_by()
        .values("run")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counts), 0)


class _RunListQuerySet(QuerySet[Run]):
    """Runs whose slices (pages) are chosen first, in a subquery, then annotated.

    Sliced the usual way, SQLite works out the episode counts of every matching run before it
    sorts them and keeps one page: with 220 public runs of 264 episodes, 50 ms a page instead
    of 11 ms, and growing with every run. The page's rows, order and query count are the same.
    """

    @overload
    def __getitem__(self, k: int) -> Any: ...

    @overload
    def __getitem__(self, k: slice) -> Self: ...

    def __getitem__(self, k: int | slice) -> Any:
        page = super().__getitem__(k)
        if isinstance(page, QuerySet):
            return self.filter(pk__in=page.values("pk"))
        # A row, or a list (results already fetched, or a slice with a step).
        return page


def run_list() -> QuerySet[Run]:
    """Return the public runs with their model entries, episode counts and scores (2 queries).

    Its pages count the episodes of their own runs only (``_RunListQuerySet``).
    """
    return (
        _RunListQuerySet(Run)
        .filter(visibility=Run.Visibility.PUBLIC)
        .select_related("model_entry", "benchmark")
        .annotate(
            episodes_stored=_episode_count(Q()),
            episodes_completed=_episode_count(Q(status=Episode.Status.COMPLETED)),
            episodes_errored=_episode_count(Q(status=Episode.Status.ERROR)),
            episodes_succeeded=_episode_count(Q(success=True)),
        )
        .prefetch_related(scores_prefetch())
        .order_by("-created", "-id")
    )


def episode_list() -> QuerySet[Episode]:
    """Return the episodes of public runs with their scenes, in run, level and scene order."""
    return (
        Episode.objects.filter(run__visibility=Run.Visibility.PUBLIC)
        .select_related("scene")
        .order_by("run_id", "level", "scene_id")
    )


def run_results(*, run: Run) -> list[EpisodeResult]:
    """Return the metrics module's view of a run's episodes (one query)."""
    return [
        EpisodeResult(
            scene_id=e.scene.scene_id,
            track=e.scene.track,
            level=e.level,
            distances=tuple(e.distances),
            status=e.status,
        )
        for e in run.episodes.select_related("scene").filter(
            status__in=[Episode.Status.COMPLETED, Episode.Status.ERROR]
        )
    ]


def run_behaviour_records(*, run: Run) -> list[dict[str, Any]]:
    """Return a run's episodes as the records ``evaluation.confusion`` reads (two queries)."""
    records: dict[int, dict[str, Any]] = {}
    for pk, scene_id, track, level, status in run.episodes.values_list(
        "pk", "scene__scene_id", "scene__track", "level", "status"
    ):
        records[pk] = {
            "scene_id": scene_id,
            "track": track,
            "level": level,
            "status": status,
            "steps": [],
        }
    steps = Step.objects.filter(episode__run=run).order_by("episode_id", "index")
    for episode_id, option, executed, cell in steps.values_list(
        "episode_id", "option", "executed", "hand_cell"
    ):
        records[episode_id]["steps"].append(
            {"option": option, "executed": executed, "hand_cell": cell}
        )
    return list(records.values())


def run_progress(*, run: Run) -> dict[str, Any]:
    """Return a run's progress: episodes by status, steps, bad responses, tokens (two queries).

    ``cached_steps`` counts the steps answered from the response cache; the tokens, and the cost
    computed from them, leave those steps out: they were spent by the run that first asked.
    """
    counts = dict(
        run.episodes.values_list("status").annotate(n=Count("pk")).values_list("status", "n")
    )
    steps = Step.objects.filter(episode__run=run).aggregate(
        steps=Count("pk"),
        bad=Count("pk", filter=Q(option__isnull=True)),
        cached_steps=Count("pk", filter=Q(cached=True)),
        input_tokens=Coalesce(Sum("input_tokens", filter=Q(cached=False)), 0),
        output_tokens=Coalesce(Sum("output_tokens", filter=Q(cached=False)), 0),
    )
    done = counts.get(Episode.Status.COMPLETED, 0) + counts.get(Episode.Status.ERROR, 0)
    now = timezone.now()
    elapsed = ((run.finished or now) - run.started).total_seconds() if run.started else 0.0
    remaining = run.episodes_expected - done
    eta = None
    started = run.started
    if run.status in (Run.Status.PENDING, Run.Status.RUNNING) and started and remaining:
        finished = run.episodes.filter(
            status__in=[Episode.Status.COMPLETED, Episode.Status.ERROR], heartbeat__isnull=False
        ).values_list("heartbeat", flat=True)
        eta = eta_range(
            finished_s=[(t - started).total_seconds() for t in finished if t],
            now_s=elapsed,
            remaining=remaining,
        )
    return {
        "run": run.pk,
        "status": run.status,
        "episodes_total": run.episodes_expected,
        "episodes_done": done,
        "episodes_running": counts.get(Episode.Status.RUNNING, 0),
        "episodes_error": counts.get(Episode.Status.ERROR, 0),
        "elapsed_s": round(elapsed, 1),
        "eta_s": round((eta[0] + eta[1]) / 2, 1) if eta else None,
        "eta_low_s": round(eta[0], 1) if eta else None,
        "eta_high_s": round(eta[1], 1) if eta else None,
        "eta_text": eta_text(eta),
        "cost_usd": _cost(run, steps["input_tokens"], steps["output_tokens"]),
        **steps,
    }


def typical_steps() -> float:
    """Return the mean steps per episode of the random baseline's listed run here, or the
    protocol's figure (``evaluation.estimate.TYPICAL_STEPS``) when there is none."""
    from evaluation.estimate import TYPICAL_STEPS

    mean = (
        Episode.objects.filter(
            run__listed=True,
            run__agent="random",
            run__source=Run.Source.EVALUATED,
            run__benchmark__name=BENCHMARK_VERSION,
            status=Episode.Status.COMPLETED,
        )
        .aggregate(mean=Avg("steps_taken"))
        .get("mean")
    )
    return float(mean) if mean else TYPICAL_STEPS


def hosted_run_estimate(*, provider: str, model: str, levels: Sequence[int], scenes: str) -> Any:
    """Return what a hosted run would cost (``evaluation.estimate.RunEstimate``): requests,
    tokens and, when ``MIRRORBENCH_PRICES`` has the agent, US dollars."""
    from evaluation.estimate import estimate_run
    from simulation.catalogue import select_scenes

    price = settings.MIRRORBENCH_PRICES.get(f"{provider}:{model}") if model else None
    return estimate_run(
        scenes=select_scenes(scenes),
        levels=levels,
        provider=provider,
        typical_steps=typical_steps(),
        price=price,
    )


ETA_WINDOW = 20
"""Episodes whose finishing pace gives the recent rate of a run (``eta_range``)."""


def eta_range(
    *, finished_s: Sequence[float], now_s: float, remaining: int, window: int = ETA_WINDOW
) -> tuple[float, float] | None:
    """Return how many seconds a run still needs, as a (sooner, later) range; None without a
    finished episode to judge by.

    Two paces bound it: the run's own (episodes finished over the time since it started) and
    the recent one (its last ``window`` episodes over the time since the episode before them
    finished, up to now, so a run that has stalled slows it). Episodes run in parallel, so the
    pace already counts the workers; an early burst (cached answers, a fast baseline) or a slow
    patch (the cores busy rendering) moves one pace and widens the range instead of misleading.
    """
    times = sorted(t for t in finished_s if t >= 0)
    if not times or remaining <= 0:
        return None
    overall = len(times) / max(now_s, times[-1], 1e-9)
    recent_n = min(window, len(times))
    since = times[-recent_n - 1] if len(times) > recent_n else 0.0
    recent = recent_n / max(now_s - since, 1e-9)
    slow, fast = sorted((overall, recent))
    return remaining / fast, remaining / slow


def eta_text(eta: tuple[float, float] | None) -> str:
    """Return an ETA range in words: "about 2 minutes", "5 to 8 minutes", "40 to 90 seconds"."""
    if eta is None:
        return "\u2014"
    low, high = eta
    if high < 90:
        low_s, high_s = max(1, round(low)), max(1, round(high))
        return f"about {high_s} seconds" if low_s == high_s else f"{low_s} to {high_s} seconds"
    if high < 5400:
        low_m, high_m = max(1, round(low / 60)), max(1, round(high / 60))
        unit = "minute" if high_m == 1 else "minutes"
        return f"about {high_m} {unit}" if low_m == high_m else f"{low_m} to {high_m} minutes"
    low_h, high_h = low / 3600, high / 3600
    if round(low_h, 1) == round(high_h, 1):
        return f"about {high_h:.1f} hours"
    return f"{low_h:.1f} to {high_h:.1f} hours"


def _cost(run: Run, input_tokens: int, output_tokens: int) -> float | None:
    """Return the run's cost so far in US dollars, when a price is configured for its agent
    (``input_tokens`` and ``output_tokens``: those spent, cached steps left out)."""
    price = settings.MIRRORBENCH_PRICES.get((run.spec or {}).get("agent", ""))
    if not price:
        return None
    cost = input_tokens * float(price.get("input_per_mtok", 0)) + output_tokens * float(
        price.get("output_per_mtok", 0)
    )
    return round(cost / 1e6, 4)


def run_bundle(*, run: Run, user: Any = None) -> list[dict[str, Any]]:
    """Return a run as results-bundle records (header first) that ``mirrorbench verify`` accepts.

    Built from stored data only (no client, no API key): the header stored with the run when it
    was created or imported, or, for runs created before headers were stored, one described
    from the run's spec. The header's endpoint is whole for the run's owner and moderators
    (and with ``user`` None: the ``export_run`` command), its scheme and host for anyone else.
    """
    episodes = list(
        run.episodes.select_related("scene")
        .prefetch_related(Prefetch("steps", queryset=Step.objects.order_by("index")))
        .filter(status__in=[Episode.Status.COMPLETED, Episode.Status.ERROR])
        .order_by("level", "scene_id")
    )
    header = run_header(run=run)
    if user is not None:
        header = header_for(header, run=run, user=user)
    return [header, *(e.as_record([s.as_record() for s in e.steps.all()]) for e in episodes)]


def run_header(*, run: Run) -> dict[str, Any]:
    """Return the bundle header of ``run``, from what is stored (see ``run_bundle``)."""
    from evaluation.bundle import make_header
    from evaluation.messages import GenerationParams
    from evaluation.registry import describe_agent, header_extras
    from simulation.render import renderer_version

    if run.metadata.get("type") == "header":
        header = dict(run.metadata)
        header["tool"] = {**header.get("tool", {}), "run": run.pk}
        return header
    spec = run.spec
    levels = sorted({e.level for e in run.episodes.all()})
    ordered = run.episodes.select_related("scene").order_by("scene_id")
    scenes = list(dict.fromkeys(e.scene.scene_id for e in ordered))
    # What the worker sends (services.runs): temperature 0, no seed, a cap only if the spec has one.
    params = GenerationParams(max_tokens=spec.get("max_tokens"))
    return make_header(
        benchmark=run.benchmark.as_dict(),
        agent=describe_agent(spec["agent"], seed=spec["seed"], image_history=spec["image_history"]),
        renderer={
            "version": renderer_version(),
            "image_size": spec["image_size"],
            "image_history": spec["image_history"],
        },
        selection={"levels": levels, "scenes": scenes},
        seed=spec["seed"],
        created=run.created.isoformat(timespec="seconds"),
        tool={"run": run.pk},
        extra=header_extras(spec["agent"], base_url=spec["base_url"], params=params),
    )


def endpoint_origin(base_url: str) -> str:
    """The scheme and host of ``base_url`` (and its port, if it names one); no path.

    A hosted run's path may hold a key or a deployment id, so this is all that anyone but the
    run's owner and the moderators sees of it.
    """
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None:
        host = f"{host}:{port}"
    return f"{parts.scheme}://{host}"


def endpoint_visible_whole(*, run: Run, user: Any) -> bool:
    """Whether ``user`` may see the whole endpoint of ``run``: its owner or a moderator."""
    from leaderboard.submission_selectors import is_moderator

    if user is None or not getattr(user, "is_authenticated", False):
        return False
    return (run.owner_id is not None and run.owner_id == user.pk) or is_moderator(user)


def run_endpoint(*, run: Run, user: Any) -> str | None:
    """The endpoint a hosted run called, as ``user`` may see it; None without one.

    Whole (without credentials or a query, as the bundle header records it) for the owner and
    moderators, its scheme and host for everyone else.
    """
    model = (run.metadata or {}).get("model") or {}
    base_url = model.get("base_url") or (run.spec or {}).get("base_url")
    if not base_url:
        return None
    if endpoint_visible_whole(run=run, user=user):
        from evaluation.adapters import public_base_url

        return str(public_base_url(base_url))
    return endpoint_origin(base_url)


def header_for(header: dict[str, Any], *, run: Run, user: Any) -> dict[str, Any]:
    """``header`` (a run's bundle header) with its endpoint as ``user`` may see it."""
    model = header.get("model")
    if not isinstance(model, dict) or not model.get("base_url"):
        return header
    if endpoint_visible_whole(run=run, user=user):
        return header
    return {**header, "model": {**model, "base_url": endpoint_origin(model["base_url"])}}


def stale_after() -> timedelta:
    """Silence after which a running episode's task counts as dead (MIRRORBENCH_EPISODE_STALE_S)."""
    return timedelta(seconds=settings.MIRRORBENCH_EPISODE_STALE_S)


def episodes_stale(*, now: Any = None) -> list[int]:
    """Return the episodes to queue again because their task is gone.

    Running episodes whose task went silent, and the pending episodes of running runs where
    nothing has happened for as long: a broker without redelivery (the embedded one) loses the
    messages a killed worker had taken. Queuing an episode twice is harmless (claims).
    """
    now = now or timezone.now()
    cutoff = now - stale_after()
    silent = Episode.objects.filter(
        status=Episode.Status.RUNNING,
        heartbeat__lt=cutoff,
        run__status=Run.Status.RUNNING,
        run__benchmark__name=BENCHMARK_VERSION,
    ).values_list("pk", flat=True)
    idle_runs = (
        Run.objects.filter(
            status=Run.Status.RUNNING, started__lt=cutoff, benchmark__name=BENCHMARK_VERSION
        )
        .annotate(last_beat=Max("episodes__heartbeat"))
        .filter(Q(last_beat__lt=cutoff) | Q(last_beat__isnull=True))
    )
    forgotten = Episode.objects.filter(
        status=Episode.Status.PENDING, run__in=idle_runs
    ).values_list("pk", flat=True)
    return sorted({*silent, *forgotten})


def runs_done_uncompleted(*, now: Any = None) -> list[int]:
    """Return the running runs whose episodes have all finished, silent since ``stale_after``.

    The task that finished the last episode completes the run (scores, listing, frames) in one
    transaction; a worker that dies inside it leaves the run running with nothing left to
    play, which no episode task will ever complete.
    """
    now = now or timezone.now()
    cutoff = now - stale_after()
    unfinished = Episode.objects.filter(run=OuterRef("pk"), status__in=Episode.UNFINISHED)
    return list(
        Run.objects.filter(
            status=Run.Status.RUNNING, started__lt=cutoff, benchmark__name=BENCHMARK_VERSION
        )
        .annotate(last_beat=Max("episodes__heartbeat"))
        .filter(Q(last_beat__lt=cutoff) | Q(last_beat__isnull=True))
        .exclude(Exists(unfinished))
        .order_by("pk")
        .values_list("pk", flat=True)
    )


FRAME_VARIANTS = ("png", "webp", "thumb")
"""A stored frame's files: the lossless PNG a model saw, the viewer's WebP, a list thumbnail."""
_FRAME_SUFFIX = {"png": "png", "webp": "webp", "thumb": "thumb.webp"}


def frame_path(key: str, variant: str) -> str:
    """Return the storage path of a frame's file: ``frames/ab/<key>.<suffix>`` (sharded)."""
    return f"frames/{key[:2]}/{key}.{_FRAME_SUFFIX[variant]}"


def frame_exists(key: str) -> bool:
    """Return whether every file of a frame is stored."""
    return all(default_storage.exists(frame_path(key, v)) for v in FRAME_VARIANTS)


def run_image_size(run: Run) -> int:
    """Return the side of the images of a run: its spec's, else its bundle header's."""
    if run.spec and run.spec.get("image_size"):
        return int(run.spec["image_size"])
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


@dataclass(frozen=True)
class ProviderLimits:
    rpm: int | None = None
    parallel: int | None = None


def provider_key(agent: str, base_url: str | None) -> str:
    """Return the key a run's limits are looked up and counted under."""
    provider = agent.split(":", 1)[0]
    return f"{provider}|{base_url}" if base_url else provider


def limits_for(agent: str, base_url: str | None) -> ProviderLimits:
    """Return the limits configured for an endpoint (most specific key first)."""
    configured: dict[str, Any] = settings.MIRRORBENCH_PROVIDER_LIMITS
    for key in (provider_key(agent, base_url), agent.split(":", 1)[0]):
        if key in configured:
            value = configured[key]
            return ProviderLimits(rpm=value.get("rpm"), parallel=value.get("parallel"))
    return ProviderLimits()


def parallel_slots_free(run: Run) -> bool:
    """Return whether one more episode of ``run`` may call its provider now."""
    spec = run.spec or {}
    limits = limits_for(spec.get("agent", ""), spec.get("base_url"))
    if limits.parallel is None:
        return True
    key = provider_key(spec["agent"], spec.get("base_url"))
    running = [
        provider_key(r["run__spec"].get("agent", ""), r["run__spec"].get("base_url"))
        for r in Episode.objects.filter(
            status=Episode.Status.RUNNING, run__status=Run.Status.RUNNING
        ).values("run__spec")
    ]
    return running.count(key) < limits.parallel
