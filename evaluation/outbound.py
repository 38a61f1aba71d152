"""The one policy for the requests a worker sends to a model API, and what their failures may say.

Every request the model clients send goes through :func:`http_client`, whose transport applies
the policy at connect time:

* the URL is ``http`` or ``https`` and carries no credentials (``user:password@``);
* the host is resolved, **every** address it resolves to is checked, and the connection goes to
  one of the checked addresses, never to a second lookup's answer (so a name cannot rebind to an
  internal address between the check and the connect). TLS server name, certificate checks and
  the ``Host`` header stay on the original host name;
* only globally routable addresses pass (:func:`address_refusal`): loopback, private, link-local,
  CGNAT, "this network", multicast, reserved, benchmarking and documentation ranges are refused,
  as are IPv6 unique-local, link-local and site-local addresses and the IPv6 forms that embed an
  IPv4 address (IPv4-mapped, IPv4-compatible, 6to4 of a non-global address, Teredo, NAT64 of a
  non-global address). Because resolved addresses are checked, hosts such as ``2130706433`` or
  ``0x7f.1`` (which the resolver turns into 127.0.0.1) are refused too;
* redirects are never followed: a 3xx answer is the request's error;
* environment proxies are ignored (a proxy would connect on the worker's behalf, unchecked);
* a reply is read as it arrives, and never past a cap (:func:`max_reply_bytes_from_env`,
  ``MIRRORBENCH_MAX_REPLY_BYTES``, default 4 MiB): neither its body as sent nor what it inflates
  to (``Content-Encoding`` gzip, deflate, and br or zstd where httpx2 can decode them), whatever
  its status, framing or ``Content-Length``. Past the cap the request is aborted with
  :class:`ReplyTooLarge`, so that a worker holds a few MiB of any reply, not the 200 MiB a
  200 KiB gzip body can inflate to.

The address check, and only it, is switched off by ``allow_private=True`` or, when a caller
passes nothing, by the environment variable ``MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS=1`` (the
variable the site's setting of the same name reads). The command line honours the same variable:
``mirrorbench run`` against a model server on the same machine or network (vLLM, Ollama) needs
``MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS=1``, or a caller that passes ``allow_private=True`` to
:func:`evaluation.adapters.make_client`.

A refused request raises :class:`EndpointRefused`, a reply past the cap :class:`ReplyTooLarge`.
The site checks a hosted run's base URL with :func:`url_check` when it is submitted, for an early
answer; the connect-time check is the one that counts.

What a failed request may say in public (an :class:`~evaluation.public.ErrorSummary`, which
the clients put at the start of their error text as a tag) is :mod:`evaluation.public`, apart
from this module and its HTTP client, so that the settings and the models, which read it, do
not load httpx for it.

Plain Python: no Django import.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import ssl
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING

import httpcore2
import httpx2

if TYPE_CHECKING:
    from httpx2._client import UseClientDefault
    from httpx2._types import AuthTypes

__all__ = [
    "ALLOW_PRIVATE_ENV",
    "DEFAULT_MAX_REPLY_BYTES",
    "MAX_REPLY_ENV",
    "EndpointRefused",
    "ReplyTooLarge",
    "address_refusal",
    "allow_private_from_env",
    "checked_addresses",
    "http_client",
    "max_reply_bytes_from_env",
    "resolve",
    "ssl_context",
    "url_check",
]

ALLOW_PRIVATE_ENV = "MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS"
"""The environment variable that switches the address check off (``1``)."""
MAX_REPLY_ENV = "MIRRORBENCH_MAX_REPLY_BYTES"
"""The environment variable holding the most bytes a reply's body may hold (a whole number)."""
DEFAULT_MAX_REPLY_BYTES = 4 * 2**20
"""4 MiB: room for the longest answer a results bundle holds (262,144 characters, 1.5 MiB even
with every one JSON-escaped as ``\\uXXXX``) and the rest of the reply; a fiftieth of the 200 MiB
a 200 KiB gzip body inflates to."""

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class EndpointRefused(ValueError):
    """A URL or address the policy does not let a request go to."""


class ReplyTooLarge(Exception):
    """A reply whose body went past the cap; the request was aborted, the rest never read.

    Attributes:
        limit: The cap, in bytes.
        status: The reply's HTTP status (the cap holds for error bodies too).
    """

    def __init__(self, where: str, *, limit: int, status: int) -> None:
        super().__init__(
            f"the HTTP {status} reply's body is over the cap of {limit} bytes "
            f"({limit / 2**20:.4g} MiB, {MAX_REPLY_ENV}) {where}; the request was aborted, "
            "the rest unread"
        )
        self.limit = limit
        self.status = status


def allow_private_from_env() -> bool:
    """Return whether ``MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS`` switches the address check off.

    Raises:
        ValueError: The variable holds something other than 1/0, true/false, yes/no, on/off.
    """
    raw = os.environ.get(ALLOW_PRIVATE_ENV)
    if raw is None:
        return False
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(
        f"{ALLOW_PRIVATE_ENV}={raw!r}: expected one of 1/0, true/false, yes/no, on/off"
    )


def _allow_private(allow_private: bool | None) -> bool:
    return allow_private_from_env() if allow_private is None else allow_private


def max_reply_bytes_from_env() -> int:
    """Return the most bytes a reply's body may hold: ``MIRRORBENCH_MAX_REPLY_BYTES``, default
    :data:`DEFAULT_MAX_REPLY_BYTES` (4 MiB).

    Raises:
        ValueError: The variable holds something other than a whole number of bytes above 0.
    """
    raw = os.environ.get(MAX_REPLY_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_REPLY_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(
            f"{MAX_REPLY_ENV}={raw!r}: expected a whole number of bytes above 0 "
            f"(default {DEFAULT_MAX_REPLY_BYTES}, 4 MiB)"
        )
    return value


# Addresses.

_V4_REFUSED = tuple(
    (ipaddress.IPv4Network(network), what)
    for network, what in (
        ("0.0.0.0/8", "in 'this network' (0.0.0.0/8)"),
        ("10.0.0.0/8", "a private address"),
        ("100.64.0.0/10", "in the shared address space of carrier-grade NAT (100.64.0.0/10)"),
        ("127.0.0.0/8", "a loopback address"),
        ("169.254.0.0/16", "a link-local address"),
        ("172.16.0.0/12", "a private address"),
        ("192.0.0.0/24", "an IETF protocol assignment (192.0.0.0/24)"),
        ("192.0.2.0/24", "a documentation address"),
        ("192.88.99.0/24", "a 6to4 relay anycast address"),
        ("192.168.0.0/16", "a private address"),
        ("198.18.0.0/15", "a benchmarking address (198.18.0.0/15)"),
        ("198.51.100.0/24", "a documentation address"),
        ("203.0.113.0/24", "a documentation address"),
        ("224.0.0.0/4", "a multicast address"),
        ("240.0.0.0/4", "a reserved address"),
    )
)
"""Checked before ``is_global``, whose answers vary between Python releases (3.11 calls
224.0.0.1 and 192.0.0.9 global)."""

_V6_REFUSED = tuple(
    (ipaddress.IPv6Network(network), what)
    for network, what in (
        ("::1/128", "a loopback address"),
        ("::/128", "the unspecified address"),
        ("::/96", "an IPv4-compatible address"),
        ("64:ff9b:1::/48", "a local-use NAT64 address (64:ff9b:1::/48)"),
        ("100::/64", "a discard-only address"),
        ("2001::/32", "a Teredo address"),
        ("2001::/23", "an IETF protocol assignment (2001::/23)"),
        ("2001:db8::/32", "a documentation address"),
        ("3fff::/20", "a documentation address"),
        ("fc00::/7", "a unique local address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address"),
        ("ff00::/8", "a multicast address"),
    )
)
_V6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _v4_refusal(address: ipaddress.IPv4Address) -> str | None:
    for network, what in _V4_REFUSED:
        if address in network:
            return what
    if not address.is_global or address.is_multicast or address.is_reserved:
        return "not a globally routable address"
    return None


def _v6_refusal(address: ipaddress.IPv6Address) -> str | None:
    if address.ipv4_mapped is not None:
        return f"an IPv4-mapped address (of {address.ipv4_mapped})"
    if address in _NAT64:
        embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        why = _v4_refusal(embedded)
        return f"a NAT64 address of {embedded}, {why}" if why else None
    if address.sixtofour is not None:
        # Decided by the IPv4 address it carries, as NAT64's: not by ``is_global``, which
        # Python 3.11.2 answers False for all of 2002::/16 and 3.11.7 by the embedded address.
        why = _v4_refusal(address.sixtofour)
        return f"a 6to4 address of {address.sixtofour}, {why}" if why else None
    for network, what in _V6_REFUSED:
        if address in network:
            return what
    if address not in _V6_GLOBAL_UNICAST:
        return "outside the global unicast range 2000::/3"
    if not address.is_global or address.is_multicast or address.is_reserved:
        return "not a globally routable address"
    return None


def address_refusal(address: str | IPAddress) -> str | None:
    """Return why a request may not go to ``address``, or ``None`` if it is globally routable.

    ``address`` is an IPv4 or IPv6 address (a string may carry an IPv6 zone, ``fe80::1%eth0``).
    The reason reads after the address: ``"127.0.0.1 is " + reason``.

    Raises:
        ValueError: ``address`` is not an IP address.
    """
    parsed = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(parsed, ipaddress.IPv4Address):
        return _v4_refusal(parsed)
    return _v6_refusal(parsed)


def resolve(host: str, port: int) -> list[str]:
    """Return every address ``host`` resolves to now, without repeats, in the resolver's order.

    IP literals come back as they are. The one resolver of the policy: tests replace it here.

    Raises:
        OSError: The name does not resolve (``socket.gaierror``).
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def checked_addresses(host: str, port: int, *, allow_private: bool | None = None) -> list[str]:
    """Resolve ``host`` once and return its addresses, all of them checked.

    Raises:
        EndpointRefused: One of the addresses is not globally routable (unless the check is
            off: ``allow_private``, default from the environment).
        OSError: The name does not resolve.
    """
    addresses = resolve(host, port)
    if _allow_private(allow_private):
        return addresses
    for address in addresses:
        why = address_refusal(address)
        if why:
            shown = host if host == address else f"{host!r} resolves to {address}, which"
            raise EndpointRefused(
                f"{shown} is {why}: model APIs are called on public addresses only"
            )
    return addresses


def _url_refusal(scheme: str, host: str, userinfo: str) -> str | None:
    if scheme not in ("http", "https"):
        return f"the scheme is {scheme or 'missing'}, not http or https"
    if not host:
        return "it has no host"
    if userinfo:
        return "it carries credentials (user:password@); send keys as API keys instead"
    return None


def url_check(url: str, *, allow_private: bool | None = None) -> None:
    """Refuse ``url`` now if a request to it would be refused: the check at submission.

    The same rules as at connect time, on the addresses the host resolves to now; a host that
    resolves to something else later is caught when the request is made.

    Raises:
        EndpointRefused: The URL is not http(s), has no host, carries credentials, its host does
            not resolve, or it resolves to an address that is not globally routable (unless
            the check is off: ``allow_private``, default from the environment).
    """
    try:
        parsed = httpx2.URL(url)
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
    except (httpx2.InvalidURL, TypeError, ValueError) as exc:
        raise EndpointRefused(f"base_url {url!r} is not a valid URL: {exc}") from None
    why = _url_refusal(parsed.scheme, parsed.host, parsed.userinfo.decode("ascii", "replace"))
    if why:
        raise EndpointRefused(f"base_url is refused: {why}")
    if not 0 < port < 65536:
        raise EndpointRefused(f"base_url {url!r} is not a valid URL: port {port} out of range")
    try:
        checked_addresses(parsed.host, port, allow_private=allow_private)
    except EndpointRefused as exc:
        raise EndpointRefused(f"base_url host {exc}") from None
    except OSError:
        raise EndpointRefused(f"base_url host {parsed.host!r} does not resolve") from None


# The HTTP client.


class _CheckedBackend(httpcore2.NetworkBackend):
    """Connects to checked addresses only: resolve, check every address, connect to one of them."""

    def __init__(self, *, allow_private: bool) -> None:
        self._allow_private = allow_private
        self._backend = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.NetworkStream:
        try:
            addresses = checked_addresses(host, port, allow_private=self._allow_private)
        except EndpointRefused as exc:
            raise EndpointRefused(
                f"{exc} (set {ALLOW_PRIVATE_ENV}=1 to call a model server on this machine or "
                "its network)"
            ) from None
        except OSError as exc:
            raise httpcore2.ConnectError(f"{host!r} does not resolve: {exc}") from exc
        failure: Exception = httpcore2.ConnectError(f"{host!r} resolves to no address")
        for address in addresses:
            try:
                # The address, not the name: no second lookup can answer differently. TLS
                # still names the host (httpcore2 takes the server name from the origin).
                return self._backend.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = exc
        raise failure

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.NetworkStream:
        raise EndpointRefused("model API requests never go to a Unix socket")

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class _CappedResponse(httpx2.Response):
    """A response that reads at most ``limit`` bytes of its body, as sent and once decoded.

    Everything that reads a body goes through :meth:`iter_bytes` (``read``, ``json``, ``text``,
    the SDKs' ``iter_lines``), and it through :meth:`iter_raw`: the body as sent is counted
    there, what ``Content-Encoding`` inflates it to here. httpx2's decoders hand over at most
    1 MiB per step however small the input (``_decoders.MAX_DECODE_CHUNK_SIZE``), so a body
    stops within a step of the cap. Past it, :class:`ReplyTooLarge` is raised while reading;
    the client closes the response, which drops the connection with the rest unread.
    """

    def __init__(self, response: httpx2.Response, *, limit: int) -> None:
        super().__init__(
            response.status_code,
            headers=response.headers,
            stream=response.stream,
            extensions=response.extensions,
        )
        self._limit = limit

    def _abort(self, where: str) -> ReplyTooLarge:
        """Drop the connection, the rest unread; return the error to raise."""
        self.close()
        return ReplyTooLarge(where, limit=self._limit, status=self.status_code)

    def iter_raw(self, chunk_size: int | None = None) -> Iterator[bytes]:
        declared = self.headers.get("content-length", "").strip()
        if declared.isdigit() and int(declared) > self._limit:
            raise self._abort(f"as announced (Content-Length: {declared})")
        seen = 0
        for chunk in super().iter_raw(chunk_size):
            seen += len(chunk)
            if seen > self._limit:
                raise self._abort("as sent")
            yield chunk

    def iter_bytes(self, chunk_size: int | None = None) -> Iterator[bytes]:
        seen = 0
        for chunk in super().iter_bytes(chunk_size):
            seen += len(chunk)
            if seen > self._limit:
                encoding = self.headers.get("content-encoding", "none")
                raise self._abort(f"once decoded (Content-Encoding: {encoding})")
            yield chunk


def ssl_context() -> ssl.SSLContext:
    """Return the TLS settings of model API requests: httpx2's default (the system's
    certificate authorities, or those ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` name), made once
    per process for each value of those two variables and shared by every client.

    Making one reads and parses the whole bundle of certificate authorities, about 29 ms of
    CPU, and every episode of a model makes a client (and httpx2's transport made a second
    context that its pool, rebuilt here, then dropped). An ``ssl.SSLContext`` is meant to be
    shared: its settings do not change once made, and threads may open connections with it at
    the same time.
    """
    return _ssl_context_for(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@lru_cache(maxsize=8)
def _ssl_context_for(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    # httpx2 reads the two variables itself; they are the cache's key.
    return httpx2.create_ssl_context()


class _CheckedTransport(httpx2.HTTPTransport):
    """httpx2's transport with a connection pool whose connections are made by _CheckedBackend,
    and whose responses are read up to ``max_reply_bytes`` (:class:`_CappedResponse`)."""

    def __init__(self, *, allow_private: bool, limits: httpx2.Limits, max_reply_bytes: int) -> None:
        context = ssl_context()
        super().__init__(verify=context, limits=limits)
        self._max_reply_bytes = max_reply_bytes
        # HTTPTransport takes no network backend: its pool is rebuilt with one.
        self._pool = httpcore2.ConnectionPool(
            ssl_context=context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_CheckedBackend(allow_private=allow_private),
        )

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        why = _url_refusal(url.scheme, url.host, url.userinfo.decode("ascii", "replace"))
        if why:
            raise EndpointRefused(f"a model API request may not go to this URL: {why}")
        return _CappedResponse(super().handle_request(request), limit=self._max_reply_bytes)


class _NoRedirectClient(httpx2.Client):
    """A client that never follows a redirect, whatever a request asks for."""

    def send(
        self,
        request: httpx2.Request,
        *,
        stream: bool = False,
        auth: AuthTypes | UseClientDefault | None = httpx2.USE_CLIENT_DEFAULT,
        follow_redirects: bool | UseClientDefault = httpx2.USE_CLIENT_DEFAULT,
    ) -> httpx2.Response:
        # The SDKs set follow_redirects per request when asked to; a redirect may point anywhere.
        return super().send(request, stream=stream, auth=auth, follow_redirects=False)


def http_client(
    *, timeout: float, allow_private: bool | None = None, max_reply_bytes: int | None = None
) -> httpx2.Client:
    """Return the HTTP client for model API requests, which enforces the policy on each one.

    Hand it to the SDKs as ``http_client=``; closing the SDK client closes it.

    Args:
        timeout: Seconds for each request (the SDKs pass their own per request).
        allow_private: Switch the address check off; ``None`` reads
            ``MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS`` now.
        max_reply_bytes: The most bytes a reply's body may hold, as sent and once decoded;
            ``None`` reads ``MIRRORBENCH_MAX_REPLY_BYTES`` now (default 4 MiB).

    Raises:
        ValueError: One of the environment variables read holds something it cannot mean.
    """
    limit = max_reply_bytes_from_env() if max_reply_bytes is None else max_reply_bytes
    if limit < 1:
        raise ValueError(f"max_reply_bytes must be above 0, not {limit}")
    limits = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)
    return _NoRedirectClient(
        transport=_CheckedTransport(
            allow_private=_allow_private(allow_private), limits=limits, max_reply_bytes=limit
        ),
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
    )
