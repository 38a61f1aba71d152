"""Request bodies past their address's limit are refused (413) before more than that is stored.

The bodies are made on demand as they are read, so a test can send 8 MB (or, to gunicorn,
claim 200 MB) without holding it, and sees how much of it the site read and how much it had
written to the upload folder (``FILE_UPLOAD_TEMP_DIR``) at every read.
"""

from __future__ import annotations

import io
import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.test.client import encode_multipart

from mirrorbench_site.request_limits import READ_CHUNK, UPLOAD_FORM_BYTES
from tests.faults.servers import free_port
from tests.leaderboard.factories import make_bundle

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
BOUNDARY = "mirrorbench-limits"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"
BIG = 8 * 1024 * 1024  # over Django's in-memory upload size: today it goes to disk
BUNDLE_LIMIT = 1024 * 1024  # the tests' MIRRORBENCH_MAX_BUNDLE_BYTES


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


class Body:
    """``head``, then ``size`` bytes of filler, then ``tail``: made as read, never held.

    Records how many bytes were read and the most the upload folder held at any read.
    """

    def __init__(self, head: bytes, size: int, tail: bytes, uploads: Path) -> None:
        self.data = [head, tail]
        self.filler = size
        self.total = len(head) + size + len(tail)
        self.read_bytes = 0
        self.uploads = uploads
        self.most_stored = 0

    def read(self, size: int = -1, /) -> bytes:
        self.most_stored = max(self.most_stored, folder_bytes(self.uploads))
        left = self.total - self.read_bytes
        size = left if size is None or size < 0 else min(size, left)
        out = bytearray()
        head, tail = self.data
        while len(out) < size:
            at = self.read_bytes + len(out)
            if at < len(head):
                out += head[at : at + size - len(out)]
            elif at < len(head) + self.filler:
                out += b"a" * min(size - len(out), len(head) + self.filler - at)
            else:
                start = at - len(head) - self.filler
                out += tail[start : start + size - len(out)]
        self.read_bytes += len(out)
        return bytes(out)

    def readline(self, size: int = -1, /) -> bytes:
        return self.read(size)


def multipart_file(size: int, uploads: Path, field: str = "bundle") -> Body:
    head = (
        f"--{BOUNDARY}\r\n"
        'Content-Disposition: form-data; name="username"\r\n\r\nalice\r\n'
        f"--{BOUNDARY}\r\n"
        f'Content-Disposition: form-data; name="{field}"; filename="results.jsonl"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    return Body(head, size, f"\r\n--{BOUNDARY}--\r\n".encode(), uploads)


def send(client, path: str, body: Body, content_type: str, *, chunked: bool, **extra):
    """POST ``body``: with its Content-Length, or chunked (what gunicorn hands the application
    for ``Transfer-Encoding: chunked``: no length, the decoded bytes)."""
    environ = {"wsgi.input": body, "CONTENT_TYPE": content_type, **extra}
    if chunked:
        environ["HTTP_TRANSFER_ENCODING"] = "chunked"
    else:
        environ["CONTENT_LENGTH"] = str(body.total)
    return client.generic("POST", path, b"", **environ)


@pytest.fixture
def uploads(settings, tmp_path) -> Path:
    folder = tmp_path / "uploads"
    folder.mkdir()
    settings.FILE_UPLOAD_TEMP_DIR = str(folder)
    settings.MIRRORBENCH_MAX_BUNDLE_BYTES = BUNDLE_LIMIT
    settings.MEDIA_ROOT = tmp_path / "media"
    return folder


LIMITS = {
    "/accounts/login/": 64 * 1024,
    "/api/evaluations/": 64 * 1024,
    "/submit/": BUNDLE_LIMIT + UPLOAD_FORM_BYTES,
    "/api/submissions/": BUNDLE_LIMIT + UPLOAD_FORM_BYTES,
}


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize("path", list(LIMITS))
def test_an_oversized_body_is_refused_before_more_than_the_limit_is_stored(
    client, alice, uploads, path, chunked
):
    client.force_login(alice)  # past the sign-in, where today's uploads spool everything
    limit = LIMITS[path]
    if path == "/api/evaluations/":
        body, kind = Body(b"[", BIG, b"]", uploads), "application/json"
    else:
        body, kind = multipart_file(BIG, uploads), MULTIPART
    response = send(client, path, body, kind, chunked=chunked)
    assert response.status_code == 413, response.content[:300]
    text = response.content.decode()
    assert f"at most {limit} bytes" in text and "Nothing was stored" in text
    if path.startswith("/api/"):
        assert response["Content-Type"] == "application/json"
    if chunked:
        assert body.read_bytes <= limit + READ_CHUNK  # read through the limit, no further
    else:
        assert body.read_bytes == 0  # refused by its length: not a byte read
    assert body.most_stored <= limit
    assert folder_bytes(uploads) == 0


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_file_sent_to_the_sign_in_page_is_refused_unstored(client, alice, uploads, chunked):
    body = multipart_file(10_000, uploads, field="password")
    response = send(client, "/accounts/login/", body, MULTIPART, chunked=chunked)
    assert response.status_code == 400
    assert "takes no file uploads" in response.content.decode()
    assert body.most_stored == 0 and folder_bytes(uploads) == 0
    assert "_auth_user_id" not in client.session


def test_the_api_refuses_a_file_part_with_a_400(client, alice, uploads):
    client.force_login(alice)
    body = multipart_file(10_000, uploads, field="api_key")
    response = send(client, "/api/evaluations/", body, MULTIPART, chunked=False)
    assert response.status_code == 400
    assert "takes no file uploads" in response.json()["detail"]


def test_an_upload_takes_one_file_in_its_bundle_field(client, alice, uploads):
    client.force_login(alice)
    body = multipart_file(10_000, uploads, field="other")
    response = send(client, "/api/submissions/", body, MULTIPART, chunked=False)
    assert response.status_code == 400
    assert "one file, in the field 'bundle'" in response.json()["detail"]


def test_a_small_form_post_still_signs_in(client, alice):
    alice.set_password("a-long-password-42")
    alice.save()
    response = client.post(
        "/accounts/login/", {"username": "alice", "password": "a-long-password-42"}
    )
    assert response.status_code == 302 and client.session["_auth_user_id"] == str(alice.pk)


@pytest.fixture(scope="module")
def small_bundle(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("limits") / "small.jsonl"
    return make_bundle(path, "random", scenes="male_0-mano_white-splash", levels=(0,)).read_bytes()


def test_a_bundle_still_uploads_with_a_length_and_chunked(client, alice, uploads, small_bundle):
    client.force_login(alice)
    bundle = io.BytesIO(small_bundle)
    bundle.name = "results.jsonl"
    form = {"model_name": "My VLM 7B", "kind": "open-weights", "bundle": bundle}
    content = encode_multipart(BOUNDARY, form)
    first = send(
        client, "/api/submissions/", Body(content, 0, b"", uploads), MULTIPART, chunked=False
    )
    assert first.status_code == 201, first.content[:500]
    again = send(
        client, "/api/submissions/", Body(content, 0, b"", uploads), MULTIPART, chunked=True
    )
    # The same bytes, read from the chunked body: the earlier submission.
    assert again.status_code == 200, again.content[:500]
    assert again.json()["duplicate"] is True and again.json()["id"] == first.json()["id"]
    assert folder_bytes(uploads) == 0


# Through gunicorn, as `manage.py serve` runs the site: a real socket, real chunked framing.


@pytest.fixture
def gunicorn(tmp_path):
    port, temp = free_port(), tmp_path / "tmp"
    temp.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MIRRORBENCH_"))},
        "MIRRORBENCH_DATA_DIR": str(tmp_path / "data"),
        "TMPDIR": str(temp),  # where Django and the limit spool uploads
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "mirrorbench_site.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--threads",
            "2",
            "--log-level",
            "warning",
            "--no-control-socket",  # as manage.py serve runs it
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert server.poll() is None, server.stderr.read().decode() if server.stderr else ""
            assert time.monotonic() < deadline, "gunicorn did not start"
            time.sleep(0.2)
    yield port, temp
    server.terminate()
    server.wait(timeout=30)


def _exchange(port: int, head: bytes, chunks, *, most: int) -> tuple[bytes, int]:
    """Send ``head`` and then ``chunks`` until the server answers (or ``most`` bytes went);
    return the answer's first bytes and how many body bytes were sent."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(head)
        sent = 0
        for chunk in chunks:
            # A moment for the answer before each chunk: the server answers and closes, and a
            # chunk sent after that close makes it reset the connection, which throws the
            # answer away unread (a busy machine answers later, so it happened there).
            if select.select([connection], [], [], 0.2)[0] or sent >= most:
                break
            try:
                connection.settimeout(2)
                connection.sendall(chunk)
            except (TimeoutError, OSError):
                break  # the server stopped reading
            sent += len(chunk)
        connection.settimeout(5)
        answer = b""
        while b"\r\n0\r\n" not in answer and len(answer) < 65536:
            try:
                data = connection.recv(4096)
            except (TimeoutError, ConnectionResetError):
                break
            if not data:
                break
            answer += data
        return answer, sent


def _request(path: str, content_type: str, framing: str) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n{framing}\r\n"
    ).encode()


def test_gunicorn_refuses_200_mb_by_length_and_chunked_without_storing_it(gunicorn):
    port, temp = gunicorn
    block = b"a" * READ_CHUNK
    # By its length: answered as soon as the head is read.
    answer, _ = _exchange(
        port,
        _request("/accounts/login/", MULTIPART, f"Content-Length: {200 * 1024 * 1024}\r\n"),
        (block for _ in range(16)),
        most=1024 * 1024,
    )
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"accepts at most 65536 bytes" in answer
    # Chunked: answered once the limit is passed, long before 200 MB.
    framed = b"%x\r\n%s\r\n" % (len(block), block)
    answer, sent = _exchange(
        port,
        _request("/api/evaluations/", "application/json", "Transfer-Encoding: chunked\r\n"),
        (framed for _ in range(200 * 16)),
        most=200 * 1024 * 1024,
    )
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b'"detail"' in answer
    assert sent < 32 * 1024 * 1024, f"{sent} bytes sent before the answer"
    assert folder_bytes(temp) == 0
