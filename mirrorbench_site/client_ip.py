"""The client's address: the one answer every per-address limit uses.

The sign-in lockout (django-axes, ``AXES_CLIENT_IP_CALLABLE``), the throttles of the pages and
the API (``leaderboard.throttles``) and the sign-up rate all call ``client_ip``. Which address
that is depends on one setting, ``MIRRORBENCH_TRUSTED_PROXIES`` (docs/deploy.md, "HTTPS"):

- unset or 0: the peer's address (``REMOTE_ADDR``); ``X-Forwarded-For`` is ignored, since any
  client can send one;
- a count N: N proxies stand in front of the site, each appending the address it received the
  request from to ``X-Forwarded-For``; the client is the address the outermost one saw, the N-th
  from the right of ``X-Forwarded-For`` followed by the peer. What a client wrote in the header
  itself is further left and never read;
- addresses or networks: the proxies' own addresses; the client is the rightmost address of
  ``X-Forwarded-For`` followed by the peer that is not one of them. A client that reaches the
  site directly is its peer address, whatever it sends.

Addresses are normalised (``2001:DB8:0::5`` is ``2001:db8::5``, ``::ffff:192.0.2.1`` is
``192.0.2.1``; a port written after one is dropped). An entry that is not an address (``unknown``)
is passed over for the next address to its right, which a trusted proxy wrote.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _address(text: str) -> Address | None:
    """Return the address in ``text`` (``[v6]:port`` and ``v4:port`` too), None if none."""
    text = text.strip()
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        text = text[1:end]
    elif text.count(":") == 1:
        text = text.split(":", 1)[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _is_proxy(address: Address, proxies: tuple[Any, ...]) -> bool:
    return any(address in network for network in proxies)


def client_ip(request: Any) -> str | None:
    """Return the address of the client that sent ``request`` (None if the peer has none)."""
    peer = _address(request.META.get("REMOTE_ADDR") or "")
    proxies = settings.MIRRORBENCH_TRUSTED_PROXIES
    if not proxies:
        return str(peer) if peer is not None else None
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR") or ""
    chain = [_address(hop) for hop in forwarded.split(",")] if forwarded.strip() else []
    chain.append(peer)
    if isinstance(proxies, int):
        start = max(0, len(chain) - 1 - proxies)
    else:
        start = len(chain) - 1
        while start > 0 and (hop := chain[start]) is not None and _is_proxy(hop, proxies):
            start -= 1
    for hop in chain[start:]:
        if hop is not None:
            return str(hop)
    return None
