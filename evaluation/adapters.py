"""Model clients for OpenAI-compatible and Anthropic chat APIs, with our own retry policy.

Two adapters implement :class:`~evaluation.messages.ModelClient` on top of the official SDKs:

* :class:`OpenAIChatClient` speaks OpenAI chat completions, which also covers vLLM, SGLang,
  Ollama, LM Studio, OpenRouter, DashScope and Gemini's OpenAI-compatible endpoint through
  ``base_url``.
* :class:`AnthropicClient` speaks Anthropic's messages API.

Contracts shared by both:

* Images are sent as the exact PNG bytes of each :class:`~evaluation.messages.ImagePart`
  (base64 in the JSON body): never decoded, resized or re-encoded. The PNG header is checked
  against the part's declared width and height before anything is sent.
* The API key is read only from the environment variable named by ``api_key_env``. A
  ``base_url`` on loopback with no key set gets the dummy key ``"not-needed"`` (local vLLM,
  Ollama, ...); anywhere else a missing key raises :class:`MissingAPIKeyError` naming the
  variable. The key is never put in a log record, exception, ``repr`` or
  :class:`~evaluation.messages.ModelReply`; any provider error text we pass on is redacted.
* The SDKs' own retries are off (``max_retries=0``); :class:`RetryPolicy` decides instead.
  Connection errors, timeouts, 408, 409, 429 and 5xx are retried with exponential backoff and
  jitter, or after the delay the server asks for in ``retry-after-ms`` / ``Retry-After``
  (seconds or an HTTP date), capped at ``max_delay_s``. Other 4xx fail at once. Either way the
  failure is a :class:`~evaluation.messages.TransportError` carrying the last HTTP status and
  the number of attempts.
* Refusals and prompts too long for the model are answers, not transport failures: they come
  back as a ``ModelReply`` with ``refusal`` set to ``"refusal"``, ``"content_filter"`` or
  ``"context_length"`` (a 400 saying the prompt or context is too long, or a 413 request too
  large; the provider's redacted error is kept in ``request["provider_error"]``).
* When a model rejects one of the generation settings (OpenAI reasoning models refuse
  ``max_tokens`` and non-default ``temperature``; Anthropic API version 2026-10-21, which the
  anthropic 2.x SDK sends, refuses ``temperature`` for every model), the request is resent at
  once without it (``max_tokens`` becomes ``max_completion_tokens``), without charging the
  retry budget, and the client leaves it out from then on. ``ModelReply.request["params"]``
  always holds what was actually sent and ``ModelReply.request["not_sent"]`` says why anything
  was left out.
"""

from __future__ import annotations

import base64
import email.utils
import ipaddress
import logging
import math
import os
import random
import re
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self
from urllib.parse import urlsplit, urlunsplit

import anthropic
import openai

from evaluation.messages import (
    GenerationParams,
    ImagePart,
    Message,
    ModelClient,
    ModelReply,
    TextPart,
    TransportError,
)

__all__ = [
    "PROVIDERS",
    "AnthropicClient",
    "MissingAPIKeyError",
    "OpenAIChatClient",
    "RetryPolicy",
    "make_client",
    "retry_after_s",
]

log = logging.getLogger(__name__)

LOCAL_DUMMY_KEY = "not-needed"
"""The key sent to a loopback server when none is set (local servers ignore it)."""
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
OPENAI_IMAGE_DETAIL = "high"

RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""Retried besides every 5xx."""
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
class RetryPolicy:
    """How often and how patiently to retry transient failures.

    Attributes:
        max_attempts: Requests sent at most, the first included (>= 1).
        base_delay_s: Delay before the first retry; doubled for each further one.
        max_delay_s: Upper bound on any delay, including server-requested ones.
        jitter: Fraction (0 to 1) by which a backoff delay is randomly shortened, so that
            parallel workers do not retry in lockstep. Server-requested delays get none.
    """

    max_attempts: int = 6
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    jitter: float = 0.25

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.base_delay_s < 0 or self.max_delay_s < 0:
            raise ValueError("retry delays must not be negative")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be from 0 to 1, got {self.jitter}")

    def delay_s(self, retry: int, retry_after: float | None = None, rand: float = 0.0) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry).

        Args:
            retry: Which retry this is, counting from 1.
            retry_after: The delay the server asked for, if any; used as is (not jittered),
                negative values count as 0, and it is capped at ``max_delay_s``.
            rand: A number in [0, 1) choosing the jitter: the backoff delay
                ``base_delay_s * 2 ** (retry - 1)`` (capped) is shortened by ``jitter * rand``
                of itself.
        """
        if retry_after is not None and math.isfinite(retry_after):
            return min(max(retry_after, 0.0), self.max_delay_s)
        backoff = min(self.base_delay_s * 2.0 ** min(retry - 1, 64), self.max_delay_s)
        return backoff * (1.0 - self.jitter * rand)


def retry_after_s(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """The delay a response asks for before the next request, in seconds, if any.

    ``retry-after-ms`` (milliseconds, used by OpenAI) wins over ``Retry-After``, which may hold
    seconds or an HTTP date (taken relative to ``now``, default the current time). Unparseable
    values count as absent. Header names are matched case-insensitively.
    """
    if not headers:
        return None
    lowered = {name.lower(): value for name, value in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = lowered.get(name)
        if value is None:
            continue
        try:
            seconds = float(value.strip()) / scale
        except ValueError:
            continue
        if math.isfinite(seconds):
            return seconds
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    return when.timestamp() - (time.time() if now is None else now)


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

    def describe(self) -> str:
        where = f"HTTP {self.status}" if self.status is not None else self.kind
        return f"{where}: {self.message}" if self.message else where


def _is_loopback(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def public_base_url(base_url: str) -> str:
    """``base_url`` without user info, query or fragment, which may hold credentials."""
    parts = urlsplit(base_url)
    netloc = parts.hostname or ""
    if ":" in netloc:
        netloc = f"[{netloc}]"
    if parts.port is not None:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


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
    """The retry loop, key handling and bookkeeping shared by both adapters."""

    provider: str = ""
    _default_base_url: str = ""
    _image_detail: str | None = None

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None,
        api_key_env: str,
        params: GenerationParams,
        retry: RetryPolicy,
        timeout_s: float,
        sleep: Callable[[float], None],
        api_key: str | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty model name")
        self.model = model
        self.params = params
        self.retry = retry
        self.timeout_s = timeout_s
        self.api_key_env = api_key_env
        self._sleep = sleep
        self._base_url = base_url or self._default_base_url
        key, secret = _resolve_api_key(api_key_env, self._base_url, api_key)
        self._secret: str | None = key if secret else None
        self._not_sent: dict[str, str] = {}
        self._sdk = self._make_sdk_client(key)

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
                out, or an unusable response); ``status`` is the last HTTP status (``None``
                after a connection error), ``attempts`` the number of requests sent.
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
                failure = self._failure(err)
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
            raise TransportError(
                f"{self.provider} response for model {self.model!r} is unusable: {err}",
                status=200,
                attempts=attempt,
            ) from None
        reply.latency_s = latency_s
        reply.attempts = attempt
        reply.request = self._request_record(images)
        return reply

    def _fail_or_wait(self, failure: _Failure, attempt: int, budget_used: int) -> None:
        """Raise TransportError if ``failure`` is final, else sleep before the next attempt.

        ``budget_used`` counts the attempts charged to the retry budget (all but those resent
        after changing a rejected setting).
        """
        what = self._redact(failure.describe())
        if not failure.retryable:
            raise TransportError(
                f"{self.provider} request for model {self.model!r} failed with {what} "
                "(not retried)",
                status=failure.status,
                attempts=attempt,
            ) from None
        if budget_used >= self.retry.max_attempts:
            raise TransportError(
                f"{self.provider} request for model {self.model!r} failed after {attempt} "
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

    def _make_sdk_client(self, api_key: str) -> Any:
        raise NotImplementedError

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


class OpenAIChatClient(_ChatAdapter):
    """A model behind an OpenAI-compatible chat completions API.

    Sends the system message as a ``system`` role message, user content as text and
    ``image_url`` parts (``data:image/png;base64,...`` with ``detail: "high"``), ``temperature``,
    ``seed`` (unless ``params.seed`` is None) and ``max_tokens``. ``max_tokens`` rather than
    ``max_completion_tokens`` because every OpenAI-compatible server accepts it; OpenAI models
    that refuse it (the reasoning models) get ``max_completion_tokens`` after their first 400.

    Args:
        model: The model name the server knows, e.g. ``"gpt-4o"`` or ``"qwen2.5-vl:7b"``.
        base_url: The API root including ``/v1``; default OpenAI's. ``OPENAI_BASE_URL`` is
            deliberately ignored so that results say where they came from.
        api_key_env: The environment variable holding the API key.
        params: Generation settings sent with every request.
        retry: When and how long to retry.
        timeout_s: Per-request timeout in seconds.
        sleep: Called with each retry delay in seconds (injectable for tests).
    """

    provider = "openai"
    _default_base_url = OPENAI_DEFAULT_BASE_URL
    _image_detail = OPENAI_IMAGE_DETAIL

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        params: GenerationParams = GenerationParams(),  # noqa: B008 (frozen, so shared safely)
        retry: RetryPolicy = RetryPolicy(),
        timeout_s: float = 120,
        sleep: Callable[[float], None] = time.sleep,
        api_key: str | None = None,
    ) -> None:
        self._tokens_param = "max_tokens"
        super().__init__(
            model,
            base_url=base_url,
            api_key_env=api_key_env,
            params=params,
            retry=retry,
            timeout_s=timeout_s,
            sleep=sleep,
            api_key=api_key,
        )
        if params.seed is None:
            self._not_sent["seed"] = "params.seed is None"

    def _make_sdk_client(self, api_key: str) -> openai.OpenAI:
        return openai.OpenAI(
            api_key=api_key,
            base_url=self._base_url,
            max_retries=0,
            timeout=self.timeout_s,
        )

    def _encode(self, messages: list[Message]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        wire: list[dict[str, Any]] = []
        images: list[dict[str, Any]] = []
        for message in messages:
            if message.role != "user":
                wire.append({"role": message.role, "content": _text_only(message)})
                continue
            content: list[dict[str, Any]] = []
            for part in message.parts:
                if isinstance(part, TextPart):
                    content.append({"type": "text", "text": part.text})
                else:
                    images.append(_image_record(part, self._image_detail))
                    url = f"data:image/png;base64,{_b64(part.png)}"
                    content.append(
                        {"type": "image_url", "image_url": {"url": url, "detail": "high"}}
                    )
            wire.append({"role": "user", "content": content})
        return {"model": self.model, "messages": wire}, images

    def _generation_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {self._tokens_param: self.params.max_tokens}
        if "temperature" not in self._not_sent:
            kwargs["temperature"] = self.params.temperature
        if "seed" not in self._not_sent:
            kwargs["seed"] = self.params.seed
        return kwargs

    def _call(self, kwargs: dict[str, Any]) -> Any:
        return self._sdk.chat.completions.create(**kwargs)

    def _reply(self, response: Any) -> ModelReply:
        choices = getattr(response, "choices", None)
        if not choices:
            raise _UnusableResponse("no choices")
        choice = choices[0]
        message = choice.message
        refusal: str | None = None
        if getattr(message, "refusal", None):
            refusal = "refusal"
        elif choice.finish_reason == "content_filter":
            refusal = "content_filter"
        usage = response.usage
        return ModelReply(
            text=message.content or getattr(message, "refusal", None) or "",
            refusal=refusal,
            model_id=response.model,
            fingerprint=response.system_fingerprint,
            input_tokens=usage.prompt_tokens if usage else None,
            output_tokens=usage.completion_tokens if usage else None,
        )

    def _failure(self, err: Exception) -> _Failure | None:
        kind = type(err).__name__
        if isinstance(err, openai.APIStatusError):
            return _Failure(
                kind=kind,
                status=err.status_code,
                message=_error_message(err.body),
                code=err.code,
                param=err.param,
                headers=_headers(err.response),
            )
        if isinstance(err, openai.APIConnectionError):
            return _Failure(kind=kind, status=None, message=err.message)
        if isinstance(err, openai.OpenAIError):
            return _Failure(kind=kind, status=None, message=kind, transient=False)
        return None

    def _adapt(self, failure: _Failure) -> bool:
        if self._tokens_param == "max_tokens" and failure.rejects("max_tokens"):
            self._tokens_param = "max_completion_tokens"
            self._not_sent["max_tokens"] = (
                "rejected by the model, sent as max_completion_tokens: "
                + self._redact(failure.describe())
            )
            log.warning(
                "openai model %r rejects max_tokens; sending max_completion_tokens from now on",
                self.model,
            )
            return True
        for name in ("temperature", "seed"):
            if name not in self._not_sent and failure.rejects(name):
                self._drop_param(name, failure)
                return True
        return False


class AnthropicClient(_ChatAdapter):
    """A model behind Anthropic's messages API.

    System messages (which must come first) become the ``system`` parameter; user and
    assistant messages carry text blocks and base64 ``image`` blocks (``image/png``). Sends
    ``max_tokens`` and ``temperature``; the API has no seed, which ``request["not_sent"]``
    records. ``temperature`` goes through ``extra_body`` because the anthropic SDK (1.0 on)
    dropped it from ``messages.create``'s signature. The API refuses it on Claude models after
    Opus 4.6 and, under the API version the anthropic 2.x SDK sends (``2026-10-21``,
    recorded as ``request["api_version"]``), on every model; such a client sends its requests
    without it after the first 400. The SDK sends the key as ``Authorization: Bearer``.

    Args:
        model: The model name, e.g. ``"claude-sonnet-4-5"``.
        base_url: The API root (without ``/v1``); default Anthropic's. ``ANTHROPIC_BASE_URL``
            and Anthropic profile files are deliberately ignored.
        api_key_env: The environment variable holding the API key.
        params: Generation settings sent with every request (``seed`` is not sent).
        retry: When and how long to retry.
        timeout_s: Per-request timeout in seconds.
        sleep: Called with each retry delay in seconds (injectable for tests).
    """

    provider = "anthropic"
    _default_base_url = ANTHROPIC_DEFAULT_BASE_URL
    _image_detail = None

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        params: GenerationParams = GenerationParams(),  # noqa: B008 (frozen, so shared safely)
        retry: RetryPolicy = RetryPolicy(),
        timeout_s: float = 120,
        sleep: Callable[[float], None] = time.sleep,
        api_key: str | None = None,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url,
            api_key_env=api_key_env,
            params=params,
            retry=retry,
            timeout_s=timeout_s,
            sleep=sleep,
            api_key=api_key,
        )
        self._not_sent["seed"] = "the Anthropic API has no seed parameter"

    def _make_sdk_client(self, api_key: str) -> anthropic.Anthropic:
        return anthropic.Anthropic(
            api_key=api_key,
            base_url=self._base_url,
            max_retries=0,
            timeout=self.timeout_s,
        )

    def _encode(self, messages: list[Message]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        system: list[str] = []
        wire: list[dict[str, Any]] = []
        images: list[dict[str, Any]] = []
        for message in messages:
            if message.role == "system":
                if wire:
                    raise ValueError("anthropic: system messages must come before all others")
                system.append(_text_only(message))
                continue
            content: list[dict[str, Any]] = []
            for part in message.parts:
                if isinstance(part, TextPart):
                    if part.text:  # the API rejects empty text blocks
                        content.append({"type": "text", "text": part.text})
                else:
                    images.append(_image_record(part, self._image_detail))
                    source = {"type": "base64", "media_type": "image/png", "data": _b64(part.png)}
                    content.append({"type": "image", "source": source})
            wire.append({"role": message.role, "content": content})
        body: dict[str, Any] = {"model": self.model, "messages": wire}
        if system:
            body["system"] = "\n\n".join(system)
        return body, images

    def _generation_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"max_tokens": self.params.max_tokens}
        if "temperature" not in self._not_sent:
            kwargs["temperature"] = self.params.temperature
        return kwargs

    def _extra_record(self) -> dict[str, Any]:
        return {"api_version": self._sdk.default_headers.get("anthropic-version")}

    def _call(self, kwargs: dict[str, Any]) -> Any:
        extra = {name: kwargs.pop(name) for name in ("temperature",) if name in kwargs}
        return self._sdk.messages.create(**kwargs, extra_body=extra or None)

    def _reply(self, response: Any) -> ModelReply:
        text = "".join(
            block.text for block in response.content if getattr(block, "type", "") == "text"
        )
        refusal: str | None = None
        if response.stop_reason == "refusal":
            refusal = "refusal"
        elif response.stop_reason == "model_context_window_exceeded":
            refusal = "context_length"
        usage = response.usage
        input_tokens = None
        if usage is not None:
            input_tokens = (
                usage.input_tokens
                + (usage.cache_creation_input_tokens or 0)
                + (usage.cache_read_input_tokens or 0)
            )
        return ModelReply(
            text=text,
            refusal=refusal,
            model_id=response.model,
            fingerprint=None,
            input_tokens=input_tokens,
            output_tokens=usage.output_tokens if usage is not None else None,
        )

    def _failure(self, err: Exception) -> _Failure | None:
        kind = type(err).__name__
        if isinstance(err, anthropic.APIStatusError):
            return _Failure(
                kind=kind,
                status=err.status_code,
                message=err.api_message or _error_message(err.body),
                code=err.error_code or err.type,
                headers=_headers(err.response),
            )
        if isinstance(err, anthropic.APIConnectionError):
            return _Failure(kind=kind, status=None, message=err.message)
        if isinstance(err, anthropic.AnthropicError):
            return _Failure(kind=kind, status=None, message=kind, transient=False)
        return None

    def _adapt(self, failure: _Failure) -> bool:
        if "temperature" not in self._not_sent and failure.rejects("temperature"):
            self._drop_param("temperature", failure)
            return True
        return False


PROVIDERS: dict[str, type[OpenAIChatClient] | type[AnthropicClient]] = {
    "anthropic": AnthropicClient,
    "openai": OpenAIChatClient,
}
"""Provider prefixes accepted by :func:`make_client`."""


def make_client(
    spec: str,
    *,
    base_url: str | None = None,
    params: GenerationParams = GenerationParams(),  # noqa: B008 (frozen, so shared safely)
    api_key: str | None = None,
    retry: RetryPolicy | None = None,
) -> ModelClient:
    """Build a client from ``"PROVIDER:MODEL"``, e.g. ``"openai:qwen2.5-vl:7b"``.

    Everything after the first ``:`` is the model name, so it may contain ``:`` and ``/``.

    Raises:
        ValueError: ``spec`` has no model, or names an unknown provider (the message lists
            the valid ones).
        MissingAPIKeyError: The provider's key variable is unset and ``base_url`` is not
            on loopback.
    """
    provider, sep, model = spec.partition(":")
    valid = ", ".join(sorted(PROVIDERS))
    if not sep or not model:
        raise ValueError(
            f"model spec {spec!r} must look like PROVIDER:MODEL, PROVIDER one of {valid}"
        )
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} in {spec!r}; valid providers: {valid}")
    return PROVIDERS[provider](
        model,
        base_url=base_url,
        params=params,
        sleep=_sleep,
        api_key=api_key,
        retry=retry or RetryPolicy(),
    )


def _sleep(seconds: float) -> None:
    """Wait between retries; ``time.sleep`` is looked up on each call so tests can stub it."""
    time.sleep(seconds)
