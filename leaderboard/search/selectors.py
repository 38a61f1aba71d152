"""Reads: the steps whose response matches a query, newest first, with what a result shows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import BooleanField, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.urls import reverse

from evaluation.vocabulary import CONFUSED, ERROR, FAILURE, SUCCESS, TRACK_KEYS
from leaderboard.models import Episode, Frame, ModelEntry, Run, Step
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


def _matching(steps: QuerySet[Step], query: Query) -> QuerySet[Step]:
    """Return ``steps`` narrowed to those whose response matches ``query``, through the index."""
    if connection.vendor == "sqlite":
        return steps.filter(
            pk__in=RawSQL(
                f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s", [sqlite_match(query)]
            )
        )
    if connection.vendor == "postgresql":
        return steps.alias(
            matched=RawSQL(
                f'"{STEP_TABLE}"."{PG_COLUMN}" @@ to_tsquery(\'simple\'::regconfig, %s)',
                [postgres_tsquery(query)],
                output_field=BooleanField(),
            )
        ).filter(matched=True)
    raise SearchUnavailable(f"full-text search needs SQLite or PostgreSQL, not {connection.vendor}")


def _outcome_q(outcome: str) -> Q:
    completed = Q(episode__status=Episode.Status.COMPLETED)
    return {
        SUCCESS: completed & Q(episode__success=True),
        FAILURE: completed & Q(episode__success=False),
        CONFUSED: Q(episode__mirror_confused=True),
        ERROR: Q(episode__status=Episode.Status.ERROR),
    }[outcome]


def model_entry_exists(*, slug: str) -> bool:
    """Return whether a model entry has the slug ``slug``."""
    return ModelEntry.objects.filter(slug=slug).exists()


def step_search_queryset(
    *,
    query: Query,
    run: Run | None = None,
    model: str | None = None,
    level: int | None = None,
    track: str | None = None,
    outcome: str | None = None,
    condition: str | None = None,
) -> QuerySet[Step]:
    """Return the steps matching ``query`` and the filters, newest first (see step_search)."""
    steps = Step.objects.select_related("episode__scene", "episode__run__model_entry").defer(
        "request", "episode__distances", "episode__run__metadata", "episode__run__spec"
    )
    steps = (
        steps.filter(episode__run=run)
        if run is not None
        else steps.filter(episode__run__visibility=Run.Visibility.PUBLIC)
    )
    if model:
        steps = steps.filter(episode__run__model_entry__slug=model)
    if condition:
        steps = steps.filter(episode__run__condition=condition)
    if level is not None:
        steps = steps.filter(episode__level=level)
    if track:
        steps = steps.filter(episode__scene__track=TRACK_KEYS[track])
    if outcome:
        steps = steps.filter(_outcome_q(outcome))
    return _matching(steps, query).order_by("-pk")


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
    and outcome. Three queries: the steps, their frames, nothing more."""
    steps = step_search_queryset(
        query=query,
        run=run,
        model=model,
        level=level,
        track=track,
        outcome=outcome,
        condition=condition,
    )
    start = (page - 1) * per_page
    found = list(steps[start : start + per_page + 1])
    has_next = len(found) > per_page
    found = found[:per_page]
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
