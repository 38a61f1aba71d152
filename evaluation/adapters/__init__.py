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
* Every request goes through the outbound policy (:mod:`evaluation.outbound`): the base URL's
  host must resolve to public addresses only, checked at connect time, unless
  ``MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS=1`` or ``allow_private=True`` (a local vLLM or Ollama
  server needs one of them); redirects are never followed (a 3xx fails the request, not retried).
  A refused request is a ``TransportError`` too, not retried.
* Each ``TransportError`` message starts with a public summary tag, ``[CATEGORY HTTP STATUS]``
  (``[rate_limited HTTP 429]``, ``[endpoint_refused]``), before any provider text, so that the
  site can publish the summary and keep the provider's words for the run's owner
  (:func:`evaluation.public.error_summary`).
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

Layout: :mod:`~evaluation.adapters.base` (the shared constructor, key handling and request
loop), :mod:`~evaluation.adapters.retry` (retry policy and ``Retry-After``),
:mod:`~evaluation.adapters.openai` and :mod:`~evaluation.adapters.anthropic` (the two clients,
each loading its SDK), :mod:`~evaluation.adapters.anthropic_models` (Claude models' maximum
output, without the SDK). The provider
table and ``make_client`` are in :mod:`evaluation.registry`. Importing this package loads no
SDK: a client class (and its SDK) loads when it is first named.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from evaluation.adapters.base import LOCAL_DUMMY_KEY as LOCAL_DUMMY_KEY
from evaluation.adapters.base import PNG_SIGNATURE as PNG_SIGNATURE
from evaluation.adapters.base import MissingAPIKeyError as MissingAPIKeyError
from evaluation.adapters.base import png_size as png_size
from evaluation.adapters.retry import RETRYABLE_STATUSES as RETRYABLE_STATUSES
from evaluation.adapters.retry import RetryPolicy as RetryPolicy
from evaluation.adapters.retry import retry_after_s as retry_after_s

if TYPE_CHECKING:
    from evaluation.adapters.anthropic import (
        ANTHROPIC_DEFAULT_BASE_URL as ANTHROPIC_DEFAULT_BASE_URL,
    )
    from evaluation.adapters.anthropic import AnthropicClient as AnthropicClient
    from evaluation.adapters.openai import OPENAI_DEFAULT_BASE_URL as OPENAI_DEFAULT_BASE_URL
    from evaluation.adapters.openai import OPENAI_IMAGE_DETAIL as OPENAI_IMAGE_DETAIL
    from evaluation.adapters.openai import OpenAIChatClient as OpenAIChatClient

_SDK_MODULES = {
    "AnthropicClient": "evaluation.adapters.anthropic",
    "ANTHROPIC_DEFAULT_BASE_URL": "evaluation.adapters.anthropic",
    "OpenAIChatClient": "evaluation.adapters.openai",
    "OPENAI_DEFAULT_BASE_URL": "evaluation.adapters.openai",
    "OPENAI_IMAGE_DETAIL": "evaluation.adapters.openai",
}
"""The names whose module loads a provider's SDK: loaded when first asked for (PEP 562)."""


def __getattr__(name: str) -> Any:
    module = _SDK_MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
