"""Reads: episode replays, episode lists with filters, the scene gallery, prompts of a step.

Frame keys are computed here from what an episode stored (its scene, its hand cells, its run's
image size) under today's renderer; ``services.frames`` registers them before they are served.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Q, QuerySet
from django.urls import reverse

from evaluation.messages import ImagePart
from evaluation.prompts import (
    PROMPT_VERSION,
    RETIRED_PROMPTS,
    HistoryEntry,
    build_messages,
    messages_as_text,
)
from evaluation.registry import agent_looks
from evaluation.replay_html import (
    DistanceChart,
    distance_chart,
    first_different_move,
    step_view,
)
from evaluation.vocabulary import (
    CONFUSED,
    ERROR,
    FAILURE,
    OVERALL,
    SUCCESS,
    TABLES,
    TRACK_KEYS,
    TRACKS,
    level_label,
)
from leaderboard.frames.selectors import episode_cells, run_image_size
from leaderboard.frames.services import GALLERY_CONDITIONS
from leaderboard.models import Episode, Frame, Run, Scene, Step
from leaderboard.runs.selectors import run_for
from simulation.backends import renderer_version
from simulation.catalogue import get_scene
from simulation.dynamics import Vec3, goal_cell
from simulation.renderer import frame_key

EPISODES_PER_PAGE = 48
STEP_FIELDS = (
    "index",
    "option",
    "executed",
    "response",
    "parse_error",
    "input_tokens",
    "output_tokens",
    "latency_s",
    "cached",
    "distance_steps",
)
"""A stored step's fields a replay shows (``evaluation.replay_html.step_view``)."""


def frame_urls(key: str) -> dict[str, str]:
    """Return the URLs of a frame's three files."""
    return {
        "webp": reverse("leaderboard:frame", kwargs={"key": key, "variant": "webp"}),
        "png": reverse("leaderboard:frame", kwargs={"key": key, "variant": "png"}),
        "thumb": reverse("leaderboard:frame", kwargs={"key": key, "variant": "thumb.webp"}),
    }


@dataclass
class EpisodeReplay:
    """Everything the replay page shows: the episode, one view per step, what was answered."""

    run: Run
    episode: Episode
    views: list[dict[str, Any]]
    keys: list[str]
    chart: DistanceChart
    agent_looks: bool
    same_renderer: bool
    renderer: str
    agent_renderer: str | None
    unstored: list[str] = field(default_factory=list)
    cached_steps: int = 0
    """Steps whose answer came from the response cache (an earlier run's answer to that very
    step, replayed): each is marked, and its tokens and latency were not spent by this run."""


def _view(
    index: int, cell: Vec3, key: str, distance: int | None, step: Step | None, *, last: bool
) -> dict[str, Any]:
    view: dict[str, Any] = {
        "index": index,
        "cell": list(cell),
        "distance": distance,
        "frame": frame_urls(key),
        "key": key,
        "last": last,
    }
    if step is not None:
        view["step"] = step_view({name: getattr(step, name) for name in STEP_FIELDS})
    return view


def episode_replay(*, episode_id: int, user: Any) -> EpisodeReplay:
    """Return the replay of an episode whose run ``user`` may see (Episode.DoesNotExist else)."""
    episode = Episode.objects.select_related("scene", "run").get(pk=episode_id)
    try:
        run = run_for(run_id=episode.run_id, user=user)
    except Run.DoesNotExist:
        raise Episode.DoesNotExist(f"no episode {episode_id} that you may see") from None
    episode.run = run
    steps = list(Step.objects.filter(episode=episode).order_by("index"))
    cells = episode_cells(episode)
    size = run_image_size(run)
    version = renderer_version()
    keys = [
        frame_key(version, episode.scene.scene_id, cell, size, condition=run.condition)
        for cell in cells
    ]
    distances = list(episode.distances)
    views = [
        _view(
            i,
            cell,
            keys[i],
            distances[i] if i < len(distances) else None,
            steps[i] if i < len(steps) else None,
            last=i == len(cells) - 1,
        )
        for i, cell in enumerate(cells)
    ]
    agent_renderer = (run.metadata or {}).get("renderer", {}).get("version")
    # Frame keys hash the renderer build: a step's stored key equals ours when the agent saw
    # exactly these pixels.
    same = bool(steps) and steps[0].frame_key == keys[0]
    return EpisodeReplay(
        run=run,
        episode=episode,
        views=views,
        keys=keys,
        chart=distance_chart([v["distance"] or 0 for v in views]),
        agent_looks=agent_looks(run.agent),
        same_renderer=same,
        renderer=version,
        agent_renderer=agent_renderer if not same else version,
        cached_steps=sum(1 for s in steps if s.cached),
    )


@dataclass(frozen=True)
class EpisodeFilters:
    level: int | None = None
    track: str | None = None
    outcome: str | None = None
    scene: str | None = None


def run_episode_page(
    *, run: Run, filters: EpisodeFilters, page: int = 1
) -> tuple[Page[Episode], int]:
    """Return a page of a run's episodes matching ``filters``, and how many match."""
    episodes: QuerySet[Episode] = run.episodes.select_related("scene").order_by("level", "scene_id")
    if filters.level is not None:
        episodes = episodes.filter(level=filters.level)
    if filters.track:
        episodes = episodes.filter(scene__track=TRACK_KEYS[filters.track])
    if filters.scene:
        episodes = episodes.filter(scene__scene_id=filters.scene)
    if filters.outcome == SUCCESS:
        episodes = episodes.filter(status=Episode.Status.COMPLETED, success=True)
    elif filters.outcome == FAILURE:
        episodes = episodes.filter(status=Episode.Status.COMPLETED, success=False)
    elif filters.outcome == CONFUSED:
        episodes = episodes.filter(mirror_confused=True)
    elif filters.outcome == ERROR:
        episodes = episodes.filter(status=Episode.Status.ERROR)
    paginator = Paginator(episodes, EPISODES_PER_PAGE)
    return paginator.get_page(page), paginator.count


def episode_final_cells(episodes: Sequence[Episode]) -> dict[int, Vec3]:
    """Return the cell each episode ended at (one query)."""
    last: dict[int, tuple[int, Vec3]] = {}
    rows = Step.objects.filter(episode__in=[e.pk for e in episodes]).values_list(
        "episode_id", "index", "hand_cell"
    )
    for episode_id, index, (x, y, z) in rows:
        if episode_id not in last or index > last[episode_id][0]:
            last[episode_id] = (index, (x, y, z))
    return {e.pk: last[e.pk][1] if e.pk in last else (0, 0, 0) for e in episodes}


def run_scene_ids(*, run: Run) -> list[str]:
    """Return the scene ids of a run's episodes, in catalogue order."""
    rows = run.episodes.order_by("scene_id").values_list("scene__scene_id", flat=True)
    return list(dict.fromkeys(rows))


def episode_prompt(*, episode: Episode, step: int) -> str:
    """Return the text of the conversation the agent was given at ``step`` (0-based).

    The level's instructions and the history of moves, as ``mirrorbench prompt`` prints them,
    with images as placeholders; for an episode of a retired prompt version, why it is not shown.
    """

    played_with = episode.run.benchmark.prompt_version
    if played_with != PROMPT_VERSION:
        # This engine builds only the current prompts: showing them would misstate what the
        # agent of a retired version read.
        where = (
            f"`git show {RETIRED_PROMPTS[played_with]}:evaluation/prompts.py` in the mirrorbench "
            "repository builds them"
            if played_with in RETIRED_PROMPTS
            else "the mirrorbench repository's history has them"
        )
        return (
            f"This episode was played with the {played_with} prompts (benchmark "
            f"{episode.run.benchmark.name}), which this site no longer builds: it builds "
            f"{PROMPT_VERSION}. {where}; docs/protocol.md says what changed.\n"
        )
    scene = get_scene(episode.scene.scene_id, episode.run.condition)
    size = run_image_size(episode.run)
    steps = list(Step.objects.filter(episode=episode, index__lt=step).order_by("index"))
    history = [HistoryEntry(s.option, s.executed) for s in steps if s.option is not None]
    config = episode.run.config
    image_history = config.image_history if config else 1
    # The runner keeps one view per answered step and shows the last ``image_history``.
    previous = [
        ImagePart(b"", size, size, "previous view") for _ in range(min(image_history, len(history)))
    ]
    current = ImagePart(b"", size, size, "current view")
    return messages_as_text(build_messages(scene, episode.level, history, previous, current))


@dataclass(frozen=True)
class GalleryScene:
    scene: Scene
    start: str
    goal: str
    no_mirror: str
    goal_cell: Vec3
    controls: dict[str, str] = field(default_factory=dict)
    """The start view's key under each of ``GALLERY_CONDITIONS``."""


def gallery(*, scenes: Sequence[Scene], size: int) -> list[GalleryScene]:
    """Return each scene with the keys of its three gallery frames (today's renderer)."""
    version = renderer_version()
    items = []
    for scene in scenes:
        goal = goal_cell(get_scene(scene.scene_id))
        items.append(
            GalleryScene(
                scene=scene,
                start=frame_key(version, scene.scene_id, (0, 0, 0), size),
                goal=frame_key(version, scene.scene_id, goal, size),
                no_mirror=frame_key(version, scene.scene_id, (0, 0, 0), size, mirror=False),
                goal_cell=goal,
                controls={
                    c: frame_key(version, scene.scene_id, (0, 0, 0), size, condition=c)
                    for c in GALLERY_CONDITIONS
                },
            )
        )
    return items


def frame_for_key(key: str) -> Frame:
    """Return a registered frame (Frame.DoesNotExist for any other key)."""
    return Frame.objects.get(pk=key)


def scene_for_gallery(*, scene_id: str, version: str) -> Scene:
    """Return one scene of a benchmark version (Scene.DoesNotExist otherwise)."""
    return Scene.objects.select_related("benchmark").get(
        Q(benchmark__name=version), scene_id=scene_id
    )


def run_behaviour_rows(run: Run) -> list[dict[str, Any]]:
    """Return a run's behaviour table: one row per level and overall, a cell per track."""
    behaviour = run.behaviour
    if not behaviour:
        return []
    rows = []
    for table in TABLES:
        cells = behaviour["overall"] if table == OVERALL else behaviour["levels"].get(table)
        if not cells or not any(cells.values()):
            continue
        label = "Overall (mean of levels)" if table == OVERALL else level_label(table)
        rows.append({"table": table, "label": label, "cells": [cells.get(t) for t in TRACKS]})
    return rows


@dataclass
class EpisodePair:
    """Two replays stepped together: view n of each (its last view once it has ended)."""

    a: EpisodeReplay
    b: EpisodeReplay
    chart_a: DistanceChart
    chart_b: DistanceChart
    ticks: list[float]
    """The chart's x of each view of the longer episode."""
    first_difference: int | None
    """The first view whose answers differ (``first_different_move``), None if none does."""
    same_task: bool


def episode_pair(*, a_id: int, b_id: int, user: Any) -> EpisodePair:
    """Return two episodes' replays side by side, both of runs ``user`` may see
    (Episode.DoesNotExist, naming the one that is not, otherwise)."""
    a = episode_replay(episode_id=a_id, user=user)
    b = episode_replay(episode_id=b_id, user=user)
    views = max(len(a.views), len(b.views))
    distances = [[v["distance"] or 0 for v in r.views] for r in (a, b)]
    top = max(max(d) for d in distances)
    chart_a, chart_b = (distance_chart(d, views=views, top=top) for d in distances)
    longer = chart_a if len(a.views) >= len(b.views) else chart_b
    return EpisodePair(
        a=a,
        b=b,
        chart_a=chart_a,
        chart_b=chart_b,
        ticks=[p.x for p in longer.points],
        first_difference=first_different_move(a.views, b.views),
        same_task=(a.episode.scene.scene_id, a.episode.level)
        == (b.episode.scene.scene_id, b.episode.level),
    )


COMPARE_CANDIDATES = 60


def episode_compare_candidates(*, episode: Episode) -> list[Episode]:
    """Return the episodes of the same scene and level on the board (other listed models, the
    Human entry, the baselines) that a replay offers to compare with, by model name."""
    return list(
        Episode.objects.on_board(episode.run.benchmark.name)
        .filter(scene_id=episode.scene_id, level=episode.level)
        .exclude(run_id=episode.run_id)
        .select_related("run__model_entry")
        .order_by("run__model_entry__name", "run_id")[:COMPARE_CANDIDATES]
    )
