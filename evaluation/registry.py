"""The agent registry: what an ``--agent`` spec names, how to describe it and how to build it.

One place for the agents the engine knows, used alike by ``mirrorbench run``, the site's hosted
runs and its bundle exports. Describing an agent (the bundle header's ``agent``, ``model`` and
``generation`` fields) needs no client and no API key; only :func:`make_agent_factory` builds
clients, and it imports the provider SDKs only then.

Specs: ``random``, ``oracle``, ``mirror-confused``, ``scripted:FILE``, ``openai:MODEL``,
``anthropic:MODEL`` (everything after the first ``:`` is the model name).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.agents import (
    Agent,
    AgentFactory,
    MirrorConfusedAgent,
    ModelAgent,
    OracleAgent,
    RandomAgent,
    ScriptedAgent,
    load_script,
)
from evaluation.cache import ResponseCache, StepCache
from evaluation.messages import GenerationParams, ModelClient

BASELINES = ("random", "oracle", "mirror-confused")
PROVIDERS: dict[str, str] = {
    "openai": "OpenAI-compatible (OpenAI, vLLM, OpenRouter, ...)",
    "anthropic": "Anthropic",
}
"""Provider prefixes of model agents, with a label for forms."""


class AgentSpecError(ValueError):
    """An agent spec that names no agent."""


@dataclass(frozen=True)
class AgentSpec:
    """A parsed agent spec."""

    spec: str
    kind: str
    """``baseline``, ``scripted`` or ``model``."""
    provider: str = ""
    model: str = ""
    script: str = ""

    @property
    def is_model(self) -> bool:
        return self.kind == "model"


def parse_agent_spec(spec: str) -> AgentSpec:
    """Return what ``spec`` names; raise AgentSpecError (listing valid specs) if nothing."""
    if spec in BASELINES:
        return AgentSpec(spec, "baseline")
    prefix, _, rest = spec.partition(":")
    if prefix == "scripted" and rest:
        return AgentSpec(spec, "scripted", script=rest)
    if prefix in PROVIDERS and rest:
        return AgentSpec(spec, "model", provider=prefix, model=rest)
    raise AgentSpecError(
        f"unknown agent {spec!r}; expected one of {', '.join(BASELINES)}, scripted:FILE, "
        + " or ".join(f"{p}:MODEL" for p in PROVIDERS)
    )


def agent_spec_check(spec: str) -> None:
    """Raise AgentSpecError unless ``spec`` names an agent (no client or key is needed)."""
    parse_agent_spec(spec)


def describe_agent(spec: str, *, seed: int = 0, image_history: int = 1) -> dict[str, Any]:
    """Return the bundle header's ``agent`` field for ``spec``, without building anything."""
    parsed = parse_agent_spec(spec)
    if parsed.spec == "random":
        return {"name": "random", "kind": "baseline", "seed": seed}
    if parsed.kind == "baseline":
        return {"name": parsed.spec, "kind": "baseline"}
    if parsed.kind == "scripted":
        return {"name": "scripted", "kind": "baseline", "source": Path(parsed.script).name}
    return {
        "name": parsed.spec,
        "kind": "model",
        "provider": parsed.provider,
        "model": parsed.model,
        "image_history": image_history,
    }


def header_extras(
    spec: str, *, base_url: str | None = None, params: GenerationParams | None = None
) -> dict[str, Any]:
    """Return the bundle header's ``model`` and ``generation`` fields (null for baselines).

    ``generation`` is what the provider's client sends given ``params`` (default
    ``GenerationParams()``): ``{"temperature": 0.0, "max_tokens": null}`` for an OpenAI-compatible
    model (null: no cap), the model's maximum output as ``max_tokens`` for an Anthropic one; a
    ``seed`` only when one is sent. A setting the model turns out to reject is recorded per
    step (``request["params"]`` and ``request["not_sent"]``), not here.
    """
    parsed = parse_agent_spec(spec)
    if not parsed.is_model:
        return {"model": None, "generation": None}
    from evaluation.adapters import CLIENT_CLASSES, public_base_url

    client_class = CLIENT_CLASSES[parsed.provider]
    sent = client_class.sent_params(parsed.model, params or GenerationParams())

    return {
        "model": {
            "provider": parsed.provider,
            "model": parsed.model,
            "base_url": public_base_url(base_url) if base_url else None,
        },
        "generation": sent.as_dict(),
    }


def make_agent_factory(
    spec: str,
    *,
    seed: int = 0,
    base_url: str | None = None,
    image_history: int = 1,
    params: GenerationParams | None = None,
    cache: ResponseCache | None = None,
    cache_scope: str = "",
    api_key: str | None = None,
    retry: Any = None,
    allow_private: bool | None = None,
) -> tuple[AgentFactory, dict[str, Any]]:
    """Return a factory of per-episode agents for ``spec`` and the bundle header's extras.

    Model agents share one client (built here: the SDK and the API key are needed now) and,
    given ``cache`` (a ResponseCache), one ``StepCache`` over it: each agent looks up the answer
    stored for the step it plays (scene, level, step index and messages), reusing only answers
    stored under ``cache_scope``. The agent holds the cache, not a client wrapping the client,
    so whatever wraps ``agent.client`` later (the site's rate limiter) is only asked on a miss.
    ``seed`` is the random agent's; it is never sent to a model API (``params`` default
    ``GenerationParams()``: temperature 0, no cap, no seed).
    ``allow_private`` is the outbound policy's switch (``None``: the environment decides).
    """
    parsed = parse_agent_spec(spec)
    params = params or GenerationParams()
    extras = header_extras(spec, base_url=base_url, params=params)
    if parsed.spec == "random":
        return (lambda: RandomAgent(seed)), extras
    if parsed.spec == "oracle":
        return OracleAgent, extras
    if parsed.spec == "mirror-confused":
        return MirrorConfusedAgent, extras
    if parsed.kind == "scripted":
        responses = load_script(Path(parsed.script))
        source = Path(parsed.script).name
        return (lambda: ScriptedAgent(responses, source=source)), extras
    from evaluation.adapters import make_client

    client: ModelClient = make_client(
        spec,
        base_url=base_url,
        params=params,
        api_key=api_key,
        retry=retry,
        allow_private=allow_private,
    )
    steps = StepCache(cache, base_url=base_url, scope=cache_scope) if cache is not None else None

    def model_agent() -> Agent:
        return ModelAgent(client, image_history=image_history, cache=steps)

    return model_agent, extras
