"""Test data: varied rows from factory_boy, and real bundles imported through the services.

The factories' randomness is an input: ``tests/leaderboard/conftest.py`` reseeds it for every
test, so a test sees the same "varied" rows on every run.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import factory
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Permission, User
from django.utils.text import slugify
from factory import fuzzy
from factory.django import DjangoModelFactory

from evaluation.bundle import read_bundle
from evaluation.config import RunConfig, agent_factory
from evaluation.runner import run
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.models import ModelEntry, Run
from leaderboard.runs.imports import run_import_bundle
from simulation.renderer import DEFAULT_SIZE


@cache
def password_hash(password: str) -> str:
    """Return ``make_password(password)``, hashed once per process.

    The site's hasher (PBKDF2, a million rounds: about half a second) would cost every test
    that makes a user; users with the same password share one hash instead, which the site's
    other processes (web servers, workers) check as they check any.
    """
    return make_password(password)


class UserFactory(DjangoModelFactory):
    """A user who can sign in with the password ``pw``; ``permissions`` names those granted,
    as ``app_label.codename``: ``UserFactory(permissions=["leaderboard.add_run"])``."""

    class Meta:
        model = User
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.org")
    first_name = factory.Faker("first_name")
    password = factory.django.Password("pw", transform=password_hash)

    @factory.post_generation
    def permissions(self, create: bool, extracted: list[str] | None, **kwargs: object) -> None:
        if not create or not extracted:
            return
        for name in extracted:
            app_label, codename = name.split(".")
            self.user_permissions.add(
                Permission.objects.get(content_type__app_label=app_label, codename=codename)
            )


class ModelEntryFactory(DjangoModelFactory):
    """A model on the leaderboard: a proprietary or open-weights one unless ``kind`` is given;
    open-weights models have a parameter count, as on the paper's tables."""

    class Meta:
        model = ModelEntry

    name = factory.Sequence(lambda n: f"Model {n}")
    slug = factory.LazyAttribute(lambda entry: slugify(entry.name))
    organisation = factory.Faker("company")
    kind = fuzzy.FuzzyChoice([ModelEntry.Kind.PROPRIETARY, ModelEntry.Kind.OPEN_WEIGHTS])
    params_b = factory.Maybe(
        factory.LazyAttribute(lambda entry: entry.kind == ModelEntry.Kind.OPEN_WEIGHTS),
        yes_declaration=fuzzy.FuzzyChoice([1.5, 3.0, 7.0, 8.0, 32.0, 72.0, 235.0]),
        no_declaration=None,
    )


def make_bundle(
    path: Path,
    agent: str = "random",
    scenes: str = "all",
    levels=(0, 1, 2, 3),
    *,
    image_size: int = DEFAULT_SIZE,
    condition: str = "main",
) -> Path:
    """Write a real results bundle played by a baseline agent; return its path.

    ``image_size`` is the side of the frames its replays show (small ones render fast);
    ``condition`` the condition its scenes are played under.
    """
    config = RunConfig(
        agent=agent,
        scenes=scenes,
        levels=tuple(levels),
        image_size=image_size,
        condition=condition,
    )
    run(agent_factory(config), config, path)
    return path


def import_run(
    bundle: Path,
    name: str,
    *,
    kind: str = ModelEntry.Kind.OPEN_WEIGHTS,
    params_b: float | None = None,
    source: str = Run.Source.EVALUATED,
    organisation: str = "",
    with_steps: bool = True,
) -> Run:
    """Import ``bundle`` as a run of the model ``name``. ``with_steps=False`` stores its
    episodes and scores alone, for a test that reads no step, frame or replay (about a quarter
    of the time of a 264-episode import)."""
    entry = model_entry_upsert(name=name, kind=kind, params_b=params_b, organisation=organisation)
    return run_import_bundle(
        model_entry=entry, bundle=read_bundle(bundle), source=source, with_steps=with_steps
    ).run


def board_run(bundle: Path, name: str, **kwargs: Any) -> Run:
    """``import_run`` without the steps, for a test that reads boards, labels, tables and
    pages, which come from a run's episodes and scores alone."""
    return import_run(bundle, name, with_steps=False, **kwargs)
