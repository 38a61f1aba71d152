"""Loopback stand-ins for the OpenAI and Anthropic HTTP APIs, for testing the real SDKs.

Each fake is a threaded ``http.server`` bound to ``127.0.0.1`` on a free port. It speaks just
enough of its provider's wire format for the unmodified SDK to parse the answers:

* :class:`FakeOpenAI` answers ``POST /v1/chat/completions`` with a ``chat.completion`` object;
  its :attr:`~FakeProvider.base_url` ends in ``/v1`` as OpenAI-compatible servers' do.
* :class:`FakeAnthropic` answers ``POST /v1/messages`` with a ``message`` object.

Every request is recorded (method, path, lower-cased headers, decoded JSON body). Answers can be
scripted with :meth:`FakeProvider.enqueue`: each request takes the next :class:`Scripted` answer
(a status code, headers such as ``Retry-After``, a body, a delay, or a dropped connection); once
the queue is empty every request gets the provider's default successful answer;
:func:`redirect` scripts a 3xx pointing elsewhere. A fake made with an ``ssl_context`` speaks
HTTPS (see :func:`self_signed`).

:class:`BombServer` is a hostile endpoint instead: it answers every request with one
:class:`RawReply` written as is, whatever its framing says (:func:`gzip_bomb`,
:func:`deflate_bomb`, :func:`endless` bodies, chunked or under a lying ``Content-Length``).
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

OPENAI_MODEL_ID = "fake-vlm-2025-06-01"
"""The model id the fake OpenAI server reports (deliberately not the requested name)."""
OPENAI_FINGERPRINT = "fp_fake0123"
ANTHROPIC_MODEL_ID = "claude-fake-2025-06-01"
DEFAULT_TEXT = "The mark is on my left cheek.\nChoice: [2]"


@dataclass(frozen=True)
class Scripted:
    """One scripted answer.

    Attributes:
        status: HTTP status code.
        body: A mapping is sent as JSON, ``str``/``bytes`` as they are; ``None`` sends the
            provider's default successful body for ``status`` 200 and an empty body otherwise.
        headers: Extra response headers, e.g. ``{"Retry-After": "2"}``.
        delay_s: Seconds to wait before answering (to make a client time out).
        drop: Close the connection without answering (a connection error for the client).
    """

    status: int = 200
    body: Mapping[str, Any] | str | bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False


@dataclass(frozen=True)
class RecordedRequest:
    """A request as the fake server received it."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The decoded JSON body, or ``None`` when it was not JSON."""


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client hangs up (on a delayed answer, or mid-body as a capped
        client does)."""


class _Server(_QuietServer):
    def __init__(self, fake: FakeProvider) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)
        if fake.ssl_context is not None:
            self.socket = fake.ssl_context.wrap_socket(self.socket, server_side=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else each body waits ~40 ms for the client's delayed ACK
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Never print requests (they carry API keys)."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = RecordedRequest("POST", self.path, headers, body)
        scripted = self.server.fake._record(request)
        if scripted.delay_s:
            time.sleep(scripted.delay_s)
        if scripted.drop:
            self.close_connection = True
            return
        if self.path != self.server.fake.path:
            self._send(
                404, {}, {"error": {"message": f"no route {self.path}", "type": "not_found"}}
            )
            return
        payload = scripted.body
        if payload is None and scripted.status == 200:
            payload = self.server.fake.success_body(body if isinstance(body, dict) else {})
        self._send(scripted.status, scripted.headers, payload)

    def _send(
        self,
        status: int,
        headers: Mapping[str, str],
        payload: Mapping[str, Any] | str | bytes | None,
    ) -> None:
        if isinstance(payload, Mapping):
            data = json.dumps(payload).encode()
            content_type = "application/json"
        elif isinstance(payload, str):
            data = payload.encode()
            content_type = "text/plain"
        else:
            data = payload or b""
            content_type = "application/octet-stream"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class _Loopback:
    """A server on 127.0.0.1 serving in a background thread; use as a context manager or call
    start() and stop(). Subclasses make the server (:meth:`_make_server`)."""

    base_path = ""
    """What the SDK's base URL adds after ``http://127.0.0.1:PORT``."""
    ssl_context: ssl.SSLContext | None = None
    """Set: the server speaks HTTPS."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server: _QuietServer | None = None
        self._thread: threading.Thread | None = None

    def _make_server(self) -> _QuietServer:
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        """The URL to give the SDK as ``base_url``."""
        if self._server is None:
            raise RuntimeError(f"the {type(self).__name__} server is not running")
        host, port = self._server.server_address[:2]
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://{host!s}:{port}{self.base_path}"

    @property
    def port(self) -> int:
        """The port the server listens on (127.0.0.1)."""
        if self._server is None:
            raise RuntimeError(f"the {type(self).__name__} server is not running")
        return int(self._server.server_address[1])

    def start(self) -> Self:
        """Start serving in a background thread."""
        self._server = self._make_server()
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class FakeProvider(_Loopback):
    """A scripted loopback server; use as a context manager or call start() and stop()."""

    path = "/"
    """The one path answered; others get 404."""

    def __init__(self, *, ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__()
        self.ssl_context = ssl_context
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Scripted] = deque()

    def _make_server(self) -> _Server:
        return _Server(self)

    def enqueue(self, *answers: Scripted) -> None:
        """Queue answers for the next requests, in order."""
        with self._lock:
            self._queue.extend(answers)

    def _record(self, request: RecordedRequest) -> Scripted:
        with self._lock:
            self.requests.append(request)
            return self._queue.popleft() if self._queue else Scripted()

    def success_body(self, request: dict[str, Any]) -> dict[str, Any]:
        """The default successful answer to ``request``."""
        raise NotImplementedError


class FakeOpenAI(FakeProvider):
    """An OpenAI-compatible chat completions server."""

    path = "/v1/chat/completions"
    base_path = "/v1"

    def success_body(self, request: dict[str, Any]) -> dict[str, Any]:
        return openai_completion()


class FakeAnthropic(FakeProvider):
    """An Anthropic messages server."""

    path = "/v1/messages"

    def success_body(self, request: dict[str, Any]) -> dict[str, Any]:
        return anthropic_message()


def redirect(location: str, status: int = 307) -> Scripted:
    """An answer that sends the client to ``location`` (307 keeps the method and body)."""
    return Scripted(status, b"", {"Location": location})


def self_signed(host: str, folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A certificate for ``host`` (its own issuer) and a server context presenting it.

    Returns the certificate file (to trust, e.g. as ``SSL_CERT_FILE``) and the context.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    try:
        alt: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        alt = x509.DNSName(host)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file = folder / f"{host}.pem"
    key_file = folder / f"{host}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return cert_file, context


def openai_completion(
    content: str | None = DEFAULT_TEXT,
    *,
    finish_reason: str = "stop",
    refusal: str | None = None,
    model: str = OPENAI_MODEL_ID,
    fingerprint: str | None = OPENAI_FINGERPRINT,
    prompt_tokens: int = 1234,
    completion_tokens: int = 56,
) -> dict[str, Any]:
    """A ``chat.completion`` response body."""
    return {
        "id": "chatcmpl-fake-1",
        "object": "chat.completion",
        "created": 1_750_000_000,
        "model": model,
        "system_fingerprint": fingerprint,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
                "finish_reason": finish_reason,
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def openai_error(
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
) -> dict[str, Any]:
    """An OpenAI error response body."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def anthropic_message(
    text: str = DEFAULT_TEXT,
    *,
    stop_reason: str = "end_turn",
    model: str = ANTHROPIC_MODEL_ID,
    input_tokens: int = 1500,
    output_tokens: int = 60,
) -> dict[str, Any]:
    """A ``message`` response body."""
    return {
        "id": "msg_fake_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}] if text else [],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def anthropic_error(message: str, *, type: str = "invalid_request_error") -> dict[str, Any]:
    """An Anthropic error response body."""
    return {"type": "error", "error": {"type": type, "message": message}}


# Hostile replies: bodies that inflate far past their size, or never end.


def gzip_bomb(inflated: int = 200 * 2**20) -> bytes:
    """A gzip body of about ``inflated / 1000`` bytes that inflates to ``inflated`` zero bytes."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    return _deflate_zeros(compressor, inflated)


def deflate_bomb(inflated: int = 200 * 2**20) -> bytes:
    """The same as :func:`gzip_bomb` as a ``deflate`` body (a zlib stream)."""
    return _deflate_zeros(zlib.compressobj(9), inflated)


def _deflate_zeros(compressor: Any, inflated: int) -> bytes:
    block = bytes(2**20)
    parts = [
        compressor.compress(block[: min(len(block), inflated - done)])
        for done in range(0, inflated, len(block))
    ]
    parts.append(compressor.flush())
    return b"".join(parts)


def endless(piece: bytes = b"x" * 65536, total: int = 256 * 2**20) -> Callable[[], Iterator[bytes]]:
    """Body pieces that go on for ``total`` bytes (256 MiB: far past any reply cap)."""

    def pieces() -> Iterator[bytes]:
        for _ in range(total // len(piece)):
            yield piece

    return pieces


@dataclass(frozen=True)
class RawReply:
    """What :class:`BombServer` answers every request with, written as is.

    Attributes:
        status: HTTP status code.
        headers: Response headers (``Content-Encoding``, ``Content-Type``, ...).
        body: The body, or a function returning its pieces (written as they come).
        chunked: Send the body with ``Transfer-Encoding: chunked`` and no ``Content-Length``.
        content_length: The ``Content-Length`` to announce instead of the body's real size (a
            lie); ignored when ``chunked``.
    """

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | Callable[[], Iterator[bytes]] = b""
    chunked: bool = False
    content_length: int | None = None


class BombServer(_Loopback):
    """A loopback server answering every ``POST`` with one :class:`RawReply`, whatever the path.

    ``requests`` counts the requests; ``sent`` is the body bytes written to each, and ``hung_up``
    how many of them the client closed before the body's end.
    """

    def __init__(self, reply: RawReply) -> None:
        super().__init__()
        self.reply = reply
        self.requests = 0
        self.sent: list[int] = []
        self.hung_up = 0

    def _make_server(self) -> _QuietServer:
        """The base URL is ``http://127.0.0.1:PORT``: an OpenAI client adds ``/v1``, Anthropic's
        not."""
        bomb = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Never print requests."""

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with bomb._lock:
                    bomb.requests += 1
                sent, hung_up = bomb._write(self)
                with bomb._lock:
                    bomb.sent.append(sent)
                    bomb.hung_up += hung_up
                self.close_connection = True

        return _QuietServer(("127.0.0.1", 0), Handler)

    def _write(self, handler: BaseHTTPRequestHandler) -> tuple[int, bool]:
        reply = self.reply
        pieces = reply.body() if callable(reply.body) else iter((reply.body,))
        handler.send_response(reply.status)
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        if reply.chunked:
            handler.send_header("Transfer-Encoding", "chunked")
        elif reply.content_length is not None:
            handler.send_header("Content-Length", str(reply.content_length))
        elif isinstance(reply.body, bytes):
            handler.send_header("Content-Length", str(len(reply.body)))
        handler.end_headers()
        sent = 0
        try:
            for piece in pieces:
                if reply.chunked:
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                else:
                    handler.wfile.write(piece)
                sent += len(piece)
            if reply.chunked:
                handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        except OSError:  # the client hung up: what a capped client does
            return sent, True
        return sent, False

    def wait_answered(self, count: int = 1, timeout_s: float = 30.0) -> None:
        """Wait until ``count`` answers are written or given up (``sent`` has them)."""
        deadline = time.monotonic() + timeout_s
        while len(self.sent) < count and time.monotonic() < deadline:
            time.sleep(0.01)
