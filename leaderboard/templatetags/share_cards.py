"""``{% share_meta obj %}``: a page's Open Graph and Twitter card tags, for a public model
entry, run or episode (nothing for what only its owner may see)."""

from __future__ import annotations

from typing import Any

from django import template

from leaderboard.cards.selectors import (
    ShareMeta,
    episode_share_meta,
    model_share_meta,
    public_entry,
    run_share_meta,
)
from leaderboard.models import Episode, ModelEntry, Run

register = template.Library()


def _meta(obj: Any, request: Any) -> ShareMeta | None:
    absolute = request.build_absolute_uri
    if isinstance(obj, ModelEntry):
        entry = public_entry(slug=obj.slug)
        return model_share_meta(entry=entry, absolute=absolute) if entry else None
    if isinstance(obj, Run):
        if obj.visibility != Run.Visibility.PUBLIC:
            return None
        return run_share_meta(run=obj, absolute=absolute)
    if isinstance(obj, Episode):
        if obj.run.visibility != Run.Visibility.PUBLIC:
            return None
        return episode_share_meta(episode=obj, absolute=absolute)
    return None


@register.inclusion_tag("leaderboard/_share_meta.html", takes_context=True)
def share_meta(context: Any, obj: Any) -> dict[str, Any]:
    """Return the tags' context: ``share``, or None for a private page."""
    return {"share": _meta(obj, context["request"])}
