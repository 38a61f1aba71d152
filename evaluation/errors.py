"""Errored episodes counted apart from a model's failures.

An episode ends in ``error`` when the provider or the harness, not the model, stopped it: a
timeout or a dropped connection, a 4xx or 5xx that outlived the retries, an answer the client
could not use (``evaluation.public.ERROR_CATEGORIES`` names each kind). Such an episode is
left out of every score (``docs/protocol.md``: the protocol scores what a model answered, and
an episode the provider cut short was never answered to its end); it is counted here by
category, so that a run says how much of it is missing and why.

A refusal with no answer (the provider's ``refusal`` or ``content_filter``, a prompt over the
model's context) is different: the protocol (``protocol.md``, Answer parsing) makes an empty
answer a bad response, which moves nothing and uses up its step. Those steps stay in the score,
as the paper's runs counted them, and are counted here too (``refused_steps``) so that a reader
can tell a provider's refusals from answers the parser could not read.

Plain Python: the command line's ``score`` and the site read bundle records through
:func:`error_counts`; the site counts its stored rows into the same :class:`ErrorCounts`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from evaluation.public import ERROR_CATEGORIES, error_summary
from evaluation.vocabulary import ERROR

ERRORED_SHARE_LIMIT: Final = 0.02
"""The largest share of a run's episodes that may end in error for it to be ranked: above it
the run waits for its errored episodes to be played again (the site's
``MIRRORBENCH_MAX_ERRORED_SHARE`` replaces it). 2% is 5 of the 264 episodes."""

ERROR_CATEGORY_LABELS: Final[dict[str, str]] = {
    "auth": "Refused the key (HTTP 401/403)",
    "bad_request": "Bad request (other HTTP 4xx)",
    "connection_error": "Connection failed",
    "context_too_long": "Request too large (HTTP 413)",
    "endpoint_refused": "Endpoint refused by this server",
    "not_found": "Unknown model or path (HTTP 404)",
    "rate_limited": "Rate limited (HTTP 429) after every retry",
    "redirect_refused": "Redirect not followed (HTTP 3xx)",
    "server_error": "Server error (HTTP 5xx) after every retry",
    "timeout": "Timed out after every retry",
    "unusable_response": "Unusable response",
    "unknown": "Other error",
}
"""Each error category's name for people, in ``ERROR_CATEGORIES`` order."""

REFUSAL_PREFIX: Final = "no answer: "
"""How a step's ``parse_error`` starts when the provider gave no answer (``agents.py``)."""
REFUSAL_LABELS: Final[dict[str, str]] = {
    "refusal": "Refused to answer",
    "content_filter": "Stopped by a content filter",
    "context_length": "Prompt over the model's context",
}
"""The kinds of answer a provider may refuse with, each counted as a bad response."""


def error_category_label(category: str) -> str:
    """Return an error category's name for people (``Timed out after every retry``)."""
    return ERROR_CATEGORY_LABELS.get(category, category.replace("_", " "))


def refusal_kind(parse_error: str | None) -> str | None:
    """Return the kind of refusal a step's ``parse_error`` records, None for any other step."""
    if not parse_error or not parse_error.startswith(REFUSAL_PREFIX):
        return None
    return parse_error[len(REFUSAL_PREFIX) :].strip() or "refusal"


@dataclass(frozen=True)
class ErrorCounts:
    """How many of a run's finished episodes ended in error, and why.

    Attributes:
        episodes: The finished episodes (completed and errored).
        by_category: Errored episodes per ``ERROR_CATEGORIES`` entry (only those that occur).
        refused_steps: Steps the provider refused to answer, per kind (scored as bad responses).
    """

    episodes: int
    by_category: dict[str, int] = field(default_factory=dict)
    refused_steps: dict[str, int] = field(default_factory=dict)

    @property
    def errored(self) -> int:
        """The errored episodes, all categories together."""
        return sum(self.by_category.values())

    @property
    def share(self) -> float:
        """The errored episodes' share of the finished ones (0 without any)."""
        return self.errored / self.episodes if self.episodes else 0.0

    def over(self, limit: float) -> bool:
        """Whether more than ``limit`` (a share, 0-1) of the episodes ended in error."""
        return self.share > limit

    def categories(self) -> list[tuple[str, str, int]]:
        """Return (category, label, episodes) for each category that occurs, in the
        vocabulary's order."""
        return [
            (c, error_category_label(c), self.by_category[c]) for c in _ordered(self.by_category)
        ]

    def refusals(self) -> list[tuple[str, str, int]]:
        """Return (kind, label, steps) for each kind of refusal that occurs."""
        return [
            (k, REFUSAL_LABELS.get(k, k.replace("_", " ")), n)
            for k, n in sorted(self.refused_steps.items())
        ]

    def as_dict(self) -> dict[str, Any]:
        """Return the counts as JSON (``mirrorbench score --json``, the site's API)."""
        return {
            "episodes": self.episodes,
            "errored": self.errored,
            "errored_share": round(self.share, 4),
            "by_category": {c: self.by_category[c] for c in _ordered(self.by_category)},
            "refused_steps": dict(sorted(self.refused_steps.items())),
        }


def _ordered(categories: Iterable[str]) -> list[str]:
    order = {c: i for i, c in enumerate(ERROR_CATEGORIES)}
    return sorted(categories, key=lambda c: (order.get(c, len(order)), c))


def error_counts(records: Iterable[Mapping[str, Any]]) -> ErrorCounts:
    """Return the error counts of a bundle's episode records.

    An errored record's category is its error text's public summary tag
    (``evaluation.public.error_summary``: ``[timeout]``, ``[server_error HTTP 503]``); a
    text without one is ``unknown``.
    """
    episodes = 0
    by_category: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    for record in records:
        episodes += 1
        if record.get("status") == ERROR:
            summary = error_summary(record.get("error"))
            by_category[summary.category if summary else "unknown"] += 1
        for step in record.get("steps") or ():
            kind = refusal_kind(step.get("parse_error"))
            if kind:
                refused[kind] += 1
    return ErrorCounts(episodes, dict(by_category), dict(refused))
