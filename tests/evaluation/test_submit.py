"""``mirrorbench submit`` sends the API token to the origin given and nowhere else."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from evaluation.submit import SubmitError, check_site_url, submit_bundle

TOKEN = "mb_secret_token_value"


@contextmanager
def _server(handler: type[BaseHTTPRequestHandler]) -> Iterator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []

    class Recording(handler):  # type: ignore[misc,valid-type]
        def log_message(self, *args: object) -> None:
            pass

        def _record(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            seen.append({k.lower(): v for k, v in self.headers.items()} | {"path": self.path})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recording)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


class _Accepts(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self._record()  # type: ignore[attr-defined]
        body = json.dumps({"id": 7, "url": "/submissions/7/", "episodes": 3}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    path = tmp_path / "b.jsonl"
    path.write_text('{"type":"header"}\n')
    return path


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_port_is_not_followed_and_the_token_never_arrives_there(
    bundle: Path, code: int
) -> None:
    with _server(_Accepts) as (elsewhere, elsewhere_seen):

        class Redirects(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self._record()  # type: ignore[attr-defined]
                self.send_response(code)
                self.send_header("Location", elsewhere + "/api/submissions/")
                self.send_header("Content-Length", "0")
                self.end_headers()

        with _server(Redirects) as (origin, origin_seen), pytest.raises(SubmitError, match="redir"):
            submit_bundle(bundle, url=origin, token=TOKEN, metadata={"model_name": "M"})
    assert [h["authorization"] for h in origin_seen] == [f"Token {TOKEN}"]
    assert elsewhere_seen == []


def test_the_origin_given_gets_the_upload(bundle: Path) -> None:
    with _server(_Accepts) as (origin, seen):
        result = submit_bundle(bundle, url=origin, token=TOKEN, metadata={"model_name": "M"})
    assert result.ok and "submission 7: /submissions/7/" in result.lines
    assert seen[0]["authorization"] == f"Token {TOKEN}" and seen[0]["path"] == "/api/submissions/"


@pytest.mark.parametrize(
    "url",
    [
        "http://mirrorbench.example",
        "http://10.0.0.5:8000",
        "http://127.0.0.1.nip.io",
        "ftp://mirrorbench.example",
        "https://user:pw@mirrorbench.example",
        "mirrorbench.example",
    ],
)
def test_a_url_that_would_expose_the_token_is_refused_before_anything_is_sent(
    bundle: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a connection was attempted")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    with pytest.raises(SubmitError, match="--url"):
        submit_bundle(bundle, url=url, token=TOKEN, metadata={})


@pytest.mark.parametrize(
    "url",
    [
        "https://mirrorbench.example",
        "http://localhost:8000",
        "http://127.0.0.1:8000/",
        "http://127.5.0.1",
        "http://[::1]:8000",
    ],
)
def test_https_anywhere_and_http_on_loopback_are_accepted(url: str) -> None:
    assert check_site_url(url) == url
