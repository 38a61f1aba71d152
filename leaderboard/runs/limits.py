"""Writes: per-provider request counters shared by every worker (rate limits), and each
user's daily count of requests sent to model endpoints on their behalf (a volume cap)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from evaluation.messages import Message, ModelClient, ModelReply
from leaderboard.models import ProviderWindow
from mirrorbench_site.cache import limits_cache


def _window_take(key: str, window: int, cap: int) -> bool:
    """Count one in ``key``'s row for ``window``, created if needed; False if it holds ``cap``."""
    try:
        with transaction.atomic():
            ProviderWindow.objects.get_or_create(provider=key, window=window)
    except IntegrityError:
        pass  # another worker created it first
    counted = ProviderWindow.objects.filter(provider=key, window=window, count__lt=cap).update(
        count=F("count") + 1
    )
    return counted == 1


def rate_acquire(
    key: str,
    rpm: int,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
) -> None:
    """Wait until a request to ``key`` fits in the current window, then count it."""
    size = settings.MIRRORBENCH_RATE_WINDOW_S
    while True:
        now = clock()
        window = int(now // size)
        if _window_take(key, window, rpm):
            return
        # The window is full: wait for the next one, spread out so workers do not stampede.
        sleep((window + 1) * size - now + random.uniform(0, size / 10))


DAY_S = 86_400


class OutboundQuotaExceeded(Exception):
    """The run's owner has used their requests to model endpoints for today (UTC)."""

    def __init__(self, user_id: int, cap: int, retry_after_s: float) -> None:
        super().__init__(
            f"user {user_id} has sent {cap} model requests today, the most allowed a day "
            f"(MIRRORBENCH_USER_REQUESTS_PER_DAY); the count starts again in {retry_after_s:.0f} s"
        )
        self.retry_after_s = retry_after_s


def _owner_key(user_id: int) -> str:
    return f"owner:{user_id}"


def owner_requests_today(user_id: int, *, clock: Callable[[], float] = time.time) -> int:
    """Requests sent to model endpoints for ``user_id``'s runs since 00:00 UTC."""
    window = int(clock() // DAY_S)
    row = ProviderWindow.objects.filter(provider=_owner_key(user_id), window=window).first()
    return row.count if row else 0


def owner_quota_wait_s(*, clock: Callable[[], float] = time.time) -> float:
    """Seconds until the daily counts start again (00:00 UTC)."""
    now = clock()
    return (int(now // DAY_S) + 1) * DAY_S - now


def owner_request_acquire(
    user_id: int, cap: int, *, clock: Callable[[], float] = time.time
) -> None:
    """Count one request for ``user_id`` today, or raise OutboundQuotaExceeded at ``cap``."""
    now = clock()
    if not _window_take(_owner_key(user_id), int(now // DAY_S), cap):
        raise OutboundQuotaExceeded(user_id, cap, owner_quota_wait_s(clock=lambda: now))


class OwnerQuotaClient:
    """A ModelClient that counts each request against its run owner's daily volume cap.

    Wraps ``agent.client``, so answers from the response cache are not counted (the agent asks
    its client only on a miss). A client's own retries of one request count once.
    """

    def __init__(self, client: ModelClient, user_id: int, cap: int) -> None:
        self.client, self.user_id, self.cap = client, user_id, cap
        self.provider, self.model, self.params = client.provider, client.model, client.params

    def complete(self, messages: list[Message]) -> ModelReply:
        owner_request_acquire(self.user_id, self.cap)
        return self.client.complete(messages)


class RateLimitedClient:
    """A ModelClient that counts each request against its provider's shared rate limit."""

    def __init__(self, client: ModelClient, key: str, rpm: int) -> None:
        self.client, self.key, self.rpm = client, key, rpm
        self.provider, self.model, self.params = client.provider, client.model, client.params

    def complete(self, messages: list[Message]) -> ModelReply:
        rate_acquire(self.key, self.rpm)
        return self.client.complete(messages)


_RATE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def rate_parse(rate: str) -> tuple[int, int]:
    """A rate in DRF's syntax as (count, seconds): ``"3/hour"`` is (3, 3600)."""
    count, _, unit = str(rate).partition("/")
    seconds = _RATE_UNITS.get(unit.strip().lower()[:1])
    if not seconds or not count.strip().isdigit():
        raise ValueError(
            f"expected a rate such as 3/hour (second, minute, hour, day), got {rate!r}"
        )
    return int(count), seconds


def counters_take(
    keys: Sequence[tuple[str, str]], *, clock: Callable[[], float] = time.time
) -> bool:
    """Count one against each ``(key, rate)``, in fixed periods; False if one is over its rate.

    The counts live in the ``limits`` cache, where the throttles keep theirs and other traffic
    cannot evict them (the default cache drops entries when full, which would forgive a
    visitor's renders). The keys before the first one over its rate are counted; those after
    it are not.
    """
    cache = limits_cache
    now = clock()
    for key, rate in keys:
        limit, period = rate_parse(rate)
        name = f"counter:{key}:{int(now // period)}"
        cache.add(name, 0, period + 60)
        try:
            used = cache.incr(name)
        except ValueError:  # expired between add and incr
            cache.set(name, 1, period + 60)
            used = 1
        if used > limit:
            return False
    return True
