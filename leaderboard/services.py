"""Writes: benchmark versions and scenes, the paper's results, imported runs and their scores."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.text import slugify

from evaluation.bundle import Bundle, benchmark_version
from evaluation.metrics import METRICS, bootstrap_ci, score_json
from evaluation.prompts import LEVELS
from evaluation.verify import verify_bundle
from leaderboard.models import BenchmarkVersion, Episode, ModelEntry, Run, RunScore, Scene, Step
from simulation.catalogue import scene_set

REFERENCE_FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "paper_results.json"


@transaction.atomic
def benchmark_current() -> BenchmarkVersion:
    """Return this engine's benchmark version, creating it and its 66 scenes if needed."""
    current = benchmark_version()
    version, created = BenchmarkVersion.objects.get_or_create(
        name=current["version"],
        defaults={
            "scene_set": current["scene_set"],
            "prompt_version": current["prompt_version"],
            "dynamics_version": current["dynamics_version"],
        },
    )
    if created or not version.scenes.exists():
        Scene.objects.bulk_create(
            Scene(
                benchmark=version,
                scene_id=s.id,
                track=s.track,
                body=s.body.id,
                hand=s.hand.id,
                mark=s.mark.id,
                d0_steps=s.d0_steps,
                max_steps=s.max_steps,
            )
            for s in scene_set().values()
        )
    return version


def model_entry_upsert(
    *,
    name: str,
    kind: str,
    organisation: str = "",
    params_b: float | None = None,
    description: str | None = None,
    links: list[dict[str, str]] | None = None,
) -> ModelEntry:
    """Create the model entry ``name`` or update its fields; return it."""
    if kind not in ModelEntry.Kind.values:
        raise ValueError(f"kind must be one of {', '.join(ModelEntry.Kind.values)}, got {kind!r}")
    defaults: dict[str, Any] = {"kind": kind, "organisation": organisation, "params_b": params_b}
    if description is not None:
        defaults["description"] = description
    if links is not None:
        defaults["links"] = links
    entry, created = ModelEntry.objects.get_or_create(
        name=name, defaults={**defaults, "slug": _unique_slug(name)}
    )
    if not created:
        for field, value in defaults.items():
            setattr(entry, field, value)
        entry.save()
    return entry


def _unique_slug(name: str) -> str:
    base = slugify(name) or "model"
    slug, n = base, 2
    while ModelEntry.objects.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug


def _score_rows(
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

    Complete means every scene at every level, with no episode lost to transport errors: only
    such runs are ranked; partial ones are kept and shown on their model's page. One rule for
    uploaded bundles and runs evaluated here.
    """
    if run.visibility != Run.Visibility.PUBLIC:
        return False
    episodes = run.episodes.aggregate(
        total=Count("pk"),
        scenes=Count("scene", distinct=True),
        levels=Count("level", distinct=True),
        errors=Count("pk", filter=~Q(status=Episode.Status.COMPLETED)),
    )
    complete = (
        episodes["errors"] == 0
        and episodes["scenes"] == len(scene_set())
        and episodes["levels"] == len(LEVELS)
        and episodes["total"] == len(scene_set()) * len(LEVELS)
    )
    if complete:
        _list(run)
    return complete


def _list(run: Run) -> None:
    """Show ``run`` on its version's leaderboard in place of older runs of its model and source.

    Each benchmark version has its own leaderboard: a v2 run never unlists a v1 run.
    """
    Run.objects.filter(
        model_entry=run.model_entry,
        source=run.source,
        benchmark_id=run.benchmark_id,
        listed=True,
    ).exclude(pk=run.pk).update(listed=False)
    Run.objects.filter(pk=run.pk).update(listed=True)
    run.listed = True


@transaction.atomic
def reference_results_load(*, path: Path = REFERENCE_FIXTURE) -> int:
    """Load the paper's published results (idempotent); return how many models were loaded.

    Each model gets one run with source ``reported`` whose scores are the printed numbers:
    Tables IV-VII for levels 0-3 (where the paper has them) and Table II for the overall row.
    """
    data = json.loads(path.read_text())
    benchmark = benchmark_current()
    source = data["source"]
    citation = f"{source['title']}, Tables II and IV-VII"
    for model in data["models"]:
        entry = model_entry_upsert(
            name=model["name"],
            kind=model["kind"],
            organisation=model.get("organisation") or "",
            params_b=model.get("params_b"),
        )
        # The paper's rows follow the reference protocol: they belong to the current version.
        run, _ = Run.objects.update_or_create(
            model_entry=entry,
            source=Run.Source.REPORTED,
            defaults={
                "benchmark": benchmark,
                "status": Run.Status.COMPLETED,
                "visibility": Run.Visibility.PUBLIC,
                "citation": citation,
                "agent": model["name"],
                "metadata": {"source": source},
                "episodes_expected": 264 if model.get("levels") else 0,
                "finished": timezone.now(),
            },
        )
        tables = {**(model.get("levels") or {}), "overall": model["overall"]}
        run.scores.all().delete()
        RunScore.objects.bulk_create(_score_rows(run, tables))
        _list(run)
    return len(data["models"])


@transaction.atomic
def run_scores_refresh(*, run: Run, n_resamples: int = 1000) -> None:
    """Recompute a run's tables and confidence intervals from its episodes."""
    from leaderboard.selectors import run_results

    results = run_results(run=run)
    scores = score_json(results)
    tables: dict[str, Any] = {**scores["levels"], "overall": scores["overall"]}
    intervals = bootstrap_ci(results, n_resamples=n_resamples)
    ci: dict[str, Any] = {**intervals["levels"], "overall": intervals["overall"]}
    counts = _episode_counts(results)
    run.scores.all().delete()
    RunScore.objects.bulk_create(_score_rows(run, tables, ci, counts))


def _episode_counts(results: Iterable[Any]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for r in results:
        if r.status != "completed":
            continue
        for table in (str(r.level), "overall"):
            row = counts.setdefault(table, {"human": 0, "robot": 0, "overall": 0})
            row[r.track.lower()] += 1
            row["overall"] += 1
    return counts


class BundleRejected(ValueError):
    """A bundle that ``verify`` does not accept; ``problems`` lists why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(f"the bundle does not verify ({len(problems)} problems): {problems[0]}")
        self.problems = problems


@dataclass(frozen=True)
class ImportedRun:
    run: Run
    episodes: int


@transaction.atomic
def run_import_bundle(
    *,
    model_entry: ModelEntry,
    bundle: Bundle,
    source: str = Run.Source.VERIFIED,
    owner: Any = None,
    list_run: bool = True,
    with_steps: bool = True,
) -> ImportedRun:
    """Verify ``bundle`` and store it as a completed run of ``model_entry`` with its scores.

    Nothing is written when the bundle does not verify (BundleRejected). A complete public run
    is listed on the leaderboard in place of its model's older run from the same source.
    """
    problems = verify_bundle(bundle)
    if problems:
        raise BundleRejected(problems)
    benchmark = benchmark_current()
    scenes = {s.scene_id: s for s in benchmark.scenes.all()}
    header = bundle.header
    run = Run.objects.create(
        model_entry=model_entry,
        benchmark=benchmark,
        owner=owner,
        source=source,
        status=Run.Status.COMPLETED,
        agent=header["agent"]["name"],
        metadata=header,
        episodes_expected=len(header["selection"]["scenes"]) * len(header["selection"]["levels"]),
        finished=timezone.now(),
    )
    episodes = Episode.objects.bulk_create(
        Episode.from_record(run=run, scene=scenes[record["scene_id"]], record=record)
        for record in bundle.episodes
    )
    if with_steps:
        Step.objects.bulk_create(
            Step.from_record(episode.pk, step)
            for episode, record in zip(episodes, bundle.episodes, strict=True)
            for step in record["steps"]
        )
    run_scores_refresh(run=run)
    if list_run:
        run_list_if_complete(run=run)
    return ImportedRun(run, len(episodes))
