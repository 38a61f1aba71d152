"""``mirrorbench submit``: upload a results bundle to a MirrorBench site (``/api/submissions/``).

Plain standard library: a multipart POST with the user's API token. The site verifies the
bundle before storing anything and answers with the submission (its URL) or with every problem
it found; this module turns either into lines to print and an exit status.

The token goes to the origin given and nowhere else: https unless the host is loopback (a
plain-http token could be read on the way), no redirect is followed (a redirect would send
the ``Authorization`` header on to wherever it points), and a loopback address is not sent
through a proxy from the environment.
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.vocabulary import MAIN_CONDITION

TIMEOUT_S = 300.0
"""Uploading and verifying a large bundle takes a while on a busy server."""


class SubmitError(Exception):
    """The upload could not be made or the server's answer could not be read."""


@dataclass(frozen=True)
class SubmitResult:
    ok: bool
    lines: list[str]
    """What to print: the submission's URL and state, or the server's reasons."""


def _multipart(fields: Mapping[str, str], file_field: str, path: Path) -> tuple[bytes, str]:
    boundary = f"mirrorbench-{secrets.token_hex(16)}"
    parts: list[bytes] = []
    for name, value in fields.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
            + value.encode()
            + b"\r\n"
        )
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; '
        f'filename="{path.name}"\r\nContent-Type: application/jsonl\r\n\r\n'.encode()
        + path.read_bytes()
        + b"\r\n"
    )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Answer a redirect with the redirect itself (an HTTPError), never follow it."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> None:
        return None


def _is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.") or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_site_url(url: str) -> str:
    """The site's origin from ``--url``; the token may be sent there.

    Raises:
        SubmitError: Not http(s), no host, credentials in it, or plain http to a host that is
            not loopback (the token would cross the network in clear).
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SubmitError(f"--url: expected the site's address, https://..., got {url!r}")
    if parts.username is not None or parts.password is not None:
        raise SubmitError("--url: leave credentials out of the address; the token is enough")
    if parts.scheme == "http" and not _is_loopback(parts.hostname):
        raise SubmitError(
            f"--url: {url!r} is plain http; the API token is only sent over https "
            "(or to a loopback address: localhost, 127.0.0.1, ::1)"
        )
    return url


def _opener(url: str) -> urllib.request.OpenerDirector:
    handlers: list[urllib.request.BaseHandler] = [_NoRedirects()]
    host = urllib.parse.urlsplit(url).hostname or ""
    if _is_loopback(host):
        handlers.append(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener(*handlers)


def submit_bundle(
    path: Path, *, url: str, token: str, metadata: Mapping[str, Any], timeout_s: float = TIMEOUT_S
) -> SubmitResult:
    """POST ``path`` with ``metadata`` (model_name, kind, ...) to the site at ``url``.

    The token is sent to that origin only: see :func:`check_site_url`; a redirect is
    reported, not followed.

    Raises:
        SubmitError: ``url`` is refused (before anything is sent), the site cannot be reached,
            redirects elsewhere, or answers with something that is not the API's JSON (a wrong
            URL, a proxy's error page).
    """
    check_site_url(url)
    fields = {k: str(v) for k, v in metadata.items() if v not in (None, "")}
    body, content_type = _multipart(fields, "bundle", path)
    endpoint = url.rstrip("/") + "/api/submissions/"
    request = urllib.request.Request(
        endpoint,
        data=body,
        method="POST",
        headers={
            "Content-Type": content_type,
            "Authorization": f"Token {token}",
            "Accept": "application/json",
        },
    )
    try:
        with _opener(url).open(request, timeout=timeout_s) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            where = exc.headers.get("Location", "elsewhere")
            raise SubmitError(
                f"{endpoint} answered HTTP {exc.code}, a redirect to {where}: not followed, so "
                "the token goes nowhere else; give the site's own address as --url"
            ) from None
        status, raw = exc.code, exc.read()
    except (urllib.error.URLError, OSError) as exc:
        raise SubmitError(f"cannot reach {endpoint}: {exc}") from None
    try:
        answer = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise SubmitError(
            f"{endpoint} answered HTTP {status} with something that is not the API's JSON: "
            "is --url the site's address?"
        ) from None
    if status in (200, 201) and isinstance(answer, dict):
        again = " (you had uploaded this exact bundle before)" if answer.get("duplicate") else ""
        partial = " (partial)" if answer.get("partial") else ""
        condition = answer.get("condition")
        control = isinstance(condition, str) and condition != MAIN_CONDITION
        under = f" under the control condition {condition}" if control else ""
        lines = [
            f"verified: {answer.get('episodes')} episodes{under}{partial}{again}",
            f"submission {answer.get('id')}: {answer.get('url')}",
            "it is private until you publish it from that page and a moderator approves it",
        ]
        if control:
            lines.append(
                "a control run is never ranked in the main tables: it shows beside the model's "
                "main run, on its page and the mirror-use view"
            )
        return SubmitResult(True, lines)
    return SubmitResult(False, [f"rejected (HTTP {status}):", *_reasons(answer)])


def _reasons(answer: Any) -> list[str]:
    if isinstance(answer, dict):
        if "detail" in answer and len(answer) == 1:
            return [f"  {answer['detail']}"]
        lines = []
        for field, messages in answer.items():
            for message in messages if isinstance(messages, list) else [messages]:
                lines.append(f"  {field}: {message}")
        return lines
    return [f"  {answer}"]
