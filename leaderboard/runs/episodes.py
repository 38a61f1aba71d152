"""A run's episode list (filtered, paged) as the run page shows it."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest

from evaluation.vocabulary import OUTCOMES
from leaderboard.frames.selectors import frames_stored, run_image_size
from leaderboard.frames.services import FrameSpec
from leaderboard.models import Episode, Run
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


@dataclass(frozen=True)
class Thumb:
    """An episode card's thumbnail: its address and whether its file is stored.

    A card whose thumbnail is not stored shows a placeholder and names the address in
    ``data-frame``; the page's script asks for it after the page has loaded and puts it in
    when it arrives, so no page waits for a frame to be rendered.
    """

    url: str
    ready: bool


def episode_thumbs(run: Run, episodes: Sequence[Episode]) -> dict[int, Thumb]:
    """Return each episode's card thumbnail (its final view), by episode id."""
    finals = episode_final_cells(list(episodes))
    size = run_image_size(run)
    # The final views were registered when the episodes were stored: only their keys here.
    keys = {
        e.pk: FrameSpec(e.scene, finals[e.pk], size, condition=run.condition).key for e in episodes
    }
    stored = frames_stored(keys.values())
    return {
        pk: Thumb(url=frame_urls(key)["thumb"], ready=key in stored) for pk, key in keys.items()
    }


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
    thumbs = episode_thumbs(run, episodes)
    query = request.GET.copy()
    query.pop("page", None)
    return {
        "episode_form": form,
        "episode_page": page,
        "episode_cards": [(e, thumbs[e.pk]) for e in episodes],
        "episodes_matching": matching,
        "episode_query": query.urlencode(),
        "scene_ids": scene_ids,
        "outcomes": OUTCOMES,
    }


def run_episode_cards(run: Run, episode_ids: list[int]) -> list[tuple[Episode, Thumb]]:
    """Return the cards of ``episode_ids`` (the run's, at most a page of them) with their
    thumbnails, as the run page shows them: what a live page refreshes."""
    chosen = episode_ids[:EPISODES_PER_PAGE]
    episodes = list(run.episodes.select_related("scene").filter(pk__in=chosen))
    thumbs = episode_thumbs(run, episodes)
    return [(e, thumbs[e.pk]) for e in episodes]
