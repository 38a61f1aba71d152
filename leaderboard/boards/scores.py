"""Writes: a run's score tables, and which runs the leaderboards list."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, Sum

from evaluation.confusion import behaviour_json
from evaluation.metrics import (
    EpisodeResult,
    bootstrap_ci,
    cognitive_stability,
    cognitive_stability_ci,
    repeat_spread,
    score_json,
)
from evaluation.vocabulary import COMPLETED, LEVELS, MAIN_CONDITION, METRICS, OVERALL, TRACKS
from leaderboard.data_version import data_version_bump
from leaderboard.models import (
    Episode,
    Run,
    RunScore,
    Step,
)
from leaderboard.runs.selectors import run_behaviour_records, run_results
from simulation.catalogue import UnknownSceneError, scene_set


def score_rows(
    run: Run,
    tables: dict[str, Any],
    ci: dict[str, Any] | None = None,
    counts: dict[str, dict[str, int]] | None = None,
) -> list[RunScore]:
    rows = []
    for table, tracks in tables.items():
        if tracks is None:
            continue
        for track, cell in tracks.items():
            if cell is None:
                continue
            interval = ci.get(table, {}).get(track) if ci else None
            rows.append(
                RunScore(
                    run=run,
                    table=table,
                    track=track,
                    **{m: float(cell[m]) for m in METRICS},
                    ci={m: [float(lo), float(hi)] for m, (lo, hi) in interval.items()}
                    if interval
                    else None,
                    episodes=(counts or {}).get(table, {}).get(track),
                )
            )
    return rows


def run_list_if_complete(*, run: Run) -> bool:
    """List a complete public run on the leaderboard; return whether it was listed.

    Complete means every scene at every level, every episode finished, and no more than
    ``MIRRORBENCH_MAX_ERRORED_SHARE`` of them ended in error (the provider's or the harness's
    failures, left out of the scores: ``evaluation.errors``): only such runs are ranked; partial
    ones, and those waiting for their errored episodes to be re-run, are kept and shown on their
    model's page. One rule for uploaded bundles and runs evaluated here. A run of a control
    condition is never listed: the main tables rank the paper's protocol alone.
    """
    if run.visibility != Run.Visibility.PUBLIC or run.condition != MAIN_CONDITION:
        return False
    episodes = run.episodes.aggregate(
        total=Count("pk"),
        scenes=Count("scene", distinct=True),
        levels=Count("level", distinct=True),
        repeats=Count("repeat", distinct=True),
        unfinished=Count("pk", filter=Q(status__in=Episode.UNFINISHED)),
        errors=Count("pk", filter=Q(status=Episode.Status.ERROR)),
    )
    errored_share = episodes["errors"] / episodes["total"] if episodes["total"] else 0.0
    complete = (
        episodes["unfinished"] == 0
        and errored_share <= settings.MIRRORBENCH_MAX_ERRORED_SHARE
        and episodes["scenes"] == len(scene_set())
        and episodes["levels"] == len(LEVELS)
        # Every repeat of every episode: a run of K repeats holds K times the episodes.
        and episodes["total"] == len(scene_set()) * len(LEVELS) * episodes["repeats"]
    )
    if complete:
        run_list_on_leaderboard(run=run)
    return complete


def run_list_on_leaderboard(*, run: Run) -> None:
    """Show ``run`` on its version's leaderboard in place of older runs of its model and source.

    Each benchmark version has its own leaderboard: a v2 run never unlists a v1 run. A run of a
    control condition is never listed (nor unlists anything).
    """
    if run.condition != MAIN_CONDITION:
        return
    Run.objects.filter(
        model_entry=run.model_entry,
        source=run.source,
        benchmark_id=run.benchmark_id,
        listed=True,
    ).exclude(pk=run.pk).update(listed=False)
    Run.objects.filter(pk=run.pk).update(listed=True)
    run.listed = True
    data_version_bump()


@transaction.atomic
def run_scores_refresh(*, run: Run, n_resamples: int = 1000) -> None:
    """Recompute a run's tables, confidence intervals and cognitive stability from its episodes."""
    results = run_results(run=run)
    _stability_store(run, results, n_resamples)
    scores = score_json(results)
    tables: dict[str, Any] = {**scores["levels"], OVERALL: scores["overall"]}
    intervals = bootstrap_ci(results, n_resamples=n_resamples)
    ci: dict[str, Any] = {**intervals["levels"], OVERALL: intervals["overall"]}
    counts = _episode_counts(results)
    run.scores.all().delete()
    rows = score_rows(run, tables, ci, counts)
    _spread_add(rows, results)
    RunScore.objects.bulk_create(rows)
    run_behaviour_refresh(run=run)
    run_tokens_refresh(run=run)
    data_version_bump()


def run_tokens_refresh(*, run: Run) -> None:
    """Store a run's measured token totals, summed over its steps (one query).

    Steps answered from the response cache are left out: their tokens were spent by the run
    that first asked. Totals stay empty when no step reports tokens (the baselines, a bundle
    without them); the cached input tokens stay empty where the provider reports none.
    """
    totals = Step.objects.filter(episode__run=run, cached=False).aggregate(
        input_tokens=Sum("input_tokens"),
        output_tokens=Sum("output_tokens"),
        cached_input_tokens=Sum("cached_input_tokens"),
    )
    Run.objects.filter(pk=run.pk).update(**totals)
    for field, value in totals.items():
        setattr(run, field, value)


def run_behaviour_refresh(*, run: Run) -> None:
    """Recompute a run's mirror-self confusion, bad-response and collision rates."""
    try:
        behaviour: Any = behaviour_json(run_behaviour_records(run=run))
    except UnknownSceneError:  # a retired scene set: there is no mirror image to aim at
        behaviour = None
    Run.objects.filter(pk=run.pk).update(behaviour=behaviour)
    run.behaviour = behaviour


def _spread_add(rows: list[RunScore], results: list[EpisodeResult]) -> None:
    """Set the Overall-column rows' ``spread``: how a run's repeats differ in that table
    (``evaluation.metrics.repeat_spread``); left None for a run of one repeat."""
    if not any(r.repeat for r in results):
        return
    for row in rows:
        if row.track == OVERALL:
            spread = repeat_spread(results, row.table)
            row.spread = spread.as_dict() if spread is not None else None


def _episode_counts(results: Iterable[Any]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for r in results:
        if r.status != COMPLETED:
            continue
        for table in (str(r.level), OVERALL):
            row = counts.setdefault(table, dict.fromkeys(TRACKS, 0))
            row[r.track.lower()] += 1
            row[OVERALL] += 1
    return counts


def _stability_store(run: Run, results: list[EpisodeResult], n_resamples: int) -> None:
    """Store the run's cognitive stability and its interval: computed here, never per request."""
    interval = cognitive_stability_ci(results, n_resamples=n_resamples)
    stability = cognitive_stability(results)
    ci = [interval[0], interval[1]] if interval else None
    Run.objects.filter(pk=run.pk).update(cognitive_stability=stability, cognitive_stability_ci=ci)
    run.cognitive_stability, run.cognitive_stability_ci = stability, ci
