"""Browser episodes (``/play/``): the page, and the JSON endpoints its script calls.

Every answer is a POST naming the step it answers; the server refuses, with 409 and a
sentence, an answer for a step that is not the current one or after the episode ended (see
``services.play``). Bad input is a 400 naming the field, an episode that is not the player's a
404; every POST counts against the ``play`` throttle.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from leaderboard.errors import FieldError
from leaderboard.play.forms import HumanSetForm, PlayAnswerForm, PlayStartForm
from leaderboard.play.selectors import (
    human_progress,
    play_view,
    quick_scene_ids,
    reported_human_avg,
)
from leaderboard.play.services import human_set_submit, play_answer, play_get, play_start
from leaderboard.play.state import Player, PlayNotFound, PlayRefused
from leaderboard.submissions.services import QuotaExceeded, SubmissionRejected
from leaderboard.submissions.views import SUBMITTED
from leaderboard.throttles import throttled_post
from simulation.catalogue import scene_set


def _error(status: int, message: str, field: str | None = None) -> JsonResponse:
    return JsonResponse({"error": message, "field": field}, status=status)


def _form_error(form: Any) -> JsonResponse:
    field, errors = next(iter(form.errors.items()))
    return _error(400, f"{field}: {' '.join(errors)}", field)


def _player(request: HttpRequest, *, create: bool = False) -> Player | None:
    """Return who is playing; an anonymous visitor needs a session (made when ``create``)."""
    if request.user.is_authenticated:
        return Player(request.user)
    if not request.session.session_key:
        if not create:
            return None
        request.session.save()
    key = request.session.session_key
    return Player.anonymous(key) if key else None


def play_page(request: HttpRequest) -> HttpResponse:
    form = PlayStartForm()
    return _page(request, form, status=200)


def _page(
    request: HttpRequest, form: PlayStartForm, *, status: int, errors: Any = None
) -> HttpResponse:
    tracks: dict[str, list[str]] = {}
    for scene in scene_set().values():
        tracks.setdefault(scene.track, []).append(scene.id)
    data = {
        "startUrl": reverse("leaderboard:play-start"),
        "playUrl": reverse("leaderboard:play"),
        "csrf": get_token(request),
        "signedIn": request.user.is_authenticated,
    }
    context = {
        "form": form,
        "tracks": list(tracks.items()),
        "progress": human_progress(user=request.user),
        "quick_scenes": quick_scene_ids(),
        "human_avg": reported_human_avg(),
        "submit_form": HumanSetForm(),
        "errors": errors,
        "data": data,
    }
    return render(request, "leaderboard/play.html", context, status=status)


@require_POST
@throttled_post("play")
def play_start_view(request: HttpRequest) -> JsonResponse:
    form = PlayStartForm(request.POST)
    if not form.is_valid():
        return _form_error(form)
    player = _player(request, create=True)
    if player is None:
        return _error(400, "your browser must accept the site's session cookie to play")
    try:
        state = play_start(
            player=player,
            scene_id=form.cleaned_data.get("scene") or None,
            level=form.cleaned_data.get("level"),
        )
    except FieldError as exc:
        return _error(400, str(exc), exc.field)
    return JsonResponse(play_view(state), status=201)


@require_GET
def play_state_view(request: HttpRequest, ref: str) -> JsonResponse:
    player = _player(request)
    if player is None:
        return _error(404, f"no episode {ref!r} of yours")
    try:
        state = play_get(player=player, ref=ref)
    except PlayNotFound as exc:
        return _error(404, str(exc))
    return JsonResponse(play_view(state))


@require_POST
@throttled_post("play")
def play_answer_view(request: HttpRequest, ref: str) -> JsonResponse:
    form = PlayAnswerForm(request.POST)
    if not form.is_valid():
        return _form_error(form)
    player = _player(request)
    if player is None:
        return _error(404, f"no episode {ref!r} of yours")
    try:
        state = play_answer(
            player=player,
            ref=ref,
            index=form.cleaned_data["index"],
            option=form.cleaned_data["option"],
        )
    except FieldError as exc:
        return _error(400, str(exc), exc.field)
    except PlayNotFound as exc:
        return _error(404, str(exc))
    except PlayRefused as exc:
        return _error(409, str(exc), "index")
    return JsonResponse(play_view(state))


@require_POST
@throttled_post("submissions")
def play_submit_view(request: HttpRequest) -> HttpResponse:
    """Submit the signed-in player's complete Human set as a Human entry."""
    if not request.user.is_authenticated:
        return redirect(f"{settings.LOGIN_URL}?next={reverse('leaderboard:play')}")
    form = HumanSetForm(request.POST)
    start = PlayStartForm()
    if not form.is_valid():
        return _page(request, start, status=400, errors=list(form.errors.items()))
    try:
        done = human_set_submit(user=request.user, subset=form.cleaned_data["subset"])
    except FieldError as exc:
        return _page(request, start, status=400, errors=[(exc.field, [exc.message])])
    except QuotaExceeded as exc:
        return _page(request, start, status=429, errors=[("subset", [str(exc)])])
    except SubmissionRejected as exc:
        return _page(request, start, status=400, errors=[("bundle", exc.problems)])
    messages.success(request, f"Your Human set was checked like any upload. {SUBMITTED}")
    return redirect("leaderboard:submission", submission_id=done.submission.pk)
