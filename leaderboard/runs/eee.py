"""Reads: a run's results in the Every Eval Ever schema (``evaluation.eee``).

The aggregate takes the run's stored score rows with their bootstrap intervals (what its page
shows), and the samples file the run's details (``runs.details``: each episode's replay page,
each step's frame address). Who evaluated the model is said from the run's source: the site
itself (first party for its own baselines, third party for a model), an uploaded bundle
(``other``: the uploader's relationship to the model is not known), or the paper (third party,
its tables only, so no samples file).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.urls import reverse

from evaluation.config import RunConfigError
from evaluation.eee import Cell, EeeExport, ModelIdentity, Source, eee_export
from evaluation.vocabulary import METRICS
from leaderboard.models import ModelEntry, Run, RunScore
from leaderboard.runs.details import run_details, run_header_for
from leaderboard.runs.run_files import run_config
from leaderboard.runs.selectors import run_endpoint

_AVAILABILITY = {
    ModelEntry.Kind.PROPRIETARY: "closed_weights",
    ModelEntry.Kind.OPEN_WEIGHTS: "open_weights",
}


def run_eee(*, run: Run, user: Any, absolute: Callable[[str], str]) -> EeeExport:
    """Return ``run``'s Every Eval Ever files: the aggregate, and the samples for a run with
    episodes (None for results reported in the paper).

    Args:
        run: A run the user may see (``runs.selectors.run_for``).
        user: Who asks: the header's endpoint is shown as they may see it.
        absolute: Turns a site path into an address (the request's ``build_absolute_uri``).
    """
    reported = run.source == Run.Source.REPORTED
    header = None if reported else run_header_for(run=run, user=user)
    try:
        config = None if reported else run_config(run=run).as_dict()
    except (RunConfigError, ValueError):
        config = None
    if config is not None and config.get("base_url"):
        # The endpoint as this user may see it (its scheme and host to all but the owner).
        config["base_url"] = run_endpoint(run=run, user=user)
    run_url = absolute(reverse("leaderboard:run", args=[run.pk]))
    return eee_export(
        header=header,
        scores=run_cells(run=run),
        source=run_source(run=run, site=absolute("/")),
        model=run_model(run=run, header=header),
        retrieved=run.finished or run.created,
        details=None if reported else run_details(run=run, header=header or {}, absolute=absolute),
        config=config,
        benchmark=run.benchmark.as_dict(),
        run_url=run_url,
        scenes_url=absolute(reverse("leaderboard:scenes")),
        evaluated=run.started if run.source == Run.Source.EVALUATED else None,
    )


def run_cells(*, run: Run) -> dict[tuple[str, str], Cell]:
    """Return ``run``'s stored score rows as cells (one query)."""
    return {
        (row.table, row.track): Cell(
            values={m: getattr(row, m) for m in METRICS},
            interval=row.ci,
            episodes=row.episodes,
            spread=row.spread,
        )
        for row in RunScore.objects.filter(run=run)
    }


def run_source(*, run: Run, site: str) -> Source:
    """Return where ``run``'s results come from, with the evaluator's relationship to the
    model: the site's own baselines are first party; a model the site evaluated, or the
    paper's, third party; an uploaded bundle ``other`` (who ran it is not known)."""
    baseline = run.model_entry.kind == ModelEntry.Kind.BASELINE
    if run.source == Run.Source.REPORTED:
        relationship = "third_party"
    elif run.source == Run.Source.EVALUATED:
        relationship = "first_party" if baseline else "third_party"
    else:
        relationship = "other"
    return Source(
        kind=str(run.source),
        relationship=relationship,
        url=site,
        citation=run.citation or None,
    )


def run_model(*, run: Run, header: dict[str, Any] | None) -> ModelIdentity:
    """Return the identity of ``run``'s model: the provider and model its header names
    (``openai/gpt-4o``), else ``mirrorbench/<agent>`` for a baseline, else the entry's
    organisation and slug."""
    entry = run.model_entry
    described = (header or {}).get("model") or {}
    agent = ((header or {}).get("agent") or {}).get("name")
    platform = described.get("provider")
    if platform and described.get("model"):
        developer, model = str(platform), str(described["model"])
    elif entry.kind == ModelEntry.Kind.BASELINE:
        developer, model = "mirrorbench", str(agent or entry.slug)
    else:
        developer, model = entry.organisation or "unattributed", entry.slug
    if entry.kind == ModelEntry.Kind.BASELINE:
        deployment = "self_deployed"
    elif run.source == Run.Source.EVALUATED and platform and not described.get("base_url"):
        deployment = "externally_managed"
    else:
        deployment = "unknown"
    return ModelIdentity(
        name=entry.name,
        developer=developer,
        model=model,
        deployment=deployment,
        availability=_AVAILABILITY.get(ModelEntry.Kind(entry.kind), "unknown"),
        organisation=entry.organisation or None,
        platform=platform or None,
    )
