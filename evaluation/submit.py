"""``mirrorbench submit``: upload a results bundle to a MirrorBench site (``/api/submissions/``).

Plain standard library: a multipart POST with the user's API token. The site verifies the
bundle before storing anything and answers with the submission (its URL) or with every problem
it found; this module turns either into lines to print and an exit status.
"""

from __future__ import annotations

import json
import secrets
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def submit_bundle(
    path: Path, *, url: str, token: str, metadata: Mapping[str, Any], timeout_s: float = TIMEOUT_S
) -> SubmitResult:
    """POST ``path`` with ``metadata`` (model_name, kind, ...) to the site at ``url``.

    Raises:
        SubmitError: The site cannot be reached, or answers with something that is not the
            API's JSON (a wrong URL, a proxy's error page).
    """
    if not url.startswith(("http://", "https://")):
        raise SubmitError(f"--url: expected the site's address, http(s)://..., got {url!r}")
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
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
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
        return SubmitResult(
            True,
            [
                f"verified: {answer.get('episodes')} episodes{partial}{again}",
                f"submission {answer.get('id')}: {answer.get('url')}",
                "it is private until you publish it from that page and a moderator approves it",
            ],
        )
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
