"""What a run's measured tokens cost, and which runs give the most score for their money.

Plain Python. A price is a mapping in US dollars per million tokens, as ``MIRRORBENCH_PRICES``
entries, the site's price table and a run's own prices hold it: ``input_per_mtok``,
``output_per_mtok`` and, optionally, ``cached_input_per_mtok`` for input tokens the provider
served from its prompt cache (without it they cost the input price).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

FULL_RUN_EPISODES: Final = 264
"""The episodes of one model's whole run (66 scenes x 4 levels): costs are compared per run."""

PRICE_KEYS: Final[tuple[str, ...]] = ("input_per_mtok", "output_per_mtok", "cached_input_per_mtok")


def check_price(price: object) -> dict[str, float]:
    """Return ``price`` as a clean price mapping.

    Raises:
        ValueError: it is not a mapping of the known keys to non-negative numbers, with the
            input and output prices (the message names the key).
    """
    if not isinstance(price, Mapping):
        raise ValueError("expected an object with input_per_mtok and output_per_mtok")
    unknown = sorted(set(price) - set(PRICE_KEYS))
    if unknown:
        raise ValueError(f"{unknown[0]}: not a price; expected {', '.join(PRICE_KEYS)}")
    clean: dict[str, float] = {}
    for key in PRICE_KEYS:
        value = price.get(key)
        if value is None:
            if key != "cached_input_per_mtok":
                raise ValueError(f"{key}: required, US dollars per million tokens")
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValueError(f"{key}: expected a number of US dollars >= 0, got {value!r}")
        clean[key] = float(value)
    return clean


def tokens_dollars(
    price: Mapping[str, Any],
    *,
    input_tokens: int,
    output_tokens: int,
    cached_input_tokens: int | None = None,
) -> float:
    """Return what the tokens cost at ``price``, in US dollars (``cached_input_tokens`` are
    part of ``input_tokens``, priced at the cached rate where there is one)."""
    cached = min(cached_input_tokens or 0, input_tokens)
    cached_rate = price.get("cached_input_per_mtok")
    input_rate = float(price.get("input_per_mtok", 0))
    dollars = (input_tokens - cached) * input_rate
    dollars += cached * (input_rate if cached_rate is None else float(cached_rate))
    dollars += output_tokens * float(price.get("output_per_mtok", 0))
    return dollars / 1e6


def per_full_run(dollars: float, episodes: int) -> float | None:
    """Return ``dollars`` spent on ``episodes`` as the cost of a whole run of 264 episodes
    (None without an episode)."""
    return dollars * FULL_RUN_EPISODES / episodes if episodes > 0 else None


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Return the indices of the (cost, score) points no other point beats, cheapest first.

    A point is beaten when another costs no more and scores at least as much, and is strictly
    better in one of the two; of identical points the first stays.
    """
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1], i))
    front: list[int] = []
    best = float("-inf")
    for i in order:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front
