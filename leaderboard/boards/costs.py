"""Reads: what runs' measured tokens cost, at the price the site knows for each.

A run's price is, first found first, the prices given for it at evaluation (``Run.price``), the
site's price table (``ModelPrice``, which the admin edits) or ``MIRRORBENCH_PRICES``; without
one its cost is "no price". The arithmetic is the engine's (``evaluation.cost``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from evaluation.cost import per_full_run, tokens_dollars
from leaderboard.models import ModelPrice, Run

PRICE_SOURCES = {
    "run": "prices given for this run",
    "table": "the site's price table",
    "setting": "the site's MIRRORBENCH_PRICES",
}
"""Where a run's price comes from, first found first: the run's own, the table the admin edits,
the setting."""


def price_table() -> dict[str, dict[str, float]]:
    """Return the site's price table: agent spec -> price (one query)."""
    return {p.agent: p.as_price() for p in ModelPrice.objects.all()}


def run_price(
    run: Run, table: dict[str, dict[str, float]] | None = None
) -> tuple[dict[str, Any] | None, str]:
    """Return the price of ``run``'s tokens and where it comes from (``PRICE_SOURCES``), or
    (None, "") when the site knows none. ``table`` is ``price_table()`` when several runs are
    priced at once; without it the run's agent is looked up (one query)."""
    if run.price:
        return run.price, "run"
    agent = run.agent or (run.config.agent if run.config else "")
    if not agent:
        return None, ""
    if table is None:
        row = ModelPrice.objects.filter(agent=agent).first()
        found = row.as_price() if row else None
    else:
        found = table.get(agent)
    if found:
        return found, "table"
    setting = settings.MIRRORBENCH_PRICES.get(agent)
    return (setting, "setting") if setting else (None, "")


@dataclass(frozen=True)
class RunCost:
    """A run's measured tokens and, where the site knows a price, what they cost."""

    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int | None
    dollars: float | None
    per_full_run: float | None
    """The dollars scaled to a whole run of 264 episodes."""
    price_source: str
    """``PRICE_SOURCES`` key, or "" for no price."""

    @property
    def cached_share(self) -> float | None:
        """The share of the input tokens the provider served from its cache, where reported."""
        if self.cached_input_tokens is None or not self.input_tokens:
            return None
        return self.cached_input_tokens / self.input_tokens

    @property
    def price_label(self) -> str:
        """Where the price comes from, for people; "no price" without one."""
        return PRICE_SOURCES.get(self.price_source, "no price")

    def as_dict(self) -> dict[str, Any]:
        """The cost as the API and the CSV give it."""
        share = self.cached_share
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cached_share": None if share is None else round(share, 4),
            "cost_usd": None if self.dollars is None else round(self.dollars, 4),
            "cost_per_264_usd": None if self.per_full_run is None else round(self.per_full_run, 4),
            "price_source": self.price_source or None,
        }


def run_cost(*, run: Run, table: dict[str, dict[str, float]] | None = None) -> RunCost:
    """Return ``run``'s stored token totals and their price in dollars (``run_price``); the
    dollars are None ("no price") without a price or without measured tokens."""
    price, source = run_price(run, table)
    dollars = per_run = None
    if price and run.input_tokens is not None and run.output_tokens is not None:
        dollars = tokens_dollars(
            price,
            input_tokens=run.input_tokens,
            output_tokens=run.output_tokens,
            cached_input_tokens=run.cached_input_tokens,
        )
        per_run = per_full_run(dollars, run.episodes_expected)
    return RunCost(
        run.input_tokens,
        run.output_tokens,
        run.cached_input_tokens,
        dollars,
        per_run,
        source if dollars is not None else "",
    )
