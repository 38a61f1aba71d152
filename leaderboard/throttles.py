"""The API's scoped throttles, applied to the site's own write views too.

A page that writes (the evaluate form, cancelling a run) counts against the same scope as its
API twin, in the same cache, so the form is no way around the API's rate.

Users count by their account, visitors by their address: ``mirrorbench_site.client_ip``, the
one answer the sign-in lockout uses too, so a visitor cannot pick its identity with a header.
The histories live in the ``limits`` cache, which other traffic cannot evict.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from rest_framework.throttling import ScopedRateThrottle

from mirrorbench_site.cache import limits_cache
from mirrorbench_site.client_ip import client_ip

__all__ = ["ClientScopedRateThrottle", "throttled_post"]


class ClientScopedRateThrottle(ScopedRateThrottle):
    """DRF's scoped throttle, counting visitors by ``client_ip``, in the ``limits`` cache.

    ``allow_request(..., count=False)`` answers without counting the request; ``count()`` then
    counts it (for views that count only what succeeded).
    """

    cache = limits_cache

    def __init__(self) -> None:
        super().__init__()
        self._counting = True

    def get_ident(self, request: Any) -> str:
        return client_ip(request) or "unknown"

    def allow_request(self, request: Any, view: Any, *, count: bool = True) -> bool:
        self._counting = count
        return super().allow_request(request, view)

    def throttle_success(self) -> bool:
        return super().throttle_success() if self._counting else True

    def count(self) -> None:
        """Count the request that ``allow_request(..., count=False)`` let through."""
        if getattr(self, "key", None) is None or not hasattr(self, "now"):
            return  # no rate for the scope: nothing is counted
        self.history = self.cache.get(self.key, [])  # as it is now, not as it was
        self.now = self.timer()
        self._counting = True
        self.throttle_success()


class _Scope:
    """What ScopedRateThrottle reads from a view: its scope."""

    def __init__(self, scope: str) -> None:
        self.throttle_scope = scope


View = Callable[..., HttpResponse]


def throttled_post(
    scope: str,
    *,
    counts: Callable[[HttpResponse], bool] | None = None,
    message: str = "",
) -> Callable[[View], View]:
    """Answer a POST over the rate of ``scope`` (REST_FRAMEWORK's DEFAULT_THROTTLE_RATES) with
    429 and Retry-After; other methods pass.

    With ``counts``, only the POSTs whose response it accepts are counted (a sign-up counts
    once an account exists, not for a form with mistakes). ``message`` says on the 429 page what
    was refused.
    """

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method != "POST":
                return view(request, *args, **kwargs)
            throttle = ClientScopedRateThrottle()
            allowed = throttle.allow_request(request, _Scope(scope), count=counts is None)
            if not allowed:
                wait = math.ceil(throttle.wait() or 1)
                context = {"wait_s": wait, "message": message}
                response = render(request, "leaderboard/throttled.html", context, status=429)
                response["Retry-After"] = str(wait)
                return response
            response = view(request, *args, **kwargs)
            if counts is not None and counts(response):
                throttle.count()
            return response

        return wrapped

    return decorate
