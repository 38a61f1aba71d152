"""The client for Anthropic's messages API.

``import anthropic`` below is an absolute import, so it loads the SDK, not this module.
"""

from __future__ import annotations

import re
from typing import Any

import anthropic

from evaluation.adapters.anthropic_models import (
    ANTHROPIC_FALLBACK_MAX_OUTPUT_TOKENS,
    ANTHROPIC_MAX_OUTPUT_TOKENS,
    anthropic_max_output_tokens,
    anthropic_sent_params,
)
from evaluation.adapters.base import (
    _b64,
    _ChatAdapter,
    _error_message,
    _Failure,
    _headers,
    _image_record,
    _text_only,
    log,
)
from evaluation.messages import GenerationParams, Message, ModelReply, TextPart

__all__ = [
    "ANTHROPIC_DEFAULT_BASE_URL",
    "ANTHROPIC_FALLBACK_MAX_OUTPUT_TOKENS",
    "ANTHROPIC_MAX_OUTPUT_TOKENS",
    "AnthropicClient",
    "anthropic_max_output_tokens",
]

ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"

_MAX_TOKENS_LIMIT = re.compile(r"max_tokens\W*(\d+)\s*>\s*(\d+)")
"""The API's 400 for a ``max_tokens`` above the model's limit: ``max_tokens: 128000 > 64000, which
is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929``."""


class AnthropicClient(_ChatAdapter):
    """A model behind Anthropic's messages API.

    System messages (which must come first) become the ``system`` parameter; user and
    assistant messages carry text blocks and base64 ``image`` blocks (``image/png``). Sends
    ``temperature`` and ``max_tokens``, which the API requires: ``params.max_tokens`` when set,
    else the model's maximum output (:func:`anthropic_max_output_tokens`), so that no answer is
    cut short. A 400 saying ``max_tokens`` is above the model's limit lowers it to that limit,
    once, recorded in ``request["not_sent"]``. The API has no seed: a ``params.seed`` is not
    sent, which ``request["not_sent"]`` records. ``temperature`` goes through ``extra_body``
    because the anthropic SDK (1.0 on) dropped it from ``messages.create``'s signature. The API
    refuses it on Claude models after Opus 4.6 and, under the API version the anthropic 2.x SDK
    sends (``2026-10-21``, recorded as ``request["api_version"]``), on every model; such a
    client sends its requests without it after the first 400. The SDK sends the key as
    ``Authorization: Bearer``.

    The constructor is the base's (:class:`~evaluation.adapters.base._ChatAdapter`): the model
    (e.g. ``"claude-sonnet-4-5"``), the API root without ``/v1`` (default Anthropic's;
    Anthropic profile files are ignored too), the key from ``ANTHROPIC_API_KEY``, and ``params``
    as :meth:`sent_params` resolves them (no seed; ``max_tokens`` None sends the model's
    maximum output).
    """

    provider = "anthropic"
    _default_base_url = ANTHROPIC_DEFAULT_BASE_URL
    _api_key_env = "ANTHROPIC_API_KEY"
    _sdk_class = anthropic.Anthropic
    _image_detail = None

    def _prepare(self, requested: GenerationParams) -> None:
        sent = self.params.max_tokens
        self._max_tokens: int = (
            sent if sent is not None else anthropic_max_output_tokens(self.model)
        )
        if requested.seed is not None:
            self._not_sent["seed"] = "the Anthropic API has no seed parameter"

    @classmethod
    def sent_params(cls, model: str, params: GenerationParams) -> GenerationParams:
        """The settings a client for ``model`` sends given ``params``: ``max_tokens`` resolved
        (the user's, else the model's maximum output) and no seed
        (:func:`~evaluation.adapters.anthropic_models.anthropic_sent_params`)."""
        return anthropic_sent_params(model, params)

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
        kwargs: dict[str, Any] = {"max_tokens": self._max_tokens}
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
            cached_input_tokens=(
                usage.cache_read_input_tokens
                if usage is not None and isinstance(usage.cache_read_input_tokens, int)
                else None
            ),
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
        limit = self._max_tokens_limit(failure)
        if limit is not None and "max_tokens" not in self._not_sent:
            self._not_sent["max_tokens"] = (
                f"{self._max_tokens} is above the model's limit, sent {limit}: "
                + self._redact(failure.describe())
            )
            log.warning(
                "anthropic model %r allows at most %d output tokens, not %d; sending the limit",
                self.model,
                limit,
                self._max_tokens,
            )
            self._max_tokens = limit
            return True
        return False

    def _max_tokens_limit(self, failure: _Failure) -> int | None:
        """The lower ``max_tokens`` a 400 says the model allows, if it says so."""
        if failure.status != 400:
            return None
        found = _MAX_TOKENS_LIMIT.search(failure.message)
        if found is None or int(found.group(1)) != self._max_tokens:
            return None
        limit = int(found.group(2))
        return limit if 0 < limit < self._max_tokens else None
