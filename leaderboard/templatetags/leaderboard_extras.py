"""Template filters: thin wrappers over ``leaderboard.formatting``."""

import re
from typing import Any

from django import template
from django.urls import reverse
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from leaderboard import formatting

register = template.Library()


@register.filter
def metric(value: Any) -> str:
    return formatting.metric(value)


@register.filter
def percent(value: Any) -> str:
    """A share as a whole percentage ("12%"), or a dash when there is nothing to count."""
    if value is None:
        return "—"
    return f"{float(value) * 100:.0f}%"


@register.filter
def params(value: Any) -> str:
    return formatting.params(value)


@register.filter
def dollars(value: Any) -> str:
    return formatting.dollars(value)


@register.filter
def thousands(value: Any) -> str:
    return formatting.thousands(value)


@register.filter
def source_label(value: str) -> str:
    return formatting.SOURCE_LABELS.get(value, value)


SOURCE_TITLES = {
    "reported": "The paper's published numbers, as printed: the paper publishes tables, not "
    "episodes, so they cannot be replayed.",
    "evaluated": "Run on this server by its workers: every episode and step is stored here.",
    "verified": "Verified: the server replayed every action of every episode through the "
    "dynamics and recomputed every distance and metric. This proves the bundle is "
    "consistent, not which model produced it.",
}


@register.simple_tag
def source_badge(source: str) -> SafeString:
    """A source badge with what the source means on hover; a verified one links to how."""
    label = formatting.SOURCE_LABELS.get(source, source)
    title = SOURCE_TITLES.get(source, "")
    css = f"badge source-{source}"
    if source == "verified":
        href = reverse("leaderboard:about") + "#verification"
        return format_html('<a class="{}" href="{}" title="{}">{}</a>', css, href, title, label)
    return format_html('<span class="{}" title="{}">{}</span>', css, title, label)


@register.filter
def kind_label(value: str) -> str:
    return formatting.KIND_LABELS.get(value, value)


@register.filter
def metric_name(value: str) -> str:
    return formatting.metric_name(value)


@register.simple_tag
def ci_title(ci: Any, episodes: Any = None) -> str:
    return formatting.interval(ci, episodes)


@register.filter
def score_cell(cell: dict[str, Any]) -> SafeString:
    """Render one leaderboard score cell (a ``<td>``) from the selector's cell data."""
    return formatting.score_cell(
        cell["value"],
        mark=cell["mark"],
        ci=cell["ci"],
        episodes=cell["episodes"],
        group_start=cell["group_start"],
        href=cell.get("href", ""),
        intervals=cell.get("intervals", False),
    )


@register.filter
def key_cell(cell: dict[str, Any]) -> SafeString:
    """Render a row's key score (the sorted column, shown beside the model on a phone)."""
    return formatting.score_cell(cell["value"], mark=cell["mark"], css="key")


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    return mapping.get(key) if mapping else None


@register.filter
def duration(value: Any) -> str:
    """A wait (a timedelta, or seconds) in words: "45 seconds" under two minutes, else whole
    minutes ("15 minutes", "60 minutes")."""
    seconds = value.total_seconds() if hasattr(value, "total_seconds") else value
    try:
        seconds = max(1, round(float(seconds)))
    except (TypeError, ValueError):
        return ""
    if seconds < 120:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return f"{round(seconds / 60)} minutes"


_BACKTICKS = re.compile(r"`([^`]+)`")


@register.filter
def inline_code(value: Any) -> SafeString:
    """Escape a help text and set its `backticked` commands in code, as the forms write them."""
    escaped = str(conditional_escape(value))
    # Escaped first: the only markup is the code tags added here.
    return mark_safe(_BACKTICKS.sub(r"<code>\1</code>", escaped))


_ID_JOINS = re.compile(r"([_-])")


@register.filter
def breakable(value: Any) -> SafeString:
    """Escape an id and let it break after its ``_`` and ``-`` only (``<wbr>``), not mid-word:
    ``male_0-mano_white-splash`` wraps as ``male_0-`` / ``mano_white-`` / ``splash``."""
    escaped = str(conditional_escape(value))
    # Escaped first: the only markup is the <wbr> added here.
    return mark_safe(_ID_JOINS.sub(r"\1<wbr>", escaped))
