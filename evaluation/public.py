"""What of a request to a model API may be shown in public: its base URL without credentials
(:func:`public_base_url`), and a failure's :class:`ErrorSummary`, its HTTP status and a category.

The model clients write a failure's summary at the start of their error text as a tag
(``[rate_limited HTTP 429]``, ``[endpoint_refused]``), before any of the provider's own words, so
that whoever stores the text can store the summary apart (:func:`error_summary`) and publish it,
keeping the provider's words for the run's owner. Apart from the clients
(:mod:`evaluation.adapters`) and the requests themselves (:mod:`evaluation.outbound`): the site's
settings, models and pages and the bundle header read these without loading httpx for them, so
that ``django.setup()`` and the Celery app (beat, ``manage.py shell``) load no httpx. The web,
the workers and the commands that run the system checks still load it, with the evaluate
form's :func:`~evaluation.outbound.url_check`.

Plain Python: no Django import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

__all__ = ["ERROR_CATEGORIES", "ErrorSummary", "error_category", "error_summary", "public_base_url"]


def public_base_url(base_url: str) -> str:
    """``base_url`` without user info, query or fragment, which may hold credentials."""
    parts = urlsplit(base_url)
    netloc = parts.hostname or ""
    if ":" in netloc:
        netloc = f"[{netloc}]"
    if parts.port is not None:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


ERROR_CATEGORIES = (
    "auth",
    "bad_request",
    "connection_error",
    "context_too_long",
    "endpoint_refused",
    "not_found",
    "rate_limited",
    "redirect_refused",
    "server_error",
    "timeout",
    "unusable_response",
    "unknown",
)
"""What kind of failure a request met; public, unlike the provider's error text."""

_TAG = re.compile(
    r"\[(?P<category>" + "|".join(ERROR_CATEGORIES) + r")(?: HTTP (?P<status>[1-5]\d\d))?\]"
)
_LEGACY_STATUS = re.compile(r"\bHTTP (?P<status>[1-5]\d\d)\b")


@dataclass(frozen=True)
class ErrorSummary:
    """The public part of a failed request: its HTTP status, if any, and a category."""

    status: int | None
    category: str

    @property
    def tag(self) -> str:
        """The summary as the clients write it at the start of their error text."""
        status = f" HTTP {self.status}" if self.status is not None else ""
        return f"[{self.category}{status}]"

    @property
    def label(self) -> str:
        """The summary for people: ``"HTTP 429, rate limited"``."""
        what = self.category.replace("_", " ")
        return f"HTTP {self.status}, {what}" if self.status is not None else what


def error_category(status: int | None, *, kind: str = "") -> str:
    """Return the category of a failure with HTTP ``status`` (``None`` without an answer).

    ``kind`` names the error for failures without a status (``EndpointRefused``,
    ``APITimeoutError``, ``APIConnectionError``, ...).
    """
    if status is None:
        if kind == "EndpointRefused":
            return "endpoint_refused"
        if "Timeout" in kind:
            return "timeout"
        if "Connection" in kind:
            return "connection_error"
        return "unknown"
    if 300 <= status < 400:
        return "redirect_refused"
    if status in (401, 403):
        return "auth"
    if status == 429:
        return "rate_limited"
    if status == 408:
        return "timeout"
    if status == 413:
        return "context_too_long"
    if status == 404:
        return "not_found"
    if 400 <= status < 500:
        return "bad_request"
    if status >= 500:
        return "server_error"
    return "unusable_response"


def error_summary(text: str | None) -> ErrorSummary | None:
    """Return the public summary of an error text, ``None`` for no error.

    The first tag in the text wins (the clients write theirs before any provider text). Texts
    written before tags existed are read for their first ``HTTP nnn`` (which the clients wrote
    before the provider's message); anything else is ``unknown``.
    """
    if not text:
        return None
    tag = _TAG.search(text)
    if tag:
        status = tag.group("status")
        return ErrorSummary(int(status) if status else None, tag.group("category"))
    legacy = _LEGACY_STATUS.search(text)
    if legacy:
        status_code = int(legacy.group("status"))
        return ErrorSummary(status_code, error_category(status_code))
    for kind in ("APITimeoutError", "APIConnectionError"):
        if kind in text:
            return ErrorSummary(None, error_category(None, kind=kind))
    return ErrorSummary(None, "unknown")
