"""Which model API endpoints a hosted run may call."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings


class EndpointRefused(ValueError):
    """A base URL the server will not call."""


def endpoint_check(base_url: str) -> None:
    """Refuse URLs that are not http(s), or whose host resolves to a loopback, private,
    link-local or otherwise internal address (unless MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS=1):
    a hosted run must not become a way to reach the server's own network.
    """
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointRefused(f"base_url must be an http(s) URL with a host, got {base_url!r}")
    if settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS:
        return
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or 443, proto=socket.IPPROTO_TCP)
    except socket.gaierror:
        raise EndpointRefused(f"base_url host {parts.hostname!r} does not resolve") from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if (
            address.is_loopback
            or address.is_private
            or address.is_link_local
            or address.is_reserved
            or address.is_multicast
            or address.is_unspecified
        ):
            raise EndpointRefused(
                f"base_url host {parts.hostname!r} resolves to {address}, an internal address; "
                "hosted runs may only call public endpoints"
            )
