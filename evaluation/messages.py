"""Provider-neutral chat messages and model replies, shared by prompts, agents and adapters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class TextPart:
    """A piece of text in a message."""

    text: str


@dataclass(frozen=True)
class ImagePart:
    """An image in a message: a lossless PNG, sent at full resolution."""

    png: bytes
    width: int
    height: int
    label: str = ""
    """What the image is, e.g. ``"current view"``; shown as a placeholder when auditing prompts."""


Part = TextPart | ImagePart


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: Role
    parts: tuple[Part, ...]


@dataclass(frozen=True)
class GenerationParams:
    """Generation settings sent with every request (protocol v3: temperature 0 and nothing else).

    ``max_tokens`` None sends no output cap (the Anthropic client, whose API requires one, sends
    the model's maximum output instead: ``evaluation.adapters.anthropic``); ``seed`` None sends no
    seed. The reference implementation sends neither.
    """

    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """What these settings ask to send: ``temperature``, ``max_tokens`` (None: no cap) and
        ``seed`` only when one is set (no key: none sent)."""
        sent: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.seed is not None:
            sent["seed"] = self.seed
        return sent


@dataclass
class ModelReply:
    """What a model answered to one request, with what was measured about the exchange."""

    text: str
    refusal: str | None = None
    """Why the provider gave no usable answer (content filter, context too long), if so."""
    model_id: str | None = None
    """The model id the provider reports having used."""
    fingerprint: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    """Of ``input_tokens``, those the provider reports it served from its prompt cache; None
    where it reports nothing."""
    latency_s: float = 0.0
    attempts: int = 1
    request: dict[str, Any] = field(default_factory=dict)
    """What was actually sent besides the text: image sizes, formats and detail level."""


class TransportError(RuntimeError):
    """The provider could not be reached or kept failing after all retries.

    Never scored as a model answer: the episode is marked ``error`` and excluded.
    """

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


class ModelClient(Protocol):
    """A chat model behind an API."""

    provider: str
    model: str
    params: GenerationParams

    def complete(self, messages: list[Message]) -> ModelReply:
        """Send the conversation and return the reply; raise TransportError when retries run out."""
        ...
