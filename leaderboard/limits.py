"""Per-provider rate limits and concurrency caps, shared by every worker through the database.

``MIRRORBENCH_PROVIDER_LIMITS`` holds them as JSON, keyed by provider (``openai``,
``anthropic``) or by ``provider|base URL`` for one endpoint, e.g.
``{"openai": {"rpm": 500, "parallel": 16}, "openai|http://gpu-box:8000/v1": {"parallel": 4}}``.
``rpm`` caps the requests per window (``MIRRORBENCH_RATE_WINDOW_S`` seconds, default 60),
``parallel`` the episodes that call the provider at once. A 429 is still backed off by the
adapter, honouring Retry-After.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from evaluation.messages import Message, ModelClient, ModelReply
from leaderboard.models import Episode, ProviderWindow, Run


@dataclass(frozen=True)
class ProviderLimits:
    rpm: int | None = None
    parallel: int | None = None


def provider_key(agent: str, base_url: str | None) -> str:
    """Return the key a run's limits are looked up and counted under."""
    provider = agent.split(":", 1)[0]
    return f"{provider}|{base_url}" if base_url else provider


def limits_for(agent: str, base_url: str | None) -> ProviderLimits:
    """Return the limits configured for an endpoint (most specific key first)."""
    configured: dict[str, Any] = settings.MIRRORBENCH_PROVIDER_LIMITS
    for key in (provider_key(agent, base_url), agent.split(":", 1)[0]):
        if key in configured:
            value = configured[key]
            return ProviderLimits(rpm=value.get("rpm"), parallel=value.get("parallel"))
    return ProviderLimits()


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


def parallel_slots_free(run: Run) -> bool:
    """Return whether one more episode of ``run`` may call its provider now."""
    spec = run.spec or {}
    limits = limits_for(spec.get("agent", ""), spec.get("base_url"))
    if limits.parallel is None:
        return True
    key = provider_key(spec["agent"], spec.get("base_url"))
    running = [
        provider_key(r["run__spec"].get("agent", ""), r["run__spec"].get("base_url"))
        for r in Episode.objects.filter(
            status=Episode.Status.RUNNING, run__status=Run.Status.RUNNING
        ).values("run__spec")
    ]
    return running.count(key) < limits.parallel
