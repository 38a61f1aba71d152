"""A model provider of our own: ``mirrorbench/scripted`` answers each step from a script.

The Inspect counterpart of ``mirrorbench run --agent scripted:FILE``: step ``i`` of every
episode gets the script's response ``i`` (the last one once the script runs out), whatever the
prompt says. No network and no key: for tests, demonstrations and checking that an Inspect run
and a ``mirrorbench run`` of the same answers score the same::

    inspect eval mirrorbench/mirror_test --model mirrorbench/scripted -M script=answers.txt
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageUser,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from evaluation.agents import ScriptError, load_script
from mirrorbench.client import STEP_METADATA

SCRIPTED_MODEL = "scripted"


def step_index(messages: Sequence[ChatMessage]) -> int:
    """Return the episode step a request is for, from its user message's metadata.

    Raises:
        ValueError: The request is not a MirrorBench step (its user message has no step).
    """
    for message in reversed(messages):
        if isinstance(message, ChatMessageUser) and message.metadata:
            step = message.metadata.get(STEP_METADATA, {}).get("step")
            if isinstance(step, int):
                return step
    raise ValueError(
        "mirrorbench/scripted answers MirrorBench steps only (mirrorbench/mirror_test)"
    )


class ScriptedModelAPI(ModelAPI):
    """Answers step ``i`` with response ``i`` of its script (``-M script=FILE``, one response a
    line or a JSON list, as ``--agent scripted:FILE`` reads it; or ``-M responses=[...]``)."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 (Inspect's signature)
        script: str | None = None,
        responses: Sequence[str | int] | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        if model_name != SCRIPTED_MODEL:
            raise ValueError(f"unknown model mirrorbench/{model_name}: use mirrorbench/scripted")
        if (script is None) == (responses is None):
            raise ValueError("mirrorbench/scripted needs -M script=FILE or -M responses=[...]")
        if script is not None:
            self.responses = load_script(Path(script))
        else:
            self.responses = [str(r) for r in responses or ()]
            if not self.responses:
                raise ScriptError("a script needs at least one response")

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        step = step_index(input)
        response = self.responses[min(step, len(self.responses) - 1)]
        return ModelOutput.from_content(model=f"mirrorbench/{self.model_name}", content=response)


@modelapi(name="mirrorbench")
def scripted_provider() -> type[ModelAPI]:
    """The ``mirrorbench`` model provider (its one model: ``scripted``)."""
    return ScriptedModelAPI
