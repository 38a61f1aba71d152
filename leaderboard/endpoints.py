"""Which model API endpoints a hosted run may call: the outbound policy, asked at submission."""

from __future__ import annotations

from django.conf import settings

from evaluation.outbound import EndpointRefused, url_check

__all__ = ["EndpointRefused", "endpoint_check"]


def endpoint_check(base_url: str) -> None:
    """Refuse, early and with a reason, a base URL the workers would refuse to call.

    The policy of :mod:`evaluation.outbound`: http(s) only, no credentials in the URL, and a
    host whose every address is globally routable (unless MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS=1).
    A hosted run must not become a way to reach the server's own network. The workers apply
    the same rules again when they connect, so a name that changes its answer later is refused
    then.

    Raises:
        EndpointRefused: The URL is refused; the message says why.
    """
    url_check(base_url, allow_private=settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS)
