"""Writes: benchmark versions with their scenes, and model entries."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.text import slugify

from evaluation.bundle import benchmark_version
from leaderboard.models import (
    BenchmarkVersion,
    ModelEntry,
    Scene,
)
from leaderboard.services.data_version import data_version_bump
from simulation.catalogue import scene_set


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
        changed = any(getattr(entry, field) != value for field, value in defaults.items())
        for field, value in defaults.items():
            setattr(entry, field, value)
        entry.save()
        if changed:  # a name, kind or parameter count that the tables show
            data_version_bump()
    return entry


def model_entry_create(
    *,
    name: str,
    kind: str,
    owner: Any,
    params_b: float | None = None,
    organisation: str = "",
    links: list[dict[str, str]] | None = None,
) -> ModelEntry:
    """Create a user's own entry ``name`` (the caller checked that no entry has that name)."""
    if kind not in ModelEntry.Kind.values:
        raise ValueError(f"kind must be one of {', '.join(ModelEntry.Kind.values)}, got {kind!r}")
    return ModelEntry.objects.create(
        name=name,
        slug=_unique_slug(name),
        kind=kind,
        params_b=params_b,
        organisation=organisation,
        owner=owner,
        links=links or [],
    )


def _unique_slug(name: str) -> str:
    base = slugify(name) or "model"
    slug, n = base, 2
    while ModelEntry.objects.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug
