"""Replays: an episode frame by frame, its prompt as text, the scene gallery, behaviour CSVs."""

from __future__ import annotations

import logging

from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
)
from django.shortcuts import render

from evaluation.confusion import CONFUSED_MIN_MOVES, CONFUSED_THRESHOLD
from evaluation.metrics import D_TH
from evaluation.vocabulary import LEVEL_KEYS, OUTCOMES, OVERALL, TRACKS, episode_outcome
from leaderboard.exports import csv_response
from leaderboard.frames.selectors import gallery_scenes
from leaderboard.frames.services import (
    episode_frames_queue,
    frames_unstored,
)
from leaderboard.models import Episode, Run, Scene
from leaderboard.replays.forms import ReplayStepForm
from leaderboard.replays.selectors import (
    episode_prompt,
    episode_replay,
    frame_urls,
    gallery,
    scene_for_gallery,
)
from leaderboard.runs.selectors import run_for
from simulation.catalogue import get_scene
from simulation.renderer import DEFAULT_SIZE
from simulation.versions import BENCHMARK_VERSION

logger = logging.getLogger(__name__)


def _bad_request(request: HttpRequest, form: object) -> HttpResponse:
    errors = getattr(form, "errors", {})
    return render(request, "leaderboard/bad_request.html", {"errors": errors.items()}, status=400)


def episode_page(request: HttpRequest, episode_id: int) -> HttpResponse:
    try:
        replay = episode_replay(episode_id=episode_id, user=request.user)
    except Episode.DoesNotExist:
        raise Http404(f"no episode {episode_id} that you may see") from None
    form = ReplayStepForm(request.GET, last=len(replay.views) - 1)
    if not form.is_valid():
        return _bad_request(request, form)
    step = form.cleaned_data.get("step") or 0
    unstored = frames_unstored(replay.keys)
    if unstored:
        episode_frames_queue(episode=replay.episode)
    data = {
        "episode": replay.episode.pk,
        "views": replay.views,
        "unstored": unstored,
        "promptUrl": f"/episodes/{replay.episode.pk}/prompt.txt",
    }
    context = {
        "replay": replay,
        "run": replay.run,
        "episode": replay.episode,
        "view": replay.views[step],
        "step": step,
        "marker": replay.chart.points[step],
        "data": data,
        "threshold": D_TH,
        "outcome": _outcome(replay.episode),
    }
    return render(request, "leaderboard/episode.html", context)


def _outcome(episode: Episode) -> str:
    outcome = episode_outcome(episode.status, episode.success)
    return OUTCOMES[outcome] if outcome else episode.get_status_display()


def episode_prompt_text(request: HttpRequest, episode_id: int) -> HttpResponse:
    """The conversation the agent was given at ``?step=N`` (images as placeholders)."""
    try:
        replay = episode_replay(episode_id=episode_id, user=request.user)
    except Episode.DoesNotExist:
        raise Http404(f"no episode {episode_id} that you may see") from None
    last = max(len(replay.views) - 2, 0)
    form = ReplayStepForm(request.GET, last=last)
    if not form.is_valid():
        text = "\n".join(f"{f}: {e}" for f, errors in form.errors.items() for e in errors)
        return HttpResponse(text + "\n", status=400, content_type="text/plain; charset=utf-8")
    text = episode_prompt(episode=replay.episode, step=form.cleaned_data.get("step") or 0)
    return HttpResponse(text, content_type="text/plain; charset=utf-8")


def scenes_page(request: HttpRequest) -> HttpResponse:
    version = request.GET.get("version") or BENCHMARK_VERSION
    if version != BENCHMARK_VERSION:
        return HttpResponse(
            f"version: the gallery shows the current scene set ({BENCHMARK_VERSION}), got "
            f"{version[:40]!r}\n",
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    scenes = list(gallery_scenes())
    items = gallery(scenes=scenes, size=DEFAULT_SIZE)
    groups: dict[str, list[tuple[object, dict[str, str]]]] = {}
    for item in items:
        groups.setdefault(item.scene.track, []).append((item, frame_urls(item.start)))
    return render(
        request,
        "leaderboard/scenes.html",
        {"groups": list(groups.items()), "count": len(items), "version": BENCHMARK_VERSION},
    )


def scene_page(request: HttpRequest, scene_id: str) -> HttpResponse:
    try:
        scene = scene_for_gallery(scene_id=scene_id, version=BENCHMARK_VERSION)
    except Scene.DoesNotExist:
        raise Http404(f"no scene {scene_id!r} in benchmark {BENCHMARK_VERSION}") from None
    item = gallery(scenes=[scene], size=DEFAULT_SIZE)[0]
    catalogue = get_scene(scene.scene_id)
    return render(
        request,
        "leaderboard/scene.html",
        {
            "scene": scene,
            "catalogue": catalogue,
            "item": item,
            "frames": [
                ("Start", "The hand at its start, as every episode begins.", item.start),
                ("Goal", f"The hand at the goal, touching the mark {item.goal_cell}.", item.goal),
                (
                    "No mirror",
                    "The control image: the same start with the mirror removed; the mark cannot "
                    "be seen.",
                    item.no_mirror,
                ),
            ],
            "frame_urls": {key: frame_urls(key) for key in (item.start, item.goal, item.no_mirror)},
        },
    )


def run_behaviour_csv(request: HttpRequest, run_id: int) -> HttpResponse:
    """A run's mirror-self confusion, bad-response and collision rates by level and track."""
    try:
        run = run_for(run_id=run_id, user=request.user)
    except Run.DoesNotExist:
        raise Http404(f"no run {run_id} that you may see") from None
    behaviour = run.behaviour or {"levels": {}, "overall": {}}
    rows = []
    tables = [*((level, behaviour["levels"].get(level)) for level in LEVEL_KEYS)]
    tables.append((OVERALL, behaviour.get("overall")))
    for table, cells in tables:
        for track in TRACKS:
            cell = (cells or {}).get(track)
            if cell is None:
                rows.append([table, track, 0, 0, None, None, None])
                continue
            rows.append(
                [
                    table,
                    track,
                    cell["episodes"],
                    cell["mirror_confused_episodes"],
                    cell["confusion_rate"],
                    cell["bad_response_rate"],
                    cell["collision_rate"],
                ]
            )
    columns = [
        "level",
        "track",
        "episodes",
        "mirror_confused_episodes",
        "confusion_rate",
        "bad_response_rate",
        "collision_rate",
    ]
    return csv_response(f"mirrorbench-run-{run.pk}-behaviour.csv", columns, rows)


CONFUSION_TEXT = (
    f"Confusion: the share of executed moves that brought the hand closer to the mark's mirror "
    f"image while taking it away from the mark. An episode is mirror-confused when at least "
    f"{int(CONFUSED_THRESHOLD * 100)}% of at least {CONFUSED_MIN_MOVES} executed moves are."
)
