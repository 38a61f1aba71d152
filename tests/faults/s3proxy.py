"""A loopback HTTP proxy in front of an S3-compatible server (moto) that a test can break.

``mode`` is ``"up"`` (every request forwarded), ``"503"`` (every request answered with S3's
``503 Slow Down``, nothing forwarded) or ``"down"`` (the port closed: connections refused).
Each response closes its connection (HTTP/1.0), so ``down`` leaves no client a live socket.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _forward(self) -> None:
        body = self._body()
        proxy = self.server.proxy
        proxy.requests += 1
        if proxy.mode == "503":
            proxy.refused += 1
            self.send_response(503)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(SLOW_DOWN)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(SLOW_DOWN)
            return
        upstream = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        if body or self.command in ("PUT", "POST"):
            headers["Content-Length"] = str(len(body))
        upstream.request(self.command, self.path, body=body or None, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        upstream.close()
        self.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, proxy: S3Proxy, port: int) -> None:
        self.proxy = proxy
        super().__init__(("127.0.0.1", port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


class S3Proxy:
    """Start with ``start()``; ``url`` is its endpoint; set ``mode`` or call ``down()``/``up()``."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream_host, self.upstream_port = parts.hostname or "127.0.0.1", parts.port or 80
        self.mode = "up"
        self.port = 0
        self.requests = 0
        self.refused = 0
        self._server: _Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> S3Proxy:
        self._server = _Server(self, self.port)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def down(self) -> None:
        """Close the port: every new connection is refused."""
        self.mode = "down"
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def up(self) -> None:
        """Forward again (on the same port)."""
        if self._server is None:
            self.start()
        self.mode = "up"

    def stop(self) -> None:
        if self._server is not None:
            self.down()
