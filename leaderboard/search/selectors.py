"""Reads: the steps whose response matches a query, newest first, with what a result shows."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.urls import reverse

from evaluation.vocabulary import CONFUSED, ERROR, FAILURE, SUCCESS, TRACK_KEYS
from leaderboard.models import Episode, Frame, ModelEntry, Run, Scene, Step
from leaderboard.replays.selectors import frame_urls
from leaderboard.search.index import FTS_TABLE, PG_COLUMN, STEP_TABLE
from leaderboard.search.query import Part, Query, highlight, postgres_tsquery, sqlite_match

RESULTS_PER_PAGE = 20


class SearchUnavailable(RuntimeError):
    """The database has no full-text search this site knows (neither SQLite nor PostgreSQL)."""


@dataclass(frozen=True)
class StepHit:
    """One result: a step, where it is, its excerpt and its thumbnail (None: not rendered)."""

    step: Step
    episode: Episode
    run: Run
    parts: list[Part]
    url: str
    thumb: str | None


@dataclass(frozen=True)
class SearchPage:
    hits: list[StepHit]
    page: int
    has_next: bool


NARROW_EPISODES = 3000
"""Filters that leave at most this many episodes (a run's own, one model's, every filter at
once, ...) are searched through those episodes' steps alone; wider ones walk the index's
matches, newest first, checking the filters, until a page is found."""
RANGE_GAP = 2000
"""Narrow filters: the episodes' steps are searched by ranges of step ids, newest first; two
episodes' steps fewer than this many ids apart are searched as one range..."""
MAX_RANGES = 40
"""... and the closest ranges are joined until at most this many remain."""
RANGE_WALK = 100_000
"""PostgreSQL: a range of at most this many ids is walked, newest first, each step's words
checked, never asked of the GIN index (a common word's list there is far longer than the
range; the planner, which cannot tell, would read all of it)."""


def _episode_filters(
    *,
    run: Run | None,
    model: str | None,
    level: int | None,
    track: str | None,
    outcome: str | None,
    condition: str | None,
) -> tuple[str, list[Any]]:
    """Return the SQL condition on ``e`` (an episode) and ``r`` (its run) that the filters
    ask for, with its parameters: of the public runs, or of ``run`` alone."""
    where: list[str] = ["e.run_id = r.id"]
    params: list[Any] = []
    if run is not None:
        where.append("r.id = %s")
        params.append(run.pk)
    else:
        where.append("r.visibility = %s")
        params.append(Run.Visibility.PUBLIC)
    if model:
        where.append(
            f"r.model_entry_id IN (SELECT id FROM {ModelEntry._meta.db_table} WHERE slug = %s)"
        )
        params.append(model)
    if condition:
        where.append("r.condition = %s")
        params.append(condition)
    if level is not None:
        where.append("e.level = %s")
        params.append(level)
    if track:
        where.append(f"e.scene_id IN (SELECT id FROM {Scene._meta.db_table} WHERE track = %s)")
        params.append(TRACK_KEYS[track])
    if outcome:
        completed = "e.status = %s AND e.success = %s"
        outcomes: dict[str, tuple[str, list[Any]]] = {
            SUCCESS: (completed, [Episode.Status.COMPLETED, True]),
            FAILURE: (completed, [Episode.Status.COMPLETED, False]),
            CONFUSED: ("e.mirror_confused = %s", [True]),
            ERROR: ("e.status = %s", [Episode.Status.ERROR]),
        }
        where.append(outcomes[outcome][0])
        params.extend(outcomes[outcome][1])
    return " AND ".join(where), params


def _fetch(sql: str, params: list[Any]) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]


def _fetch_rows(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def _ids_param(ids: list[int]) -> tuple[str, Any]:
    """An SQL test of membership in ``ids`` (for ``IN``/``= ANY``), and its parameter."""
    if connection.vendor == "postgresql":
        return "= ANY(%s)", ids
    return "IN (SELECT value FROM json_each(%s))", json.dumps(ids)


def _step_ranges(episodes: list[int]) -> list[tuple[int, int, list[int]]]:
    """Return ranges of step ids holding the steps of ``episodes``, newest first, each with
    the episodes whose steps it holds: each episode's first and last step, joined to the next
    where fewer than ``RANGE_GAP`` ids apart or where more than ``MAX_RANGES`` would remain."""
    test, param = _ids_param(episodes)
    spans = sorted(
        _fetch_rows(
            f"SELECT MIN(id), MAX(id), episode_id FROM {STEP_TABLE} "
            f"WHERE episode_id {test} GROUP BY episode_id",
            [param],
        )
    )
    if not spans:
        return []
    # The gap before each span, from the last id of every span before it (episodes played at
    # once interleave their steps: a range never cuts through another episode's).
    gaps, reach = {}, spans[0][1]
    for n in range(1, len(spans)):
        gaps[n] = spans[n][0] - reach
        reach = max(reach, spans[n][1])
    widest = sorted(gaps, key=gaps.__getitem__)[max(0, len(gaps) - MAX_RANGES + 1) :]
    cuts = {n for n in widest if gaps[n] > RANGE_GAP}
    ranges: list[tuple[int, int, list[int]]] = []
    low, high, members = spans[0][0], spans[0][1], [spans[0][2]]
    for n in range(1, len(spans)):
        if n in cuts:
            ranges.append((low, high, members))
            low, high, members = spans[n][0], spans[n][1], []
        high = max(high, spans[n][1])
        members.append(spans[n][2])
    ranges.append((low, high, members))
    return ranges[::-1]


def _narrow_page(query: Query, episodes: list[int], start: int, count: int) -> list[int]:
    """Ids of steps ``start`` to ``start + count`` (newest first) of ``episodes`` matching
    ``query``: the ranges of their steps' ids, newest first, until enough are found."""
    wanted = start + count
    found: list[int] = []
    for low, high, members in _step_ranges(episodes):
        test, param = _ids_param(members)
        if connection.vendor == "postgresql":
            # An expression the GIN index does not cover: the range is walked.
            walked = high - low <= RANGE_WALK
            document = f"(s.{PG_COLUMN} || ''::tsvector)" if walked else f"s.{PG_COLUMN}"
            found += _fetch(
                f"SELECT s.id FROM {STEP_TABLE} s WHERE s.id BETWEEN %s AND %s "
                f"AND s.episode_id {test} "
                f"AND {document} @@ to_tsquery('simple'::regconfig, %s) "
                "ORDER BY s.id DESC LIMIT %s",
                [low, high, param, postgres_tsquery(query), wanted - len(found)],
            )
        else:
            # CROSS JOIN keeps FTS5 the outer loop: its matches in the range, newest first.
            found += _fetch(
                f"SELECT f.rowid FROM {FTS_TABLE} f CROSS JOIN {STEP_TABLE} s ON s.id = f.rowid "
                f"WHERE {FTS_TABLE} MATCH %s AND f.rowid BETWEEN %s AND %s "
                f"AND s.episode_id {test} ORDER BY f.rowid DESC LIMIT %s",
                [sqlite_match(query), low, high, param, wanted - len(found)],
            )
        if len(found) >= wanted:
            break
    return found[start:wanted]


def _broad_page(query: Query, filters: tuple[str, list[Any]], start: int, count: int) -> list[int]:
    """Ids of steps ``start`` to ``start + count`` (newest first) matching ``query`` whose
    episode and run meet ``filters``: the index's matches, newest first, each checked."""
    where, params = filters
    joins = (
        f"JOIN {Episode._meta.db_table} e ON e.id = s.episode_id "
        f"JOIN {Run._meta.db_table} r ON r.id = e.run_id"
    )
    if connection.vendor == "postgresql":
        return _fetch(
            f"SELECT s.id FROM {STEP_TABLE} s {joins} "
            f"WHERE s.{PG_COLUMN} @@ to_tsquery('simple'::regconfig, %s) AND {where} "
            "ORDER BY s.id DESC LIMIT %s OFFSET %s",
            [postgres_tsquery(query), *params, count, start],
        )
    # CROSS JOIN keeps FTS5 the outer loop: its matches come newest first, unsorted, and the
    # LIMIT stops the walk.
    return _fetch(
        f"SELECT f.rowid FROM {FTS_TABLE} f CROSS JOIN {STEP_TABLE} s ON s.id = f.rowid "
        f"CROSS {joins.replace(' JOIN ', ' CROSS JOIN ')} "
        f"WHERE {FTS_TABLE} MATCH %s AND {where} ORDER BY f.rowid DESC LIMIT %s OFFSET %s",
        [sqlite_match(query), *params, count, start],
    )


def model_entry_exists(*, slug: str) -> bool:
    """Return whether a model entry has the slug ``slug``."""
    return ModelEntry.objects.filter(slug=slug).exists()


def step_search_ids(
    *,
    query: Query,
    run: Run | None = None,
    model: str | None = None,
    level: int | None = None,
    track: str | None = None,
    outcome: str | None = None,
    condition: str | None = None,
    start: int = 0,
    count: int = RESULTS_PER_PAGE + 1,
) -> list[int]:
    """Return the ids of the steps ``start`` to ``start + count`` matching ``query`` and the
    filters, newest first (see step_search).

    Filters that leave few episodes (``NARROW_EPISODES``) are searched through those episodes'
    steps alone, so a filter that leaves a handful never waits for the index to be walked;
    wider ones walk the index's matches, newest first, until ``count`` pass.
    """
    if connection.vendor not in ("sqlite", "postgresql"):
        raise SearchUnavailable(
            f"full-text search needs SQLite or PostgreSQL, not {connection.vendor}"
        )
    filters = _episode_filters(
        run=run, model=model, level=level, track=track, outcome=outcome, condition=condition
    )
    where, params = filters
    episodes = _fetch(
        f"SELECT e.id FROM {Episode._meta.db_table} e, {Run._meta.db_table} r WHERE {where} "
        "LIMIT %s",
        [*params, NARROW_EPISODES + 1],
    )
    if len(episodes) <= NARROW_EPISODES:
        return _narrow_page(query, episodes, start, count) if episodes else []
    return _broad_page(query, filters, start, count)


def step_search(
    *,
    query: Query,
    run: Run | None = None,
    model: str | None = None,
    level: int | None = None,
    track: str | None = None,
    outcome: str | None = None,
    condition: str | None = None,
    page: int = 1,
    per_page: int = RESULTS_PER_PAGE,
) -> SearchPage:
    """Return page ``page`` of the steps matching ``query``, newest first: of the public runs,
    or of ``run`` alone (which the caller has checked the visitor may see, ``run_for``); the
    filters narrow them by the run's model slug and condition and the episode's level, track
    and outcome. Four queries: the filters' episodes (``step_search_ids``), the page's step
    ids, the steps, their frames."""
    start = (page - 1) * per_page
    ids = step_search_ids(
        query=query,
        run=run,
        model=model,
        level=level,
        track=track,
        outcome=outcome,
        condition=condition,
        start=start,
        count=per_page + 1,
    )
    has_next = len(ids) > per_page
    rows = (
        Step.objects.filter(pk__in=ids[:per_page])
        .select_related("episode__scene", "episode__run__model_entry")
        .defer("request", "episode__distances", "episode__run__metadata", "episode__run__spec")
    )
    found = sorted(rows, key=lambda s: -s.pk)
    keys = {s.frame_key for s in found if s.frame_key}
    stored = set(
        Frame.objects.filter(key__in=keys, stored__isnull=False).values_list("key", flat=True)
    )
    hits = [
        StepHit(
            step=s,
            episode=s.episode,
            run=s.episode.run,
            parts=highlight(s.response, query),
            url=reverse("leaderboard:episode", kwargs={"episode_id": s.episode_id})
            + f"?step={s.index}",
            thumb=frame_urls(s.frame_key)["thumb"] if s.frame_key in stored else None,
        )
        for s in found
    ]
    return SearchPage(hits=hits, page=page, has_next=has_next)


def search_filters_context(*, run: Run | None) -> dict[str, Any]:
    """Return the model choices the filter offers: the models of public runs (or run's)."""
    runs = Run.objects.filter(pk=run.pk) if run is not None else Run.objects.public()
    models = (
        ModelEntry.objects.filter(runs__in=runs).distinct().order_by("name").values("slug", "name")
    )
    return {"models": list(models)}
