"""A run's episode list (filtered, paged) as the run page shows it."""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpRequest

from evaluation.vocabulary import OUTCOMES
from leaderboard.frames.selectors import run_image_size
from leaderboard.frames.services import FrameSpec
from leaderboard.models import Run
from leaderboard.replays.selectors import (
    EPISODES_PER_PAGE,
    EpisodeFilters,
    episode_final_cells,
    frame_urls,
    run_episode_page,
    run_scene_ids,
)
from leaderboard.runs.forms import EpisodeListForm

logger = logging.getLogger(__name__)


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
    # The final views were registered when the episodes were stored: only their keys here.
    thumbs = {e.pk: FrameSpec(e.scene, finals[e.pk], size).key for e in episodes}
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


def run_episode_cards(run: Run, episode_ids: list[int]) -> list[tuple[Any, str]]:
    """Return the cards of ``episode_ids`` (the run's, at most a page of them) with their
    thumbnails' addresses, as the run page shows them: what a live page refreshes."""
    chosen = episode_ids[:EPISODES_PER_PAGE]
    episodes = list(run.episodes.select_related("scene").filter(pk__in=chosen))
    finals = episode_final_cells(episodes)
    size = run_image_size(run)
    keys = {e.pk: FrameSpec(e.scene, finals[e.pk], size).key for e in episodes}
    return [(e, frame_urls(keys[e.pk])["thumb"]) for e in episodes]
