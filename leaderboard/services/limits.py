"""Writes: per-provider request counters shared by every worker (rate limits)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from evaluation.messages import Message, ModelClient, ModelReply
from leaderboard.models import (
    ProviderWindow,
)


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
        try:
            with transaction.atomic():
                ProviderWindow.objects.get_or_create(provider=key, window=window)
        except IntegrityError:
            pass  # another worker created it first
        counted = ProviderWindow.objects.filter(provider=key, window=window, count__lt=rpm).update(
            count=F("count") + 1
        )
        if counted == 1:
            return
        # The window is full: wait for the next one, spread out so workers do not stampede.
        sleep((window + 1) * size - now + random.uniform(0, size / 10))


class RateLimitedClient:
    """A ModelClient that counts each request against its provider's shared rate limit."""

    def __init__(self, client: ModelClient, key: str, rpm: int) -> None:
        self.client, self.key, self.rpm = client, key, rpm
        self.provider, self.model, self.params = client.provider, client.model, client.params

    def complete(self, messages: list[Message]) -> ModelReply:
        rate_acquire(self.key, self.rpm)
        return self.client.complete(messages)
