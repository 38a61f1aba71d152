"""Share-card images (``/models/<slug>/card.png``, ``/runs/<id>/card.png``,
``/episodes/<id>/card.png``): what a shared link's preview shows."""

from __future__ import annotations

import hashlib

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified
from django.views.decorators.http import require_GET

from leaderboard.cards.selectors import (
    episode_card,
    model_card,
    public_entry,
    public_episode,
    public_run,
    run_card,
)

CARD_CACHE = "public, max-age=3600"
"""A card may be an hour old, as a badge may."""


def _png(request: HttpRequest, data: bytes) -> HttpResponse:
    etag = f'"{hashlib.sha256(data).hexdigest()[:32]}"'
    response: HttpResponse
    if request.headers.get("If-None-Match") == etag:
        response = HttpResponseNotModified()
    else:
        response = HttpResponse(data, content_type="image/png")
    response["ETag"], response["Cache-Control"] = etag, CARD_CACHE
    return response


@require_GET
def model_card_png(request: HttpRequest, slug: str) -> HttpResponse:
    entry = public_entry(slug=slug)
    if entry is None:
        raise Http404(f"no model entry {slug!r}")
    return _png(request, model_card(entry=entry))


@require_GET
def run_card_png(request: HttpRequest, run_id: int) -> HttpResponse:
    run = public_run(run_id=run_id)
    if run is None:
        raise Http404(f"no public run {run_id}")
    return _png(request, run_card(run=run))


@require_GET
def episode_card_png(request: HttpRequest, episode_id: int) -> HttpResponse:
    episode = public_episode(episode_id=episode_id)
    if episode is None:
        raise Http404(f"no episode {episode_id} of a public run")
    return _png(request, episode_card(episode=episode))
