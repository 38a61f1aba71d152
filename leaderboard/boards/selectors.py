"""Reads: the leaderboards (overall, per level, per track), their filters, the model entries."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from typing import TYPE_CHECKING, Any

from django.db.models import Exists, OuterRef, Prefetch, QuerySet

from evaluation.deferred import Deferred
from evaluation.metrics import (
    EpisodeResult,
    SceneSums,
    rank_intervals,
    scene_sums,
    tied_with_above,
    track_table,
)
from evaluation.vocabulary import (
    AVG,
    LEVEL_KEYS,
    LEVELS,
    METRICS,
    OVERALL,
    TABLES,
    TRACK_KEYS,
    TRACKS,
)
from leaderboard.data_version import data_version_cached
from leaderboard.exports import published_float
from leaderboard.models import (
    Episode,
    ModelEntry,
    Run,
    RunScore,
)
from simulation.catalogue import scene_set
from simulation.versions import BENCHMARK_VERSION

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
else:
    pd = Deferred("pandas")  # loaded by a board's first build, not by every process
    pa = Deferred("pyarrow")

SCORE_COLUMNS = [f"{track}_{metric}" for track in TRACKS for metric in METRICS]


RANK_COLUMNS = ["rank_low", "rank_high", "tied_with_above", "preliminary"]
"""How far a row's rank can be trusted (``_rank_intervals_add``): after the scores in the CSV."""
REPEAT_COLUMNS = ["repeats", "avg_low", "avg_high", "avg_sd", "flip_rate"]
"""How a row's repeats differ (``_spread_columns``): the repeats, the overall AVG of the worst
and the best repeat, its standard deviation over the repeats, and the share of episodes whose
success flips between repeats. A row of one repeat has 1 and no spread; the CSV ends with them."""


METADATA_COLUMNS = ["organisation", "release_date", "reasoning", "licence", "scaffold"]
"""What a model entry says about the model, beside its kind and parameters (issue 33's filters):
each a filter of the boards (``LeaderboardFilters``), a CSV column and an API field."""


CSV_COLUMNS = [
    "rank",
    "model",
    "kind",
    "params_b",
    "source",
    *METADATA_COLUMNS,
    *SCORE_COLUMNS,
    "cognitive_stability",
    *RANK_COLUMNS,
    *REPEAT_COLUMNS,
]


SORT_KEYS = ("rank", "rank_low", "model", "params_b", *SCORE_COLUMNS, "cognitive_stability")


RANK_RESAMPLES = 1000
"""Resamples of the scenes behind every rank interval (seeded: the same data, the same
intervals), as many as behind each score's interval."""


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
    *METADATA_COLUMNS[1:],
]


RANKED_KINDS = (ModelEntry.Kind.PROPRIETARY, ModelEntry.Kind.OPEN_WEIGHTS)
"""Only multimodal models are ranked and marked; baselines and the human reference are
reference rows: shown for comparison, never ranked against."""


SANITY_CHECK_AGENTS = ("oracle", "chest", "mirror-confused")
"""Baselines hidden unless asked for (``baselines=show``): the oracle knows the way to the mark,
so its 1.000s say the scoring works, not how hard the task is; chest (go to where the mark
always is) and mirror-confused (go to the mark's mirror image) are the control conditions'
shortcut policies, played for the mirror-use view."""


def sanity_check(*, kind: str, slug: str, agent: str = "") -> bool:
    """Return whether a run is a sanity-check baseline: the one rule for the reference rows that
    the boards, the charts and the tracks page hide unless ``baselines=show`` (a chart whose
    models are picked by name shows what was picked)."""
    return kind == ModelEntry.Kind.BASELINE and (
        agent in SANITY_CHECK_AGENTS or slug in SANITY_CHECK_AGENTS
    )


def key_column(sort: str) -> str:
    """Return the score column a phone shows beside the model: the sorted one, else the
    ranking score (overall AVG)."""
    return sort if sort in (*SCORE_COLUMNS, "cognitive_stability") else "overall_avg"


@dataclass(frozen=True)
class MetadataFilters:
    """Filters on what a model entry says about the model; rows that do not say are left out
    by a filter on that fact (an unknown release date is neither before nor after a date)."""

    organisations: tuple[str, ...] = ()
    """Any of these organisations (or providers), case-insensitive."""
    released_from: date | None = None
    released_to: date | None = None
    reasoning: tuple[str, ...] = ()
    """Any of these reasoning modes or efforts (``ModelEntry.Reasoning``)."""
    licences: tuple[str, ...] = ()
    """Any of these licences, case-insensitive."""
    scaffolds: tuple[str, ...] = ()
    """``model`` (plain models), ``agent`` (agent scaffolds) or both."""

    def active(self) -> int:
        """Return how many of these filters are set (the filter panel's badge)."""
        return sum(
            [
                len(self.organisations),
                self.released_from is not None,
                self.released_to is not None,
                len(self.reasoning),
                len(self.licences),
                len(self.scaffolds),
            ]
        )


@dataclass(frozen=True)
class LeaderboardFilters:
    """What a visitor filtered and sorted by (validated by ``leaderboard.boards.forms``)."""

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
    metadata: MetadataFilters = field(default_factory=MetadataFilters)
    """What the model entries must say of themselves (organisation, release, licence, ...)."""


def episodes_href(run_id: int, table: str, track: str) -> str:
    """Return the address of a table cell's episodes: its run's list, filtered."""
    query = [f"level={table}"] if table != OVERALL else []
    query += [f"track={track}"] if track != OVERALL else []
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
    full_episodes: int = 0
    """Episodes of a complete run in this table: fewer make a row preliminary."""
    suggestions: dict[str, list[str]] = field(default_factory=dict)
    """Organisations and licences of the table's rows before filtering: the filters' hints."""

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
            info = {
                k: None if _missing(record[k]) else record[k]
                for k in ("rank", *_INFO, *RANK_COLUMNS)
            }
            info["episodes"] = _count(record.get("overall_episodes"))
            info["full_episodes"] = self.full_episodes
            info["spread"] = _row_spread(record)
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
            for column in ("rank", "rank_low", "rank_high", "repeats"):
                record[column] = None if _missing(record[column]) else int(record[column])
            rows.append([record[column] for column in CSV_COLUMNS])
        return rows


def _row_spread(record: dict[str, Any]) -> dict[str, Any] | None:
    """Return a row's repeats and their spread for the page, None for a row of one repeat."""
    repeats = record.get("repeats")
    if repeats is None or _missing(repeats) or int(repeats) < 2:
        return None
    return {column: record.get(column) for column in REPEAT_COLUMNS}


def _count(value: Any) -> int | None:
    return None if _missing(value) else int(value)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _public_scores(table: str, version: str) -> QuerySet[RunScore]:
    return RunScore.objects.on_board(version).filter(table=table)


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
        "spread",
        "run__source",
        "run__agent",
        "run__cognitive_stability",
        "run__model_entry__name",
        "run__model_entry__slug",
        "run__model_entry__kind",
        "run__model_entry__params_b",
        "run__model_entry__organisation",
        *(f"run__model_entry__{column}" for column in METADATA_COLUMNS[1:]),
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
                **{column: v[f"run__model_entry__{column}"] for column in METADATA_COLUMNS[1:]},
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
        if track == OVERALL:
            _spread_columns(row, v["spread"])
        for metric in METRICS:
            row[f"{track}_{metric}"] = v[metric]
            if v["ci"]:
                row[f"{track}_{metric}_ci"] = v["ci"].get(metric)
    rows = list(wide.values())
    # Every score column exists even when no row has it (an empty table, a missing track).
    columns = dict.fromkeys(
        [*_INFO, *SCORE_COLUMNS, *REPEAT_COLUMNS, *(key for row in rows for key in row)]
    )
    return pd.DataFrame(rows, columns=list(columns))


def _spread_columns(row: dict[str, Any], spread: dict[str, Any] | None) -> None:
    """Set ``row``'s ``REPEAT_COLUMNS`` from its Overall column's stored ``RunScore.spread``."""
    row["repeats"] = spread["repeats"] if spread else 1
    row["avg_low"] = spread["low"][AVG] if spread else None
    row["avg_high"] = spread["high"][AVG] if spread else None
    row["avg_sd"] = spread["sd"][AVG] if spread else None
    row["flip_rate"] = spread["flip_rate"] if spread else None


def _sanity_checks(frame: pd.DataFrame) -> pd.Series:
    """Return which rows are sanity-check baselines (``sanity_check``, over a frame)."""
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
    mask &= _metadata_mask(frame, filters.metadata)
    return frame[mask]


def _metadata_mask(frame: pd.DataFrame, metadata: MetadataFilters) -> pd.Series:
    """Return which rows' model entries say what ``metadata`` asks (``MetadataFilters``)."""
    mask = pd.Series(True, index=frame.index)

    def folded(column: str) -> pd.Series:
        return frame[column].fillna("").astype(str).str.casefold()

    if metadata.organisations:
        mask &= folded("organisation").isin([o.casefold() for o in metadata.organisations])
    if metadata.licences:
        mask &= folded("licence").isin([name.casefold() for name in metadata.licences])
    if metadata.reasoning:
        mask &= frame["reasoning"].isin(metadata.reasoning)
    if metadata.scaffolds:
        mask &= frame["scaffold"].isin(metadata.scaffolds)
    released = frame["release_date"]
    if metadata.released_from is not None:
        mask &= released.map(lambda d: isinstance(d, date) and d >= metadata.released_from).astype(
            bool
        )
    if metadata.released_to is not None:
        mask &= released.map(lambda d: isinstance(d, date) and d <= metadata.released_to).astype(
            bool
        )
    return mask


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
    suggestions = _metadata_suggestions(frame)
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
    full = len(scene_set()) * (len(LEVELS) if table == OVERALL else 1)
    frame = _rank_intervals_add(frame, table=table, version=filters.version, full=full)
    if filters.sort == "rank_low":
        # The paper's rows have no interval: their rank stands for its lower bound.
        low = frame["rank_low"].where(frame["rank_low"].notna(), frame["rank"])
        frame = frame.iloc[
            pd.to_numeric(low)
            .reset_index(drop=True)
            .sort_values(ascending=not filters.descending, na_position="last", kind="stable")
            .index
        ]
    elif filters.sort != "rank":
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
        full_episodes=full,
        suggestions=suggestions,
    )


def _rank_intervals_add(
    frame: pd.DataFrame, *, table: str, version: str, full: int
) -> pd.DataFrame:
    """Return ``frame`` (in rank order) with each row's rank interval, tie and preliminary mark.

    ``rank_low`` and ``rank_high``: the 95% rank interval of a row with episodes, from one
    joint bootstrap over the scenes (``evaluation.metrics.rank_intervals``) against the
    multimodal models shown; the paper's rows stand at their published score in every
    resample and have none (None). A reference row with episodes gets the ranks it would
    take. ``tied_with_above``: a ranked row's interval (or its rank, for the paper's rows)
    overlaps that of the nearest ranked row above; reference rows are never tied.
    ``preliminary``: built from fewer than ``full`` episodes. One query: the completed
    episodes of every run on the board.
    """
    frame = frame.copy()
    episodes = _board_scene_sums(version, frame["run_id"])
    reported = frame["source"].eq(Run.Source.REPORTED)
    competing = frame["kind"].isin(RANKED_KINDS)
    rows = {int(r): episodes[int(r)] for r in frame.loc[~reported, "run_id"] if r in episodes}
    fixed = {
        int(r): float(v)
        for r, v in frame.loc[reported & competing, ["run_id", "overall_avg"]].itertuples(
            index=False
        )
        if not _missing(v)
    }
    intervals = (
        rank_intervals(
            rows,
            table=table,
            fixed=fixed,
            competitors={int(r) for r in frame.loc[competing, "run_id"]},
            n_resamples=RANK_RESAMPLES,
        )
        if rows
        else {}
    )
    spans = [intervals.get(int(run_id)) for run_id in frame["run_id"]]
    frame["rank_low"] = pd.Series([s and s[0] for s in spans], index=frame.index, dtype=object)
    frame["rank_high"] = pd.Series([s and s[1] for s in spans], index=frame.index, dtype=object)
    # Only ranked rows tie: a reference row's ranks are those it would take among them, on
    # another scale (the models' ranks leave it out).
    ties = tied_with_above(
        [
            None if not ranked else span or (None if _missing(rank) else (int(rank), int(rank)))
            for span, rank, ranked in zip(spans, frame["rank"], competing, strict=True)
        ]
    )
    frame["tied_with_above"] = pd.Series(ties, index=frame.index, dtype=object)
    frame["preliminary"] = _preliminary(frame, reported, competing, full)
    return frame


def _preliminary(
    frame: pd.DataFrame, reported: pd.Series, competing: pd.Series, full: int
) -> pd.Series:
    """Return which rows are preliminary: built from fewer than ``full`` episodes per repeat,
    or, among the ranked rows with episodes, from one repeat where another has several."""
    counts = frame.get("overall_episodes", pd.Series(None, index=frame.index))
    repeats = frame.get("repeats", pd.Series(None, index=frame.index))
    repeats = repeats.map(lambda k: 1 if _missing(k) else int(k))
    several = bool((repeats[competing & ~reported] > 1).any())
    return pd.Series(
        [
            not r and ((not _missing(n) and n < full * k) or (several and c and k == 1))
            for r, c, n, k in zip(reported, competing, counts, repeats, strict=True)
        ],
        index=frame.index,
        dtype=object,
    )


def _board_scene_sums(version: str, run_ids: pd.Series) -> dict[int, SceneSums]:
    """Return the per-scene statistics of the runs of ``run_ids`` that have episodes.

    One query over every run on the board, whatever the filters keep: a fixed count.
    """
    wanted = {int(r) for r in run_ids}
    by_run: dict[int, list[EpisodeResult]] = {}
    completed = Episode.objects.on_board(version).filter(status=Episode.Status.COMPLETED)
    for run_id, scene_id, track, level, distances, repeat in completed.values_list(
        "run_id", "scene__scene_id", "scene__track", "level", "distances", "repeat"
    ):
        if run_id in wanted:
            by_run.setdefault(run_id, []).append(
                EpisodeResult(scene_id, track, level, tuple(distances), repeat=repeat)
            )
    return {run_id: scene_sums(results) for run_id, results in by_run.items()}


def leaderboard_table_cached(*, table: str, filters: LeaderboardFilters) -> LeaderboardTable:
    """Return ``leaderboard_table``, cached until the data version changes (the API's rows)."""

    return data_version_cached(
        "table", (table, filters), lambda: leaderboard_table(table=table, filters=filters)
    )


def level_tables_by_run(
    *, kinds: Sequence[str] = (), sources: Sequence[str] = (), version: str = BENCHMARK_VERSION
) -> dict[int, dict[str, Any]]:
    """Return {run id: {level: {track: scores}}} for listed public runs with level tables."""
    scores = RunScore.objects.on_board(version).filter(table__in=LEVEL_KEYS)
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
        if len(t) == len(LEVEL_KEYS) and all(set(TRACK_KEYS) <= set(level) for level in t.values())
    }


@dataclass
class TracksPage:
    """Table III and the per-model Human minus Robot gaps."""

    table_iii: dict[str, dict[str, float | None]]
    models: int
    gaps: list[dict[str, Any]]
    hidden: int = 0
    """Sanity-check baselines left out of the gaps (``sanity_check``)."""


def tracks_page(
    *, sources: Sequence[str] = (), version: str = BENCHMARK_VERSION, baselines: bool = False
) -> TracksPage:
    """Return Table III (mean AVG over MLLM results by level and track) and per-model gaps,
    without the sanity-check baselines unless ``baselines``."""
    mllm = (ModelEntry.Kind.PROPRIETARY, ModelEntry.Kind.OPEN_WEIGHTS)
    by_run = level_tables_by_run(kinds=mllm, sources=sources, version=version)
    table_iii = track_table({str(run): tables for run, tables in by_run.items()}) if by_run else {}
    all_runs = level_tables_by_run(sources=sources, version=version)
    runs = (
        Run.objects.filter(pk__in=all_runs)
        .select_related("model_entry")
        .only("source", "agent", "model_entry__name", "model_entry__slug", "model_entry__kind")
    )
    gaps = []
    hidden = 0
    for run in runs:
        entry = run.model_entry
        if not baselines and sanity_check(kind=entry.kind, slug=entry.slug, agent=run.agent):
            hidden += 1
            continue
        levels = all_runs[run.pk]
        human, robot = TRACK_KEYS
        per_level = {
            level: levels[level][human][AVG] - levels[level][robot][AVG] for level in LEVEL_KEYS
        }
        gaps.append(
            {
                "model": run.model_entry.name,
                "slug": run.model_entry.slug,
                "kind": run.model_entry.kind,
                "source": run.source,
                "levels": per_level,
                "mean": sum(per_level.values()) / len(per_level),
            }
        )
    gaps.sort(key=lambda g: -g["mean"])
    return TracksPage(table_iii, len(by_run), gaps, hidden)


def model_entry_detail(*, slug: str) -> ModelEntry:
    """Return a model entry with its public runs and their scores (three queries)."""
    runs = (
        Run.objects.filter(visibility=Run.Visibility.PUBLIC)
        .select_related("benchmark", "submission")  # a submission's review note and partiality
        .prefetch_related(Prefetch("scores", queryset=RunScore.objects.order_by("table", "track")))
    )
    return _public_entries().prefetch_related(Prefetch("runs", queryset=runs)).get(slug=slug)


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


_EXPORT_INTEGERS = ("rank", "rank_low", "rank_high", "repeats")
_EXPORT_BOOLEANS = ("tied_with_above", "preliminary")
_EXPORT_TEXTS = ("model", "kind", "source", "organisation", "reasoning", "licence", "scaffold")


def _export_type(column: str) -> pa.DataType:
    if column in _EXPORT_INTEGERS:
        return pa.int32()
    if column in _EXPORT_BOOLEANS:
        return pa.bool_()
    if column in _EXPORT_TEXTS:
        return pa.string()
    if column == "release_date":
        return pa.date32()
    return pa.float64()


@cache
def export_schema() -> pa.Schema:
    """The parquet download of a board: the CSV's columns, typed (no number written as text)."""
    return pa.schema([pa.field(column, _export_type(column)) for column in CSV_COLUMNS])


def _export_value(column: str, value: Any) -> Any:
    if _missing(value) or value == "":
        return None
    if column in _EXPORT_INTEGERS:
        return int(value)
    if column in _EXPORT_BOOLEANS:
        return bool(value)
    if column in _EXPORT_TEXTS or column == "release_date":
        return value
    # Scores as the CSV and the API publish them (DECIMALS decimals); parameters as entered.
    return float(value) if column == "params_b" else published_float(float(value))


def board_export_table(board: LeaderboardTable) -> pa.Table:
    """Return the rows of ``board``'s CSV download, in its order, as a typed arrow table
    (``export_schema``): what the parquet and JSON downloads hold. Unknown values are null."""
    records = board.frame[CSV_COLUMNS].to_dict("records")
    columns = {
        column: [_export_value(column, record[column]) for record in records]
        for column in CSV_COLUMNS
    }
    return pa.Table.from_pydict(columns, schema=export_schema())


def board_export_records(board: LeaderboardTable) -> list[dict[str, Any]]:
    """Return ``board_export_table`` as JSON-ready rows: dates as YYYY-MM-DD, unknowns None."""
    rows = board_export_table(board).to_pylist()
    for row in rows:
        released = row["release_date"]
        row["release_date"] = released.isoformat() if released is not None else None
    return rows


def _metadata_suggestions(frame: pd.DataFrame) -> dict[str, list[str]]:
    """Return the distinct organisations and licences of ``frame``'s rows, sorted."""
    return {
        column: sorted(
            {str(v) for v in frame[column] if not _missing(v) and str(v)}, key=str.casefold
        )
        for column in ("organisation", "licence")
    }
