"""Replays: an episode frame by frame, its prompt as text, the scene gallery, behaviour CSVs."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.files.storage import default_storage
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotModified,
    HttpResponseRedirect,
)
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET

from evaluation.animation import FORMATS, animation_key
from evaluation.confusion import CONFUSED_MIN_MOVES, CONFUSED_THRESHOLD
from evaluation.metrics import D_TH
from evaluation.replay_html import ReplayEpisode, frames_notice, replay_html
from evaluation.vocabulary import (
    LEVEL_KEYS,
    METRICS,
    OUTCOMES,
    OVERALL,
    TRACKS,
    episode_outcome,
)
from leaderboard.exports import csv_response
from leaderboard.frames.selectors import frame_file_read, frames_registered, gallery_scenes
from leaderboard.frames.services import (
    RenderBudgetExceeded,
    episode_frames_queue,
    frame_lost,
    frames_unstored,
    render_budget_take,
)
from leaderboard.frames.views import (
    SIGNED_URL_MAX_AGE_S,
    busy_response,
    frame_render_for_request,
    render_identities,
)
from leaderboard.models import Episode, Run, Scene
from leaderboard.replays.forms import EpisodePairForm, ReplayStepForm
from leaderboard.replays.selectors import (
    EpisodeReplay,
    episode_compare_candidates,
    episode_pair,
    episode_prompt,
    episode_replay,
    frame_urls,
    gallery,
    scene_for_gallery,
)
from leaderboard.replays.services import (
    FramesMissing,
    animation_path,
    animation_used,
    episode_animation_store,
)
from leaderboard.runs.selectors import run_for
from simulation.catalogue import get_scene
from simulation.dynamics import goal_cell
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
        "compare_with": episode_compare_candidates(episode=replay.episode),
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


PREPARING_RETRY_S = 30
"""What a request for an episode whose frames are being registered is told to wait."""


def _frames_ready(request: HttpRequest, replay: EpisodeReplay) -> HttpResponse | None:
    """Have every frame of a replay stored, each new one made for this request within the
    render budget and the render queue as a replay's frame would be; return None when all are
    stored, or the refusal to answer (503 or 429, with Retry-After). On a refusal the render
    worker is asked for the rest, so asking again later finds more of them made."""
    registered = frames_registered(replay.keys)
    if len(registered) < len(set(replay.keys)):
        episode_frames_queue(episode=replay.episode)
        return busy_response(
            "This episode's frames are being prepared: ask again shortly.",
            503,
            PREPARING_RETRY_S,
        )
    for key in dict.fromkeys(replay.keys):
        refused = frame_render_for_request(request, registered[key])
        if refused is not None:
            episode_frames_queue(episode=replay.episode)
            return refused
    return None


def _replay_or_404(request: HttpRequest, episode_id: int) -> EpisodeReplay:
    try:
        return episode_replay(episode_id=episode_id, user=request.user)
    except Episode.DoesNotExist:
        raise Http404(f"no episode {episode_id} that you may see") from None


def _file_stem(replay: EpisodeReplay) -> str:
    episode = replay.episode
    return (
        f"mirrorbench-{replay.run.model_entry.slug}-{episode.scene.scene_id}-"
        f"level-{episode.level}-episode-{episode.pk}"
    )


def _disposition(attachment: bool, filename: str) -> str:
    header = content_disposition_header(as_attachment=attachment, filename=filename)
    return header or ("attachment" if attachment else "inline")


@require_GET
def episode_export_html(request: HttpRequest, episode_id: int) -> HttpResponse:
    """The replay as one self-contained HTML file to download: every frame inlined, nothing
    fetched when it is opened (``evaluation.replay_html``, as ``mirrorbench replay-html``)."""
    replay = _replay_or_404(request, episode_id)
    refused = _frames_ready(request, replay)
    if refused is not None:
        return refused
    frames = []
    for key in replay.keys:
        webp = frame_file_read(key, "webp")
        if webp is None:
            frame_lost(key=key)
            episode_frames_queue(episode=replay.episode)
            return busy_response(
                "A frame of this episode is missing from the store: ask again shortly.", 503, 5
            )
        frames.append(webp)
    episode, run = replay.episode, replay.run
    document = ReplayEpisode(
        agent=run.model_entry.name,
        scene_id=episode.scene.scene_id,
        level=episode.level,
        status=episode.status,
        success=bool(episode.success),
        metrics={m: getattr(episode, m) for m in METRICS},
        mirror_confused=bool(episode.mirror_confused),
        source=f"Episode {episode.pk} of run {run.pk} ({run.get_source_display()}) on the "
        f"MirrorBench leaderboard at {request.get_host()}; frames rendered with "
        f"{replay.renderer}.",
        notice=frames_notice(
            looks=replay.agent_looks,
            renderer=replay.renderer,
            agent_renderer=replay.agent_renderer,
        ),
    )
    response = HttpResponse(
        replay_html(episode=document, views=replay.views, frames=frames),
        content_type="text/html; charset=utf-8",
    )
    response["Content-Disposition"] = _disposition(True, f"{_file_stem(replay)}.html")
    response["Cache-Control"] = "private, no-cache"
    return response


@require_GET
def episode_animation(request: HttpRequest, episode_id: int, fmt: str) -> HttpResponseBase:
    """The episode's views as one animation (``?format=gif`` or ``webp`` overrides the file
    name's), step and distance drawn on each; made once from the stored frames and kept."""
    fmt = request.GET.get("format", fmt)
    if fmt not in FORMATS:
        return HttpResponse(
            f"format: one of {', '.join(FORMATS)}, got {fmt[:20]!r}\n",
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    replay = _replay_or_404(request, episode_id)
    key = animation_key(replay.keys, fmt)
    etag = f'"{key}.{fmt}"'
    if request.headers.get("If-None-Match") == etag:
        not_modified = HttpResponseNotModified()
        not_modified["ETag"], not_modified["Cache-Control"] = etag, "private, no-cache"
        return not_modified
    path = animation_path(key, fmt)
    if default_storage.exists(path):
        animation_used(path)
    else:
        refused = _frames_ready(request, replay)
        if refused is not None:
            return refused
        identities = render_identities(request)
        try:
            path = episode_animation_store(
                frame_keys=replay.keys,
                distances=[view["distance"] for view in replay.views],
                fmt=fmt,
                charge=lambda: render_budget_take(identities),
            )
        except FramesMissing as exc:
            frame_lost(key=exc.key)
            episode_frames_queue(episode=replay.episode)
            return busy_response(
                "A frame of this episode is missing from the store: ask again shortly.", 503, 5
            )
        except RenderBudgetExceeded as exc:
            return busy_response(
                "You have asked for many new frames in a short time: animations already made "
                f"are still served; new ones again in {exc.retry_after_s} s.",
                429,
                exc.retry_after_s,
            )
    if settings.S3_BUCKET:
        response: HttpResponseBase = HttpResponseRedirect(default_storage.url(path))
        response["Cache-Control"] = f"private, max-age={SIGNED_URL_MAX_AGE_S}"
        return response
    try:
        stored = default_storage.open(path, "rb")
    except FileNotFoundError:  # evicted by the disk budget's sweep since it was checked
        return busy_response("The animation is being made again: ask again shortly.", 503, 1)
    response = FileResponse(stored, content_type=FORMATS[fmt])
    response["Content-Disposition"] = _disposition(False, f"{_file_stem(replay)}.{fmt}")
    response["ETag"], response["Cache-Control"] = etag, "private, no-cache"
    return response


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
    moved_goal = goal_cell(get_scene(scene.scene_id, "moved-mark"))
    frames = [
        ("Start", "The hand at its start, as every episode begins.", item.start),
        ("Goal", f"The hand at the goal, touching the mark {item.goal_cell}.", item.goal),
        (
            "No mirror (no-mirror control)",
            "The same start with the mirror removed; the mark cannot be seen.",
            item.no_mirror,
        ),
        (
            "Mark unseen (mark-unseen control)",
            "The same start with the mark not drawn; it is still the goal.",
            item.controls["mark-unseen"],
        ),
        (
            "Moved mark (moved-mark control)",
            f"The start with the mark at this scene's other place on the body, goal {moved_goal}.",
            item.controls["moved-mark"],
        ),
    ]
    return render(
        request,
        "leaderboard/scene.html",
        {
            "scene": scene,
            "catalogue": catalogue,
            "item": item,
            "frames": frames,
            "frame_urls": {key: frame_urls(key) for _, _, key in frames},
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


def episode_compare_page(request: HttpRequest) -> HttpResponse:
    """Two episodes side by side (``?a=ID&b=ID``), stepped together."""
    form = EpisodePairForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    ids = form.cleaned_data
    try:
        pair = episode_pair(a_id=ids["a"], b_id=ids["b"], user=request.user)
    except Episode.DoesNotExist:
        raise Http404(f"no episodes {ids['a']} and {ids['b']} that you may see") from None
    last = max(len(pair.a.views), len(pair.b.views)) - 1
    step = min(ids.get("step") or 0, last)
    for replay in (pair.a, pair.b):
        if frames_unstored(replay.keys):
            episode_frames_queue(episode=replay.episode)
    first = pair.first_difference
    context = {
        "pair": pair,
        "sides": [("a", pair.a, _outcome(pair.a.episode)), ("b", pair.b, _outcome(pair.b.episode))],
        "charts": [("a", pair.chart_a), ("b", pair.chart_b)],
        "difference_x": pair.ticks[first] if first is not None else None,
        "step": step,
        "last": last,
        "data": {
            "a": {"episode": pair.a.episode.pk, "views": pair.a.views},
            "b": {"episode": pair.b.episode.pk, "views": pair.b.views},
            "firstDifference": first,
        },
    }
    return render(request, "leaderboard/episode_compare.html", context)
