"""Writes: the paper's published results and verified results bundles."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from evaluation.bundle import Bundle, header_repeats
from evaluation.verify import verify_bundle
from evaluation.vocabulary import MAIN_CONDITION
from leaderboard.boards.entries import MODEL_METADATA, benchmark_current, model_entry_upsert
from leaderboard.boards.scores import (
    run_list_if_complete,
    run_list_on_leaderboard,
    run_scores_refresh,
    score_rows,
)
from leaderboard.bulk import rows_insert
from leaderboard.data_version import data_version_bump
from leaderboard.frames.services import run_frames_queue, run_frames_register
from leaderboard.models import (
    Episode,
    ModelEntry,
    Run,
    RunScore,
    Step,
)

REFERENCE_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "paper_results.json"


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
            # Only what the paper states: it evaluates each MLLM itself, not an agent built
            # around one; release dates, licences and reasoning settings it does not give.
            metadata={key: model[key] for key in MODEL_METADATA if key in model},
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
        RunScore.objects.bulk_create(score_rows(run, tables))
        run_list_on_leaderboard(run=run)
    data_version_bump()
    return len(data["models"])


class BundleRejected(ValueError):
    """A bundle that ``verify`` does not accept; ``problems`` lists why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(f"the bundle does not verify ({len(problems)} problems): {problems[0]}")
        self.problems = problems


@dataclass(frozen=True)
class ImportedRun:
    run: Run
    episodes: int


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
    _verified(bundle)
    with transaction.atomic():
        return _run_store(
            model_entry=model_entry,
            bundle=bundle,
            source=source,
            owner=owner,
            list_run=list_run,
            with_steps=with_steps,
        )


def model_entry_import_bundle(
    *,
    name: str,
    kind: str,
    bundle: Bundle,
    organisation: str = "",
    params_b: float | None = None,
    source: str = Run.Source.VERIFIED,
) -> ImportedRun:
    """Verify ``bundle`` and store it as a run of the model entry ``name``, created if new.

    An existing entry is used as it is. The entry, the run, its episodes, steps and scores are
    written in one transaction: a bundle that does not verify (BundleRejected) or an import
    that fails part way leaves no row behind, not even a new model entry.
    """
    _verified(bundle)
    with transaction.atomic():
        entry = ModelEntry.objects.filter(name=name).first() or model_entry_upsert(
            name=name, kind=kind, organisation=organisation, params_b=params_b
        )
        return _run_store(
            model_entry=entry,
            bundle=bundle,
            source=source,
            owner=None,
            list_run=True,
            with_steps=True,
        )


def store_verified_bundle(
    *, model_entry: ModelEntry, bundle: Bundle, owner: Any, visibility: str
) -> Run:
    """Store a bundle that ``verify_bundle`` passed as an unlisted uploaded run (a submission).

    The caller verified it and holds the transaction; moderation lists it later.
    """
    return _run_store(
        model_entry=model_entry,
        bundle=bundle,
        source=Run.Source.VERIFIED,
        owner=owner,
        list_run=False,
        with_steps=True,
        visibility=visibility,
    ).run


def _verified(bundle: Bundle) -> None:
    # Verified before the transaction starts: replaying a bundle takes a while, and no write
    # lock needs to be held meanwhile.
    problems = verify_bundle(bundle)
    if problems:
        raise BundleRejected(problems)


def _run_store(
    *,
    model_entry: ModelEntry,
    bundle: Bundle,
    source: str,
    owner: Any,
    list_run: bool,
    with_steps: bool,
    visibility: str = Run.Visibility.PUBLIC,
) -> ImportedRun:
    benchmark = benchmark_current()
    scenes = {s.scene_id: s for s in benchmark.scenes.all()}
    header = bundle.header
    run = Run.objects.create(
        model_entry=model_entry,
        benchmark=benchmark,
        owner=owner,
        source=source,
        visibility=visibility,
        status=Run.Status.COMPLETED,
        condition=header.get("condition", MAIN_CONDITION),
        agent=header["agent"]["name"],
        metadata=header,
        episodes_expected=len(header["selection"]["scenes"])
        * len(header["selection"]["levels"])
        * header_repeats(header),
        finished=timezone.now(),
    )
    episodes = Episode.objects.bulk_create(
        Episode.from_record(run=run, scene=scenes[record["scene_id"]], record=record)
        for record in bundle.episodes
    )
    if with_steps:
        rows_insert(
            Step,
            (
                Step.values_from_record(episode.pk, step)
                for episode, record in zip(episodes, bundle.episodes, strict=True)
                for step in record["steps"]
            ),
        )
    run_scores_refresh(run=run)
    if list_run:
        run_list_if_complete(run=run)
    if with_steps:
        # Every view of every episode, so its replay can show them before the render task runs.
        # Without asking the store for each new frame inside this transaction (a 264-episode
        # bundle has some 3,800: as many HEAD requests on S3, 14 of the 16 s of an import on a
        # loopback S3 server, the write lock held meanwhile); the render task and the first
        # serve find and mark the few already stored.
        run_frames_register(run=run, check_store=False)
        run_frames_queue(run=run)
    data_version_bump()
    return ImportedRun(run, len(episodes))
