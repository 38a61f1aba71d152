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
    """DRF's scoped throttle, counting visitors by ``client_ip``, in the ``limits`` cache."""

    cache = limits_cache

    def get_ident(self, request: Any) -> str:
        return client_ip(request) or "unknown"


class _Scope:
    """What ScopedRateThrottle reads from a view: its scope."""

    def __init__(self, scope: str) -> None:
        self.throttle_scope = scope


View = Callable[..., HttpResponse]


def throttled_post(scope: str) -> Callable[[View], View]:
    """Answer a POST over the rate of ``scope`` (REST_FRAMEWORK's DEFAULT_THROTTLE_RATES) with
    429 and Retry-After; other methods pass."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method == "POST":
                throttle = ClientScopedRateThrottle()
                if not throttle.allow_request(request, _Scope(scope)):  # type: ignore[arg-type]
                    wait = math.ceil(throttle.wait() or 1)
                    response = render(
                        request, "leaderboard/throttled.html", {"wait_s": wait}, status=429
                    )
                    response["Retry-After"] = str(wait)
                    return response
            return view(request, *args, **kwargs)

        return wrapped

    return decorate
