"""Pages of episodes and scenes: replays, episode lists, frames, the scene gallery, prompts."""

from __future__ import annotations

import hashlib
import ipaddress
import logging
from typing import Any

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
from django.views.decorators.http import require_GET

from evaluation.confusion import CONFUSED_MIN_MOVES, CONFUSED_THRESHOLD
from evaluation.metrics import D_TH, TRACKS
from leaderboard.exports import csv_response
from leaderboard.forms import EpisodeListForm, ReplayStepForm
from leaderboard.models import Episode, Frame, Run, Scene
from leaderboard.replay_selectors import (
    OUTCOMES,
    EpisodeFilters,
    episode_final_cells,
    episode_prompt,
    episode_replay,
    frame_for_key,
    frame_urls,
    gallery,
    run_episode_page,
    run_scene_ids,
    scene_for_gallery,
)
from leaderboard.selectors import frame_path, gallery_scenes, run_image_size, run_visible
from leaderboard.services.frames import (
    FrameSpec,
    RenderBudgetExceeded,
    RenderQueueFull,
    episode_frames_queue,
    episode_frames_register,
    frame_render_now,
    frame_used,
    frames_register,
    frames_unstored,
    gallery_frames_register,
    render_budget_take,
)
from mirrorbench_site.client_ip import client_ip
from simulation.catalogue import get_scene
from simulation.render import DEFAULT_SIZE, RenderError, renderer_version
from simulation.versions import BENCHMARK_VERSION

logger = logging.getLogger(__name__)

FRAME_TYPES = {"png": "image/png", "webp": "image/webp", "thumb.webp": "image/webp"}
IMMUTABLE = "public, max-age=31536000, immutable"
SIGNED_URL_MAX_AGE_S = 300
"""How long a browser may reuse a redirect to a signed S3 URL (well inside its expiry)."""


def _bad_request(request: HttpRequest, form: object) -> HttpResponse:
    errors = getattr(form, "errors", {})
    return render(request, "leaderboard/bad_request.html", {"errors": errors.items()}, status=400)


def render_identities(request: HttpRequest) -> list[str]:
    """Who a new frame is counted against: the address (an IPv6 client by its /64, which one
    machine usually holds whole), the session if any, and the account if signed in."""
    address = client_ip(request) or ""  # the trusted proxies' client, or the peer
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        bucket = address or "unknown"
    else:
        bucket = (
            str(ipaddress.ip_network(f"{parsed}/64", strict=False))
            if parsed.version == 6
            else str(parsed)
        )
    identities = [f"address:{bucket}"]
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if session_key:
        identities.append(f"session:{hashlib.sha256(session_key.encode()).hexdigest()[:32]}")
    if request.user.is_authenticated:
        identities.append(f"user:{request.user.pk}")
    return identities


def _busy(message: str, status: int, retry_after_s: int) -> HttpResponse:
    response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(retry_after_s)
    response["Cache-Control"] = "no-store"
    return response


@require_GET
def frame_file(request: HttpRequest, key: str, variant: str) -> HttpResponseBase:
    """A frame's file by its content key; rendered first if registered but not stored yet.

    A new frame counts against the render budget of whoever asks (429 past it), and is made
    through the bounded render queue (503 with Retry-After when it is full or the frame takes
    longer than ``RENDER_WAIT_S``); a stored frame costs nothing.
    """
    try:
        frame = frame_for_key(key)
    except Frame.DoesNotExist:
        raise Http404("no stored episode shows this frame") from None
    stored_as = "thumb" if variant == "thumb.webp" else variant
    etag = f'"{key}.{stored_as}"'
    if frame.stored is None:
        if frame.renderer != renderer_version():
            raise Http404("this frame was made by another renderer build and cannot be remade")
        identities = render_identities(request)
        try:
            stored = frame_render_now(key, charge=lambda: render_budget_take(identities))
        except TimeoutError:
            return _busy("This frame is still being rendered.", 503, 2)
        except RenderQueueFull as exc:
            return _busy(
                "The server is rendering as many frames as it can: ask again shortly.",
                503,
                exc.retry_after_s,
            )
        except RenderBudgetExceeded as exc:
            return _busy(
                "You have asked for many new frames in a short time: frames already made are "
                f"still served; new ones again in {exc.retry_after_s} s.",
                429,
                exc.retry_after_s,
            )
        except RenderError as exc:
            logger.error("frame %s cannot be rendered: %s", key, exc)
            return HttpResponse(f"This frame cannot be rendered here: {exc}", status=503)
        if not stored:
            raise Http404("this frame could not be rendered")
    else:
        frame_used(key)
    if request.headers.get("If-None-Match") == etag:
        not_modified = HttpResponseNotModified()
        not_modified["ETag"], not_modified["Cache-Control"] = etag, IMMUTABLE
        return not_modified
    path = frame_path(key, stored_as)
    if settings.S3_BUCKET:
        response = HttpResponseRedirect(default_storage.url(path))
        response["Cache-Control"] = f"private, max-age={SIGNED_URL_MAX_AGE_S}"
        return response
    try:
        handle = default_storage.open(path, "rb")
    except FileNotFoundError:
        Frame.objects.filter(pk=key).update(stored=None)  # lost: render it again next time
        raise Http404("this frame's file is missing; ask again to render it") from None
    served = FileResponse(handle, content_type=FRAME_TYPES[variant])
    served["ETag"], served["Cache-Control"] = etag, IMMUTABLE
    return served


def episode_page(request: HttpRequest, episode_id: int) -> HttpResponse:
    try:
        replay = episode_replay(episode_id=episode_id, user=request.user)
    except Episode.DoesNotExist:
        raise Http404(f"no episode {episode_id} that you may see") from None
    form = ReplayStepForm(request.GET, last=len(replay.views) - 1)
    if not form.is_valid():
        return _bad_request(request, form)
    step = form.cleaned_data.get("step") or 0
    cells = [(v["cell"][0], v["cell"][1], v["cell"][2]) for v in replay.views]
    episode_frames_register(replay.episode, cells)  # the cells are at hand: no second query
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
    if episode.status == Episode.Status.ERROR:
        return "Ended in error"
    if episode.status != Episode.Status.COMPLETED:
        return episode.get_status_display()
    return "Reached the mark" if episode.success else "Did not reach the mark"


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


def run_episode_list(request: HttpRequest, run: Run) -> dict[str, Any]:
    """The episode list of the run page: its filter form, a page of cards and their thumbs."""
    scene_ids = run_scene_ids(run=run)
    form = EpisodeListForm(request.GET, scene_ids=scene_ids)
    if not form.is_valid():
        return {"episode_form": form, "episode_errors": form.errors}
    data = form.cleaned_data
    filters = EpisodeFilters(
        level=data.get("level"),
        track=data.get("track") or None,
        outcome=data.get("outcome") or None,
        scene=data.get("scene") or None,
    )
    page, matching = run_episode_page(run=run, filters=filters, page=data.get("page") or 1)
    episodes = list(page.object_list)
    finals = episode_final_cells(episodes)
    size = run_image_size(run)
    thumbs = dict(
        zip(
            [e.pk for e in episodes],
            frames_register(FrameSpec(e.scene, finals[e.pk], size) for e in episodes),
            strict=True,
        )
    )
    query = request.GET.copy()
    query.pop("page", None)
    return {
        "episode_form": form,
        "episode_page": page,
        "episode_cards": [(e, frame_urls(thumbs[e.pk])["thumb"]) for e in episodes],
        "episodes_matching": matching,
        "episode_query": query.urlencode(),
        "scene_ids": scene_ids,
        "outcomes": OUTCOMES,
    }


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
    gallery_frames_register(size=DEFAULT_SIZE, scenes=scenes)
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
    gallery_frames_register(size=DEFAULT_SIZE, scenes=[scene])
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
        run = run_visible(run_id=run_id, user=request.user)
    except Run.DoesNotExist:
        raise Http404(f"no run {run_id} that you may see") from None
    behaviour = run.behaviour or {"levels": {}, "overall": {}}
    rows = []
    tables = [*((level, behaviour["levels"].get(level)) for level in "0123")]
    tables.append(("overall", behaviour.get("overall")))
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
