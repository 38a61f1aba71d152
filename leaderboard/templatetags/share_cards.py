"""``{% share_meta obj %}`` (``{% share_meta episode run %}``): a page's Open Graph and
Twitter card tags, for a public model entry, run or episode (nothing for what only its owner
may see)."""

from __future__ import annotations

from typing import Any

from django import template

from leaderboard.cards.selectors import (
    ShareMeta,
    episode_share_meta,
    model_share_meta,
    run_share_meta,
)
from leaderboard.models import Episode, ModelEntry, Run

register = template.Library()


def _meta(obj: Any, run: Run | None, request: Any) -> ShareMeta | None:
    absolute = request.build_absolute_uri
    if isinstance(obj, ModelEntry):
        # A model page shows public entries only (boards.selectors.model_entry_detail).
        return model_share_meta(entry=obj, absolute=absolute)
    if isinstance(obj, Run):
        if obj.visibility != Run.Visibility.PUBLIC:
            return None
        return run_share_meta(run=obj, absolute=absolute)
    if isinstance(obj, Episode) and run is not None:
        if run.visibility != Run.Visibility.PUBLIC:
            return None
        return episode_share_meta(episode=obj, run=run, absolute=absolute)
    return None


@register.inclusion_tag("leaderboard/_share_meta.html", takes_context=True)
def share_meta(context: Any, obj: Any, run: Run | None = None) -> dict[str, Any]:
    """Return the tags' context: ``share``, or None for a private page. An episode's page
    passes its run (``{% share_meta episode run %}``), which it has loaded already."""
    return {"share": _meta(obj, run, context["request"])}
