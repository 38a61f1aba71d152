"""Which model API endpoints a hosted run may call: the outbound policy, asked at submission."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings

from evaluation.outbound import ALLOW_PRIVATE_ENV, EndpointRefused, url_check

__all__ = ["EndpointRefused", "endpoint_check", "refusal_text"]


DEFAULT_PORTS = {"http": 80, "https": 443}


def endpoint_check(base_url: str, *, user_chosen: bool = False) -> None:
    """Refuse, early and with a reason, a base URL the workers would refuse to call.

    The policy of :mod:`evaluation.outbound`: http(s) only, no credentials in the URL, and a
    host whose every address is globally routable (unless MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS=1).
    A hosted run must not become a way to reach the server's own network. The workers apply
    the same rules again when they connect, so a name that changes its answer later is refused
    then.

    ``user_chosen``: the URL is chosen by a user who is not staff (a hosted run, a reproduction
    spot-check), so its port must also be one of MIRRORBENCH_ENDPOINT_PORTS (443 and 80 by
    default): the workers must not become a way to probe other services on a public host.
    MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS=1 (development, or a site whose users are trusted with
    its own network, a larger opening than a port) lifts this rule too.

    Raises:
        EndpointRefused: The URL is refused; the message says why.
    """
    url_check(base_url, allow_private=settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS)
    if user_chosen and not settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS:
        _port_check(base_url)


def _port_check(base_url: str) -> None:
    allowed = [int(p) for p in settings.MIRRORBENCH_ENDPOINT_PORTS]
    if not allowed:
        return
    parts = urlsplit(base_url)
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        raise EndpointRefused(f"{base_url!r}: the port is not a number") from None
    if port not in allowed:
        ports = " or ".join(str(p) for p in allowed)
        raise EndpointRefused(
            f"port {port}: model endpoints you choose must use the standard port {ports} "
            "(https://host/... without a port); ask a moderator to run anything else"
        )


PUBLIC_ONLY = "model APIs are called on public addresses only"
"""How :mod:`evaluation.outbound` ends the refusal of a private or loopback address."""


def refusal_text(message: str) -> str:
    """Return a refused base URL's reason as the evaluate form shows it under the field.

    The field's name goes (the form shows it as the label); a refusal that
    MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS lifts (a private or loopback address, a port) says so,
    for whoever runs the site, with the restart that a setting read at start-up needs.
    """
    text = message.removeprefix("base_url is refused: ").removeprefix("base_url ")
    text = text[:1].upper() + text[1:]
    if PUBLIC_ONLY in message or message.startswith("port "):
        text += (
            f". If you run this site: {ALLOW_PRIVATE_ENV}=1 in the environment of the web "
            "server and the workers allows endpoints on loopback and private networks (vLLM, "
            "Ollama on the same machine) and on any port; restart them after setting it."
        )
    return text
