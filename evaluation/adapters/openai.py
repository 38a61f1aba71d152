"""The client for OpenAI-compatible chat completions APIs (OpenAI, vLLM, SGLang, Ollama, ...).

``import openai`` below is an absolute import, so it loads the SDK, not this module.
"""

from __future__ import annotations

from typing import Any

import openai

from evaluation.adapters.base import (
    _b64,
    _ChatAdapter,
    _error_message,
    _Failure,
    _headers,
    _image_record,
    _text_only,
    _UnusableResponse,
    log,
)
from evaluation.messages import Message, ModelReply, TextPart

__all__ = ["OPENAI_DEFAULT_BASE_URL", "OPENAI_IMAGE_DETAIL", "OpenAIChatClient"]

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENAI_IMAGE_DETAIL = "high"


class OpenAIChatClient(_ChatAdapter):
    """A model behind an OpenAI-compatible chat completions API.

    Sends the system message as a ``system`` role message, user content as text and
    ``image_url`` parts (``data:image/png;base64,...`` with ``detail: "high"``) and
    ``temperature``; by default nothing else (protocol v3): ``max_tokens`` only when
    ``params.max_tokens`` is set, ``seed`` only when ``params.seed`` is. ``max_tokens`` rather
    than ``max_completion_tokens`` because every OpenAI-compatible server accepts it; OpenAI
    models that refuse it (the reasoning models) get ``max_completion_tokens`` after their
    first 400.

    The constructor is the base's (:class:`~evaluation.adapters.base._ChatAdapter`): the model,
    the API root including ``/v1`` (default OpenAI's), the key from ``OPENAI_API_KEY``, and
    ``params`` sent as they are (``max_tokens`` and ``seed`` only when set).
    """

    provider = "openai"
    _default_base_url = OPENAI_DEFAULT_BASE_URL
    _api_key_env = "OPENAI_API_KEY"
    _sdk_class = openai.OpenAI
    _image_detail = OPENAI_IMAGE_DETAIL
    _tokens_param = "max_tokens"
    """What ``max_tokens`` is sent as: ``max_completion_tokens`` once the model refuses it."""

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
        kwargs: dict[str, Any] = {}
        if self.params.max_tokens is not None:
            kwargs[self._tokens_param] = self.params.max_tokens
        if "temperature" not in self._not_sent:
            kwargs["temperature"] = self.params.temperature
        if self.params.seed is not None and "seed" not in self._not_sent:
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
        details = getattr(usage, "prompt_tokens_details", None) if usage else None
        cached_tokens = getattr(details, "cached_tokens", None) if details else None
        return ModelReply(
            text=message.content or getattr(message, "refusal", None) or "",
            refusal=refusal,
            model_id=response.model,
            fingerprint=response.system_fingerprint,
            input_tokens=usage.prompt_tokens if usage else None,
            output_tokens=usage.completion_tokens if usage else None,
            cached_input_tokens=cached_tokens if isinstance(cached_tokens, int) else None,
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
        sent = self._generation_kwargs()
        if "max_tokens" in sent and failure.rejects("max_tokens"):
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
            if name in sent and failure.rejects(name):
                self._drop_param(name, failure)
                return True
        return False
