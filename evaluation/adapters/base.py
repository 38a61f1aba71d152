"""What both model clients share: key handling, image checks, error classification and the
request loop (:class:`_ChatAdapter`) that the provider adapters fill in.

Every request goes through :func:`evaluation.outbound.http_client` (the outbound policy: public
addresses checked at connect time, no redirects followed, no reply read past
``MIRRORBENCH_MAX_REPLY_BYTES``); each error the clients raise starts with its public summary tag
(``[rate_limited HTTP 429]``, see :mod:`evaluation.outbound`).
"""

from __future__ import annotations

import base64
import ipaddress
import json
import logging
import os
import random
import re
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar
from urllib.parse import urlsplit

import httpx2

from evaluation.adapters.retry import RETRYABLE_STATUSES, RetryPolicy, retry_after_s
from evaluation.messages import (
    GenerationParams,
    ImagePart,
    Message,
    ModelReply,
    TextPart,
    TransportError,
)
from evaluation.outbound import EndpointRefused, ReplyTooLarge, http_client
from evaluation.public import ErrorSummary, error_category, public_base_url

log = logging.getLogger("evaluation.adapters")
"""One logger for the whole package, named as before the split (callers filter on it)."""

LOCAL_DUMMY_KEY = "not-needed"
"""The key sent to a loopback server when none is set (local servers ignore it)."""
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

_CONTEXT_LENGTH_CODES = frozenset({"context_length_exceeded"})
_CONTEXT_LENGTH_PATTERN = re.compile(
    r"maximum context length|context length|context window|prompt is too long"
    r"|prompt too long|input is too long|too many input tokens",
    re.IGNORECASE,
)
_UNSUPPORTED_CODES = frozenset({"unsupported_parameter", "unsupported_value"})
_UNSUPPORTED_PATTERN = re.compile(
    r"unsupported|not supported|does not support|deprecated|unrecognized|not allowed"
    r"|not permitted|extra inputs",
    re.IGNORECASE,
)


class MissingAPIKeyError(RuntimeError):
    """The environment variable that should hold the API key is unset or empty."""


class _UnusableResponse(Exception):
    """A successful HTTP response without an answer in it (e.g. no choices)."""


@dataclass(frozen=True)
class _Failure:
    """What went wrong with one request, in provider-neutral terms."""

    kind: str
    """Short name of the SDK error (``RateLimitError``, ``APITimeoutError``, ...)."""
    status: int | None
    """HTTP status; ``None`` for connection errors and timeouts."""
    message: str
    code: str | None = None
    param: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    transient: bool = True
    """Whether a failure without a status (connection error, timeout) is worth retrying."""

    @property
    def retryable(self) -> bool:
        if self.status is None:
            return self.transient
        return self.status in RETRYABLE_STATUSES or self.status >= 500

    @property
    def context_too_long(self) -> bool:
        """A prompt too large for the model: an answer to record, not a transport error."""
        if self.status == 413:
            return True
        if self.status != 400:
            return False
        return self.code in _CONTEXT_LENGTH_CODES or bool(
            _CONTEXT_LENGTH_PATTERN.search(self.message)
        )

    def rejects(self, param: str) -> bool:
        """Whether this is a 400 refusing the request parameter ``param``."""
        if self.status != 400:
            return False
        named = self.param == param or re.search(rf"\b{re.escape(param)}\b", self.message)
        unsupported = self.code in _UNSUPPORTED_CODES or _UNSUPPORTED_PATTERN.search(self.message)
        return bool(named and unsupported)

    @property
    def summary(self) -> ErrorSummary:
        """The public part: status and category, never the provider's text."""
        return ErrorSummary(self.status, error_category(self.status, kind=self.kind))

    def describe(self) -> str:
        where = f"HTTP {self.status}" if self.status is not None else self.kind
        if self.status is not None and 300 <= self.status < 400:
            location = self.headers.get("location")
            to = f" to {location}" if location else ""
            return f"{where}: a redirect{to}, not followed (model API redirects never are)"
        return f"{where}: {self.message}" if self.message else where


_Error = TypeVar("_Error", bound=BaseException)

_MALFORMED = (AttributeError, IndexError, KeyError, TypeError, ValueError)
"""What reading an answer out of a parsed body raises when the body is JSON of another shape."""


def _cause(err: BaseException, kind: type[_Error]) -> _Error | None:
    """The ``kind`` of error behind ``err``: raised as is, or wrapped by an SDK (the anthropic
    SDK wraps whatever the HTTP client raises in an ``APIConnectionError``)."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _sleep(seconds: float) -> None:
    """Wait between retries; ``time.sleep`` is looked up on each call so tests can stub it."""
    time.sleep(seconds)


def _is_loopback(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _resolve_api_key(
    api_key_env: str, base_url: str, api_key: str | None = None
) -> tuple[str, bool]:
    """The key to send and whether it is a real secret (to redact).

    The command line reads keys from the environment only; a server that holds a user's key
    (encrypted at rest) passes it as ``api_key``.
    """
    key = (api_key or os.environ.get(api_key_env, "")).strip()
    if key:
        return key, True
    if _is_loopback(base_url):
        return LOCAL_DUMMY_KEY, False
    raise MissingAPIKeyError(
        f"the environment variable {api_key_env} is unset or empty; set it to the API key for "
        f"{public_base_url(base_url)} (keys are read from the environment only)"
    )


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk; ``ValueError`` if ``png`` is not a PNG."""
    if len(png) < 24 or not png.startswith(PNG_SIGNATURE) or png[12:16] != b"IHDR":
        raise ValueError("image is not a PNG (bad signature or missing IHDR chunk)")
    width, height = struct.unpack(">II", png[16:24])
    return int(width), int(height)


def _image_record(part: ImagePart, detail: str | None) -> dict[str, Any]:
    """Check ``part`` and describe what is sent for it."""
    width, height = png_size(part.png)
    if (width, height) != (part.width, part.height):
        raise ValueError(
            f"image {part.label or '(unlabelled)'!r} declares {part.width}x{part.height} "
            f"but its PNG is {width}x{height}"
        )
    return {
        "width": width,
        "height": height,
        "format": "png",
        "detail": detail,
        "bytes": len(part.png),
    }


def _b64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")


def _text_only(message: Message) -> str:
    texts: list[str] = []
    for part in message.parts:
        if not isinstance(part, TextPart):
            raise ValueError(f"{message.role} messages may hold text only, not images")
        texts.append(part.text)
    return "".join(texts)


class _ChatAdapter:
    """The retry loop, key handling and bookkeeping shared by both adapters, and their one
    constructor: a provider's adapter sets the class attributes below and fills in the hooks.

    Args:
        model: The model name the provider knows, e.g. ``"gpt-4o"`` or ``"qwen2.5-vl:7b"``.
        base_url: The API root; default the provider's (``_default_base_url``). The SDKs' own
            environment variables (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``) are deliberately
            ignored so that results say where they came from.
        api_key_env: The environment variable holding the API key; default the provider's
            (``_api_key_env``).
        params: Generation settings sent with every request; ``self.params`` holds what is
            sent (:meth:`sent_params`).
        retry: When and how long to retry.
        timeout_s: Per-request timeout in seconds.
        sleep: Called with each retry delay in seconds; default ``time.sleep``, looked up at
            each call (so that tests can stub it).
        api_key: The key itself (a server holding a user's key); default the environment's.
        allow_private: Let requests go to loopback and private addresses (a local model
            server); ``None`` reads ``MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS`` (see
            :mod:`evaluation.outbound`).
    """

    provider: str = ""
    """The provider's name in ``evaluation.registry.PROVIDERS``."""
    _default_base_url: str = ""
    _api_key_env: str = ""
    _sdk_class: Callable[..., Any]
    """The SDK's client class, built with the key, the base URL and the policy's HTTP client."""
    _image_detail: str | None = None

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        params: GenerationParams = GenerationParams(),  # noqa: B008 (frozen, so shared safely)
        retry: RetryPolicy = RetryPolicy(),  # noqa: B008 (frozen, so shared safely)
        timeout_s: float = 120,
        sleep: Callable[[float], None] | None = None,
        api_key: str | None = None,
        allow_private: bool | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty model name")
        self.model = model
        self.params = self.sent_params(model, params)
        self.retry = retry
        self.timeout_s = timeout_s
        self.api_key_env = api_key_env or self._api_key_env
        self._sleep = sleep if sleep is not None else _sleep
        self._base_url = base_url or self._default_base_url
        key, secret = _resolve_api_key(self.api_key_env, self._base_url, api_key)
        self._secret: str | None = key if secret else None
        self._not_sent: dict[str, str] = {}
        self._prepare(params)
        # The one way out: the outbound policy's client (allow_private None reads the env).
        self._sdk = self._sdk_class(
            api_key=key,
            base_url=self._base_url,
            max_retries=0,  # RetryPolicy decides
            timeout=timeout_s,
            http_client=http_client(timeout=timeout_s, allow_private=allow_private),
        )

    @classmethod
    def sent_params(cls, model: str, params: GenerationParams) -> GenerationParams:
        """The settings a client for ``model`` sends given ``params``: by default ``params``."""
        return params

    def _prepare(self, requested: GenerationParams) -> None:
        """Set up what the provider's requests need, given the settings asked for (hook)."""

    @property
    def base_url(self) -> str:
        """The API's base URL, without any credentials it may contain."""
        return public_base_url(self._base_url)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, "
            f"api_key_env={self.api_key_env!r})"
        )

    def close(self) -> None:
        """Close the SDK's connection pool."""
        self._sdk.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def complete(self, messages: list[Message]) -> ModelReply:
        """Send the conversation and return the reply.

        ``ModelReply.attempts`` counts every request sent; ``latency_s`` is the duration of
        the last one (the one answered), without the waits between retries.

        Raises:
            TransportError: The request failed for good (a non-retryable status, retries ran
                out, or an unusable response, never retried: one without an answer, not JSON
                or not decodable, or whose body went past ``MIRRORBENCH_MAX_REPLY_BYTES``
                whatever its status); ``status`` is the last HTTP status (``None`` after a
                connection error or a body that is not JSON), ``attempts`` the number of
                requests sent.
            ValueError: A message cannot be sent (an image that is not the PNG it claims to
                be, an image in a system message, ...).
        """
        body, images = self._encode(messages)
        attempt = 0
        adaptations = 0
        while True:
            attempt += 1
            kwargs = {**body, **self._generation_kwargs()}
            started = time.perf_counter()
            try:
                response = self._call(kwargs)
            except Exception as err:
                unusable = self._unusable_reply(err, attempt)
                if unusable is not None:
                    raise unusable from None
                refused = _cause(err, EndpointRefused)
                failure = (
                    _Failure(
                        kind="EndpointRefused", status=None, message=str(refused), transient=False
                    )
                    if refused is not None
                    else self._failure(err)
                )
                if failure is None:
                    raise
            else:
                return self._finish(response, images, attempt, time.perf_counter() - started)
            if failure.context_too_long:
                reply = self._context_length_reply(failure, images, attempt)
                reply.latency_s = time.perf_counter() - started
                return reply
            if self._adapt(failure):
                adaptations += 1
                continue
            self._fail_or_wait(failure, attempt, attempt - adaptations)

    def _finish(
        self, response: Any, images: list[dict[str, Any]], attempt: int, latency_s: float
    ) -> ModelReply:
        try:
            reply = self._reply(response)
        except _UnusableResponse as err:
            raise self._unusable(str(err), 200, attempt) from None
        except _MALFORMED as err:
            what = f"{type(err).__name__}: {err}"[:200]
            raise self._unusable(
                f"its body is not a {self.provider} answer ({what})", 200, attempt
            ) from None
        reply.latency_s = latency_s
        reply.attempts = attempt
        reply.request = self._request_record(images)
        return reply

    def _unusable_reply(self, err: Exception, attempt: int) -> TransportError | None:
        """The error for a reply that holds no answer however often it is asked for, behind
        ``err``: a body past the cap, one that does not decode as its ``Content-Encoding``
        says, one that is not JSON; ``None`` for other failures."""
        too_large = _cause(err, ReplyTooLarge)
        if too_large is not None:
            return self._unusable(str(too_large), too_large.status, attempt)
        undecodable = _cause(err, httpx2.DecodingError)
        if undecodable is not None:
            why = f"its body does not decode as its Content-Encoding says ({undecodable})"
            return self._unusable(why, None, attempt)
        not_json = _cause(err, json.JSONDecodeError)
        if not_json is not None:
            return self._unusable(f"its body is not JSON ({not_json})", None, attempt)
        return None

    def _unusable(self, why: str, status: int | None, attempt: int) -> TransportError:
        """The error for a response that holds no answer (final: never retried)."""
        tag = ErrorSummary(status, "unusable_response").tag
        return TransportError(
            f"{tag} {self.provider} response for model {self.model!r} is unusable: {why}",
            status=status,
            attempts=attempt,
        )

    def _fail_or_wait(self, failure: _Failure, attempt: int, budget_used: int) -> None:
        """Raise TransportError if ``failure`` is final, else sleep before the next attempt.

        ``budget_used`` counts the attempts charged to the retry budget (all but those resent
        after changing a rejected setting).
        """
        what = self._redact(failure.describe())
        tag = failure.summary.tag  # first, before any provider text: see error_summary
        if not failure.retryable:
            raise TransportError(
                f"{tag} {self.provider} request for model {self.model!r} failed with {what} "
                "(not retried)",
                status=failure.status,
                attempts=attempt,
            ) from None
        if budget_used >= self.retry.max_attempts:
            raise TransportError(
                f"{tag} {self.provider} request for model {self.model!r} failed after {attempt} "
                f"attempts; last error {what}",
                status=failure.status,
                attempts=attempt,
            ) from None
        delay = self.retry.delay_s(budget_used, retry_after_s(failure.headers), random.random())
        log.warning(
            "%s request for model %r failed with %s; retry %d of %d in %.2f s",
            self.provider,
            self.model,
            what,
            budget_used,
            self.retry.max_attempts - 1,
            delay,
        )
        self._sleep(delay)

    def _context_length_reply(
        self, failure: _Failure, images: list[dict[str, Any]], attempt: int
    ) -> ModelReply:
        record = self._request_record(images)
        record["provider_error"] = {
            "status": failure.status,
            "code": failure.code,
            "message": self._redact(failure.message),
        }
        return ModelReply(text="", refusal="context_length", attempts=attempt, request=record)

    def _request_record(self, images: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "images": images,
            "base_url": self.base_url,
            "params": self._generation_kwargs(),
            "not_sent": dict(self._not_sent),
            **self._extra_record(),
        }

    def _extra_record(self) -> dict[str, Any]:
        """Provider-specific facts about what was sent."""
        return {}

    def _redact(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "[REDACTED]")
        return text

    def _drop_param(self, name: str, failure: _Failure) -> None:
        self._not_sent[name] = f"rejected by the model: {self._redact(failure.describe())}"
        log.warning(
            "%s model %r rejects %r; sending requests without it from now on",
            self.provider,
            self.model,
            name,
        )

    # Provider-specific parts.

    def _encode(self, messages: list[Message]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The request body without generation settings, and a record of each image."""
        raise NotImplementedError

    def _generation_kwargs(self) -> dict[str, Any]:
        """The generation settings to send now, as they appear in the JSON body."""
        raise NotImplementedError

    def _call(self, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _reply(self, response: Any) -> ModelReply:
        raise NotImplementedError

    def _failure(self, err: Exception) -> _Failure | None:
        """Describe an SDK error; ``None`` for exceptions that are not the SDK's."""
        raise NotImplementedError

    def _adapt(self, failure: _Failure) -> bool:
        """Change the generation settings the model rejected; False if nothing applies."""
        raise NotImplementedError


def _headers(response: Any) -> dict[str, str]:
    return {name.lower(): value for name, value in response.headers.items()}


def _error_message(body: object, limit: int = 500) -> str:
    """The ``message`` of an error body (a mapping or raw text), shortened to ``limit``."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, Mapping) else None
        text = str(message) if message else ""
    else:
        text = str(body) if body else ""
    return text[:limit]
