"""Test data: real bundles from the engine, imported through the project's services."""

from __future__ import annotations

from pathlib import Path

from evaluation.agents import MirrorConfusedAgent, OracleAgent, RandomAgent
from evaluation.bundle import read_bundle
from evaluation.runner import run
from leaderboard.models import ModelEntry, Run
from leaderboard.services.entries import model_entry_upsert
from leaderboard.services.imports import run_import_bundle
from simulation.catalogue import select_scenes

AGENTS = {
    "random": lambda: RandomAgent(0),
    "oracle": OracleAgent,
    "mirror-confused": MirrorConfusedAgent,
}


def make_bundle(
    path: Path, agent: str = "random", scenes: str = "all", levels=(0, 1, 2, 3)
) -> Path:
    """Write a real results bundle played by a baseline agent; return its path."""
    run(
        AGENTS[agent],
        select_scenes(scenes),
        list(levels),
        path,
        header_extra={"model": None, "generation": None},
    )
    return path


def import_run(
    bundle: Path,
    name: str,
    *,
    kind: str = ModelEntry.Kind.OPEN_WEIGHTS,
    params_b: float | None = None,
    source: str = Run.Source.EVALUATED,
    organisation: str = "",
) -> Run:
    entry = model_entry_upsert(name=name, kind=kind, params_b=params_b, organisation=organisation)
    return run_import_bundle(model_entry=entry, bundle=read_bundle(bundle), source=source).run
