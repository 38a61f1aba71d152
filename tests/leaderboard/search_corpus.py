"""A small set of responses and the queries over it, shared by the SQLite and PostgreSQL search
tests: the same queries must find the same steps on both databases."""

from __future__ import annotations

import json
from contextlib import nullcontext
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from leaderboard.boards.entries import benchmark_current
from leaderboard.models import Episode, Frame, ModelEntry, Run, Step
from leaderboard.search.query import parse_query
from leaderboard.search.selectors import step_search

HUMAN = "male_0-mano_white-splash"
ROBOT = "tienkung-shadow_hand-logo_0"
STORED_KEY = "f" * 40
"""The frame of step ``hand`` is stored (its result has a thumbnail); the others are not."""

# label: (model, visibility, condition, level, scene, outcome, response)
STEPS: dict[str, tuple[str, str, str, int, str, str, str]] = {
    "hand": ("Alpha", "public", "main", 0, HUMAN, "success",
             "I see my own hand in the mirror, so I move left. Choice: [3]"),
    "mark": ("Alpha", "public", "main", 3, ROBOT, "failure",
             "The mirror shows a mark on my chest. Choice: [6]"),
    "markup": ("Alpha", "public", "main", 1, HUMAN, "success",
               "<script>alert('x')</script> the mirrored <b>hand</b> goes up. Choice: [1]"),
    "turn": ("Beta", "public", "moved-mark", 0, HUMAN, "failure",
             "Turn left towards the mirror image. Choice: [3]"),
    "confused": ("Beta", "public", "moved-mark", 2, ROBOT, "failure",
                 "Mirrors confuse me; moving forward. Choice: [5]"),
    "secret": ("Gamma", "private", "main", 0, HUMAN, "success",
               "Secret mirror plan: my own hand goes left. Choice: [3]"),
}  # fmt: skip

LATE = "Later, once more. Choice: [2]"
"""Step ``late``: a second step of ``hand``'s episode, stored last, so that episode's steps span
every other step's id."""

QUERIES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("mirror", {}, ["turn", "mark", "hand"]),
    ("MIRROR", {}, ["turn", "mark", "hand"]),
    ("mirr*", {}, ["confused", "turn", "markup", "mark", "hand"]),
    ('"my own hand"', {}, ["hand"]),
    ('"own my hand"', {}, []),
    ("mirror -left", {}, ["mark"]),
    ('mirr* -"turn left" -chest', {}, ["confused", "markup", "hand"]),
    ("hand left", {}, ["hand"]),
    ("choice 3", {}, ["turn", "hand"]),
    ("script alert", {}, ["markup"]),
    ("mirr*", {"model": "beta"}, ["confused", "turn"]),
    ("mirr*", {"condition": "moved-mark"}, ["confused", "turn"]),
    ("mirr*", {"level": 0}, ["turn", "hand"]),
    ("mirr*", {"track": "robot"}, ["confused", "mark"]),
    ("mirr*", {"outcome": "success"}, ["markup", "hand"]),
    ("mirr*", {"outcome": "failure", "track": "human"}, ["turn"]),
    ("mirr*", {"outcome": "confused"}, ["confused"]),
    ("mirr*", {"outcome": "error"}, []),
    ("mirr*", {"condition": "no-mirror"}, []),
    ("mirror", {"model": "nobody"}, []),
    (
        "mirr*",
        {"model": "alpha", "level": 3, "track": "robot", "outcome": "failure", "condition": "main"},
        ["mark"],
    ),
    (
        "mirr* -chest",
        {"model": "alpha", "level": 3, "track": "robot", "outcome": "failure", "condition": "main"},
        [],
    ),
    ("hand", {"model": "alpha", "outcome": "success"}, ["markup", "hand"]),
    ("choice", {}, ["late", "confused", "turn", "markup", "mark", "hand"]),
    ("choice", {"model": "alpha"}, ["late", "markup", "mark", "hand"]),
]


def corpus_build() -> dict[str, Step]:
    """Store the corpus's runs, episodes and steps (one step per episode); return them by label."""
    version = benchmark_current()
    scenes = {s.scene_id: s for s in version.scenes.filter(scene_id__in=[HUMAN, ROBOT])}
    owner = get_user_model().objects.create_user("dana", "dana@example.org", "x-long-password")
    entries: dict[str, ModelEntry] = {}
    runs: dict[tuple[str, str, str], Run] = {}
    steps: dict[str, Step] = {}
    for label, (model, visibility, condition, level, scene, outcome, text) in STEPS.items():
        if model not in entries:
            entries[model] = ModelEntry.objects.create(
                name=model, slug=model.lower(), kind=ModelEntry.Kind.PROPRIETARY
            )
        if (model, visibility, condition) not in runs:
            runs[model, visibility, condition] = Run.objects.create(
                model_entry=entries[model],
                benchmark=version,
                source=Run.Source.EVALUATED,
                status=Run.Status.COMPLETED,
                visibility=visibility,
                condition=condition,
                owner=owner if visibility == "private" else None,
            )
        episode = Episode.objects.create(
            run=runs[model, visibility, condition],
            scene=scenes[scene],
            level=level,
            status=Episode.Status.COMPLETED,
            success=outcome == "success",
            mirror_confused=label == "confused",
            distances=[3, 2],
            steps_taken=1,
        )
        steps[label] = Step.objects.create(
            episode=episode,
            index=0,
            response=text,
            option=3,
            executed=True,
            distance_steps=2,
            hand_cell=[0, 1, 0],
            frame_key=STORED_KEY if label == "hand" else f"{len(steps):040d}",
        )
    steps["late"] = Step.objects.create(
        episode=steps["hand"].episode,
        index=1,
        response=LATE,
        option=2,
        executed=True,
        distance_steps=1,
        hand_cell=[0, 1, 1],
        frame_key="e" * 40,
    )
    Frame.objects.create(
        key=STORED_KEY,
        scene=scenes[HUMAN],
        cell=[0, 0, 0],
        size=32,
        renderer="test",
        stored=timezone.now(),
    )
    return steps


def corpus_results() -> list[list[str]]:
    """Return, for each of QUERIES, the labels of the steps the search finds, in order."""
    labels = {text: label for label, (*_, text) in STEPS.items()} | {LATE: "late"}
    return [
        [labels[hit.step.response] for hit in step_search(query=parse_query(q), **f).hits]
        for q, f, _ in QUERIES
    ]


WAYS: dict[str, dict[str, int]] = {
    "narrow": {},
    "narrow, a range per episode": {"RANGE_GAP": 0},
    "narrow, one range": {"MAX_RANGES": 1},
    "broad": {"NARROW_EPISODES": 0},
}
"""The ways ``step_search_ids`` can take (its settings for each): through the filters' few
episodes (by ranges of step ids: the default, each episode's own, all of them as one), or
walking the index's matches (as for filters that leave more than ``NARROW_EPISODES``)."""


def corpus_results_every_way() -> dict[str, list[list[str]]]:
    """Return ``corpus_results`` for each of ``WAYS``, and the pages of two of each query, one
    after the other, as ``<way>, paged``."""
    from unittest import mock

    from leaderboard.search import selectors

    labels = {text: label for label, (*_, text) in STEPS.items()} | {LATE: "late"}
    found = {}
    for way, settings in WAYS.items():
        patched = mock.patch.multiple(selectors, **settings) if settings else nullcontext()
        with patched:  # type: ignore[attr-defined]
            found[way] = corpus_results()
            paged = []
            for q, f, _ in QUERIES:
                pages = [
                    step_search(query=parse_query(q), page=n, per_page=2, **f) for n in (1, 2, 3)
                ]
                paged.append([labels[h.step.response] for page in pages for h in page.hits])
            found[f"{way}, paged"] = paged
    return found


def main() -> None:
    """Build the corpus in the configured database and print the results of every way as
    JSON."""
    corpus_build()
    print(json.dumps(corpus_results_every_way()))
