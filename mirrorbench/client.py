"""The engine's model client inside an Inspect sample: each step's messages go to Inspect's model.

The engine plays an episode in a worker thread (``evaluation.runner.run_episode``, started by
the solver with ``anyio.to_thread``). Its ``ModelAgent`` builds each step's messages and reads
the answer as a ``mirrorbench run`` does; :class:`InspectModelClient` is the ``ModelClient`` it
asks, and it hands each request back to the event loop (``anyio.from_thread.run``), where
Inspect's ``Model.generate`` applies the eval's provider, generation config, retries,
connection limits, sample limits and transcript. The worker thread carries the sample's
context (anyio copies it both ways), so the model events land in the sample's transcript and
its cancel scope (a time limit) reaches the request in flight.
"""

from __future__ import annotations

import base64
import time
from typing import Any, Final, Literal

import anyio.from_thread
from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    Content,
    ContentImage,
    ContentText,
    GenerateConfig,
    Model,
    ModelOutput,
)
from inspect_ai.solver import TaskState
from inspect_ai.util import span

from evaluation.messages import GenerationParams, ImagePart, Message, ModelReply, TextPart

STEP_SPAN = "mirrorbench-step"
"""The type of the transcript span around each step's model call (named ``step <index>``)."""
STEP_METADATA = "mirrorbench"
"""The key of each step message's metadata: scene, level and step index."""
IMAGE_DETAIL: Final[Literal["high"]] = "high"
"""As the engine's OpenAI client sends them (``evaluation.adapters.openai``); providers without a
detail setting ignore it."""


def image_content(image: ImagePart) -> ContentImage:
    """Return an engine image as Inspect image content: the same PNG, as a data URI."""
    data = base64.b64encode(image.png).decode("ascii")
    return ContentImage(image=f"data:image/png;base64,{data}", detail=IMAGE_DETAIL)


def chat_messages(messages: list[Message], metadata: dict[str, Any]) -> list[ChatMessage]:
    """Return the engine's messages for one step as Inspect chat messages, part for part.

    The user message carries ``metadata`` under ``STEP_METADATA`` (it is not sent to the
    model; the scripted provider and the log reader use it).
    """
    chat: list[ChatMessage] = []
    for message in messages:
        parts: list[Content] = [
            ContentText(text=part.text) if isinstance(part, TextPart) else image_content(part)
            for part in message.parts
        ]
        if message.role == "system":
            text = "".join(part.text for part in message.parts if isinstance(part, TextPart))
            chat.append(ChatMessageSystem(content=text))
        elif message.role == "user":
            chat.append(ChatMessageUser(content=parts, metadata={STEP_METADATA: metadata}))
        else:
            raise ValueError(f"a step's prompt holds no {message.role} message")
    return chat


def reply_from_output(output: ModelOutput, latency_s: float) -> ModelReply:
    """Return what the engine reads from Inspect's model output.

    As the engine's own clients do, a content filter or a context that is too long is a reply
    without an answer (a bad response, scored as the paper does), not an error.
    """
    refusal = None
    if output.stop_reason == "content_filter":
        refusal = "content_filter"
    elif output.stop_reason == "model_length" and not output.completion:
        refusal = "context_length"
    usage = output.usage
    return ModelReply(
        text=output.completion,
        refusal=refusal,
        model_id=output.model or None,
        input_tokens=usage.input_tokens if usage else None,
        output_tokens=usage.output_tokens if usage else None,
        latency_s=output.time if output.time is not None else latency_s,
    )


class InspectModelClient:
    """A ``ModelClient`` for one episode that asks the sample's Inspect model.

    Call ``complete`` from the engine's worker thread only (one started by
    ``anyio.to_thread.run_sync``); each call is one step, in order. The step's messages and the
    model's answer are appended to the sample's messages, so the sample shows the episode.
    """

    provider = "inspect"

    def __init__(self, model: Model, state: TaskState, *, scene_id: str, level: int) -> None:
        self._model = model
        self._state = state
        self._scene_id = scene_id
        self._level = level
        self._steps = 0
        self.model = str(model)
        self.params = GenerationParams()

    def complete(self, messages: list[Message]) -> ModelReply:
        """Return the model's reply to one step's messages (Inspect retries and limits apply)."""
        return anyio.from_thread.run(self._generate, messages)

    async def _generate(self, messages: list[Message]) -> ModelReply:
        step = self._steps
        self._steps += 1
        chat = chat_messages(
            messages, {"scene": self._scene_id, "level": self._level, "step": step}
        )
        if step == 0:  # the system message is the same at every step: shown once
            self._state.messages.extend(m for m in chat if isinstance(m, ChatMessageSystem))
        async with span(f"step {step}", type=STEP_SPAN):
            started = time.perf_counter()
            # No config of our own: the task's (temperature 0) merged with the eval's applies.
            output = await self._model.generate(chat, config=GenerateConfig())
            latency_s = time.perf_counter() - started
        self._state.messages.extend([m for m in chat if isinstance(m, ChatMessageUser)])
        self._state.messages.append(output.message)
        return reply_from_output(output, latency_s)
