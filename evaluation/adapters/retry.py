"""When and how long the model clients wait before sending a failed request again.

:class:`RetryPolicy` holds the budget and the exponential backoff with jitter;
:func:`retry_after_s` reads the delay a server asks for (``retry-after-ms`` / ``Retry-After``).
Which failures are retried at all is :data:`RETRYABLE_STATUSES` plus every 5xx; the loop that
applies all this is :meth:`evaluation.adapters.base._ChatAdapter.complete`.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["RETRYABLE_STATUSES", "RetryPolicy", "retry_after_s"]

RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""Retried besides every 5xx."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry transient failures.

    Attributes:
        max_attempts: Requests sent at most, the first included (>= 1).
        base_delay_s: Delay before the first retry; doubled for each further one.
        max_delay_s: Upper bound on any delay, including server-requested ones.
        jitter: Fraction (0 to 1) by which a backoff delay is randomly shortened, so that
            parallel workers do not retry in lockstep. Server-requested delays get none.
    """

    max_attempts: int = 6
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    jitter: float = 0.25

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.base_delay_s < 0 or self.max_delay_s < 0:
            raise ValueError("retry delays must not be negative")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be from 0 to 1, got {self.jitter}")

    def delay_s(self, retry: int, retry_after: float | None = None, rand: float = 0.0) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry).

        Args:
            retry: Which retry this is, counting from 1.
            retry_after: The delay the server asked for, if any; used as is (not jittered),
                negative values count as 0, and it is capped at ``max_delay_s``.
            rand: A number in [0, 1) choosing the jitter: the backoff delay
                ``base_delay_s * 2 ** (retry - 1)`` (capped) is shortened by ``jitter * rand``
                of itself.
        """
        if retry_after is not None and math.isfinite(retry_after):
            return min(max(retry_after, 0.0), self.max_delay_s)
        backoff = min(self.base_delay_s * 2.0 ** min(retry - 1, 64), self.max_delay_s)
        return backoff * (1.0 - self.jitter * rand)


def retry_after_s(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """The delay a response asks for before the next request, in seconds, if any.

    ``retry-after-ms`` (milliseconds, used by OpenAI) wins over ``Retry-After``, which may hold
    seconds or an HTTP date (taken relative to ``now``, default the current time). Unparseable
    values count as absent. Header names are matched case-insensitively.
    """
    if not headers:
        return None
    lowered = {name.lower(): value for name, value in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = lowered.get(name)
        if value is None:
            continue
        try:
            seconds = float(value.strip()) / scale
        except ValueError:
            continue
        if math.isfinite(seconds):
            return seconds
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    return when.timestamp() - (time.time() if now is None else now)
