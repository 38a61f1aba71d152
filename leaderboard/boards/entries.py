"""Writes: benchmark versions with their scenes, and model entries."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils.text import slugify

from evaluation.bundle import benchmark_version
from leaderboard.accounts.names import NameRefused, name_check, name_key, name_skeletons
from leaderboard.data_version import data_version_bump
from leaderboard.errors import FieldError
from leaderboard.frames.services import gallery_frames_register
from leaderboard.models import (
    BenchmarkVersion,
    ModelEntry,
    Scene,
)
from simulation.catalogue import scene_set
from simulation.renderer import DEFAULT_SIZE


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
        scenes = Scene.objects.bulk_create(
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
        # The gallery's frames are served from the start (a page never registers them).
        gallery_frames_register(size=DEFAULT_SIZE, scenes=scenes)
    return version


def entry_name_match(
    *, name: str, field: str, exclude: ModelEntry | None = None
) -> tuple[str, ModelEntry | None]:
    """Return ``name`` in its display form and the entry that has that name, None if none.

    Names are one name when their keys are equal (NFKC, case-folded:
    ``leaderboard.accounts.names``); the caller decides whether the user may use that entry.
    Either skeleton equal without the key is a look-alike. ``exclude`` is left out (the entry
    an administrator renames).

    Raises:
        FieldError: For ``field``: the name holds what nobody can see (``name_check``), or
            looks like another entry's name (the same skeleton) without being that name.
    """
    try:
        clean = name_check(name)
    except NameRefused as exc:
        raise FieldError(field, str(exc)) from None
    key = name_key(clean)
    skeleton, folded = name_skeletons(clean)  # both fit: name_check saw to it
    others = ModelEntry.objects.all()
    if exclude is not None and exclude.pk is not None:
        others = others.exclude(pk=exclude.pk)
    alike = Q(name_key=key) | Q(name_skeleton=skeleton) | Q(name_skeleton_folded=folded)
    found = list(others.filter(alike)[:3])
    same = next((entry for entry in found if entry.name_key == key), None)
    if same is not None:
        return clean, same
    if found:
        raise FieldError(
            field,
            f"{clean!r} looks like {found[0].name!r}, the name of an existing entry: names "
            "that look the same are the same name (a look-alike letter from another script, "
            "an accent or a full-width form does not make a new one); use that exact name if "
            "the entry is yours, or choose another",
        )
    return clean, None


MODEL_METADATA = ("release_date", "reasoning", "licence", "scaffold")
"""What a model entry says about the model beside its name, kind, organisation and parameters:
each optional, empty where not known (never guessed)."""


def model_metadata_check(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``metadata``'s facts as a model entry stores them (blank text, None dates).

    Raises:
        FieldError: Naming the first field that is unknown or holds a bad value.
    """
    checked: dict[str, Any] = {}
    for name, value in metadata.items():
        if name not in MODEL_METADATA:
            raise FieldError(name, f"unknown field: expected one of {', '.join(MODEL_METADATA)}")
        if name == "release_date":
            checked[name] = _release_date(value)
            continue
        text = "" if value is None else str(value).strip()
        choices = {"reasoning": ModelEntry.Reasoning.values, "scaffold": ModelEntry.Scaffold.values}
        if name in choices and text and text not in choices[name]:
            raise FieldError(name, f"expected one of {', '.join(choices[name])}, got {text!r}")
        if name == "licence" and len(text) > 100:
            raise FieldError(name, "at most 100 characters")
        checked[name] = text
    return checked


def _release_date(value: Any) -> date | None:
    if value is None or value == "":
        return None
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise FieldError("release_date", f"expected a date as YYYY-MM-DD, got {value!r}") from None


def model_entry_upsert(
    *,
    name: str,
    kind: str,
    organisation: str = "",
    params_b: float | None = None,
    description: str | None = None,
    links: list[dict[str, str]] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> ModelEntry:
    """Create the model entry ``name`` or update its fields; return it.

    ``metadata`` sets the facts it names of ``MODEL_METADATA`` (release date, reasoning,
    licence, scaffold); the others stay as they are.

    The site's own writer (the paper's rows, baselines, ``manage.py`` commands): the entry
    whose name equals ``name`` without case is updated.

    Raises:
        ValueError: An unknown kind, a name refused by ``name_check``, or one that looks like
            another entry's name.
    """
    if kind not in ModelEntry.Kind.values:
        raise ValueError(f"kind must be one of {', '.join(ModelEntry.Kind.values)}, got {kind!r}")
    entry = ModelEntry.objects.filter(name=name).first()
    if entry is None:
        try:
            name, entry = entry_name_match(name=name, field="name")
        except FieldError as exc:
            raise ValueError(exc.message) from None
    defaults: dict[str, Any] = {"kind": kind, "organisation": organisation, "params_b": params_b}
    if description is not None:
        defaults["description"] = description
    if links is not None:
        defaults["links"] = links
    defaults.update(model_metadata_check(metadata or {}))
    if entry is None:
        return ModelEntry.objects.create(name=name, slug=_unique_slug(name), **defaults)
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
    field: str = "name",
    metadata: Mapping[str, Any] | None = None,
) -> ModelEntry:
    """Create a user's own entry ``name`` (the caller checked it with ``entry_name_match``).

    Raises:
        FieldError: For ``field``: another request created this name or a look-alike a moment
            ago (the unique key and skeleton refused the row); nothing was written.
    """
    if kind not in ModelEntry.Kind.values:
        raise ValueError(f"kind must be one of {', '.join(ModelEntry.Kind.values)}, got {kind!r}")
    try:
        with transaction.atomic():
            return ModelEntry.objects.create(
                name=name,
                slug=_unique_slug(name),
                kind=kind,
                params_b=params_b,
                organisation=organisation,
                owner=owner,
                links=links or [],
                **model_metadata_check(metadata or {}),
            )
    except IntegrityError:
        raise FieldError(
            field,
            f"an entry named {name!r}, or one that looks like it, was created a moment ago: "
            "choose another name",
        ) from None


def _unique_slug(name: str) -> str:
    base = slugify(name) or "model"
    slug, n = base, 2
    while ModelEntry.objects.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug
