"""Pure formatting functions used by the templates (and tested on their own)."""

from __future__ import annotations

import math
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from evaluation.vocabulary import METRIC_NAMES

SOURCE_LABELS = {
    "reported": "reported",
    "evaluated": "evaluated here",
    "verified": "verified upload",
}
KIND_LABELS = {
    "proprietary": "proprietary",
    "open-weights": "open weights",
    "baseline": "baseline",
    "human": "human",
}


def metric_name(value: str) -> str:
    """Return a metric's full name (``tsr`` -> Task Success Rate); other values unchanged."""
    return METRIC_NAMES.get(value, value)


def metric(value: Any) -> str:
    """Return a metric with 3 decimals (the paper's precision), or an em dash when absent."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "\u2014"
    return f"{float(value):.3f}"


def thousands(value: Any) -> str:
    """Return a whole number with thousands separated by commas ("10,200,097")."""
    try:
        return f"{round(float(value)):,}"
    except (TypeError, ValueError):
        return "\u2014"


def dollars(value: Any) -> str:
    """Return US dollars for people: "$37.48", cents below a dollar ("$0.0312"), "no price"
    for None."""
    if value is None:
        return "no price"
    amount = float(value)
    if 0 < abs(amount) < 1:
        return f"${amount:.4f}"
    return f"${amount:,.2f}"


def params(value: Any) -> str:
    """Return a parameter count in billions ("72B", "0.5B"), or an em dash when unknown."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "\u2014"
    return f"{float(value):g}B"


def interval(ci: Any, episodes: Any = None) -> str:
    """Return a hover text for a confidence interval and its episode count."""
    if not ci:
        return ""
    low, high = ci
    text = f"95% CI {low:.3f} to {high:.3f}"
    if episodes:
        text += f" over {episodes} episodes"
    return text


def half_width(ci: Any) -> str:
    """Return an interval as "±" its half-width ("±0.045"), or "" without one."""
    if not ci:
        return ""
    low, high = ci
    return f"\u00b1{(float(high) - float(low)) / 2:.3f}"


def score_cell(
    value: Any,
    *,
    mark: str = "",
    ci: Any = None,
    episodes: Any = None,
    group_start: bool = False,
    href: str = "",
    intervals: bool = False,
    css: str = "",
) -> SafeString:
    """Return one score cell of a leaderboard table as HTML.

    Built in Python rather than in the template: a 200-row table has 3,000 of these, and the
    template engine would spend most of the page's time on them. With ``intervals`` the 95%
    interval's half-width follows the number (touch screens have no hover text).
    """
    classes = (
        "num"
        + (f" {mark}" if mark else "")
        + (" group-start" if group_start else "")
        + (f" {css}" if css else "")
    )
    text = metric(value)
    if mark == "first":
        text = f"<strong>{text}</strong>"
    elif mark == "second":
        text = f"<u>{text}</u>"
    if intervals and ci:
        text += f' <span class="pm">{half_width(ci)}</span>'
    if href:  # the cell's episodes (built by the selector from a run id, a level, a track)
        text = f'<a class="cell-link" href="{escape(href)}">{text}</a>'
    title = interval(ci, episodes)
    attribute = f' title="{title}"' if title else ""
    # Every piece is a number or a fixed word formatted above, never user input: safe as is.
    return mark_safe(f'<td class="{classes}"{attribute}>{text}</td>')
