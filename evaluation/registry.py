"""The engine's registries: the model providers and the agents, one table each, and the one
parser of agent specs.

Each entry names what builds it as a lazy entry point, ``"module:attribute"``, imported only
when something is built (as Gymnasium's ``register(id=..., entry_point="pkg.module:Class")``):
describing an agent (the bundle header's ``agent``, ``model`` and ``generation`` fields) needs no
client and no API key, and a process that only describes, validates or lists agents never loads
a provider's SDK. Used alike by ``mirrorbench run``, the site's forms, services and workers, and
its bundle exports.

Specs: ``random``, ``oracle``, ``mirror-confused``, ``chest``, ``scripted:FILE``, ``human:NAME``
(a person playing in the browser, never built here), and ``PROVIDER:MODEL`` for each provider
(``openai:MODEL``, ``anthropic:MODEL``). Everything after the first ``:`` is the argument, so a
model name may hold ``:`` and ``/``.

A new provider is a client class (``evaluation/adapters/``) and one ``register_provider`` line
below (naming an SDK-free ``settings`` function when its clients send other settings than
asked); a new agent is a class with a ``factory`` classmethod and one ``register_agent`` line.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from evaluation.agents import Agent, AgentFactory, ModelAgent
from evaluation.cache import ResponseCache, StepCache
from evaluation.messages import GenerationParams, ModelClient
from evaluation.public import public_base_url


def load_entry_point(entry_point: str) -> Any:
    """Return what ``"module:attribute"`` names, importing the module now."""
    module, sep, attribute = entry_point.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(f"entry point {entry_point!r} must look like module:attribute")
    return getattr(importlib.import_module(module), attribute)


class ClientClass(Protocol):
    """What a provider's entry point names: a ``ModelClient`` class (``_ChatAdapter``)."""

    def __call__(self, model: str, **options: Any) -> ModelClient: ...

    def sent_params(self, model: str, params: GenerationParams) -> GenerationParams:
        """The settings a client for ``model`` sends given ``params``."""
        ...


@dataclass(frozen=True)
class Provider:
    """A model API: its spec prefix, its name for people, its client class's entry point and
    the entry point of what its clients send given the settings asked for."""

    name: str
    label: str
    client: str
    """Entry point of the client class, built with the model name and keyword options (base
    URL, generation settings, key, retry policy, outbound policy)."""
    settings: str | None = None
    """Entry point of a function ``(model, params) -> GenerationParams`` giving the settings a
    client for ``model`` sends given ``params``, in a module that loads no SDK (the client
    class's ``sent_params`` is the same function); None: sent as asked."""

    def client_class(self) -> ClientClass:
        """Return the client class, importing its module (and the provider's SDK) now."""
        loaded: ClientClass = load_entry_point(self.client)
        return loaded

    def sent_params(self, model: str, params: GenerationParams) -> GenerationParams:
        """The settings a client for ``model`` sends given ``params``, without loading the
        provider's SDK (the bundle header's ``generation``)."""
        if self.settings is None:
            return params
        resolve: SettingsResolver = load_entry_point(self.settings)
        return resolve(model, params)


class SettingsResolver(Protocol):
    """What a provider's ``settings`` entry point names."""

    def __call__(self, model: str, params: GenerationParams) -> GenerationParams: ...


class AgentClass(Protocol):
    """What an agent's entry point names: a class whose ``factory`` makes the run's agents."""

    def factory(self, argument: str, *, seed: int) -> AgentFactory:
        """Return a factory of per-episode agents for the spec's argument (a script, ...)."""
        ...


@dataclass(frozen=True)
class AgentType:
    """An agent the engine knows by name (model agents are their provider's, not listed here)."""

    name: str
    kind: str
    """The bundle header's ``agent.kind``: ``baseline`` or ``human``."""
    label: str
    """The agent's name for people (a baseline's model entry on the site)."""
    entry_point: str | None
    """Entry point of its ``AgentClass``; None for agents played elsewhere (people)."""
    argument: str = ""
    """What follows ``name:`` in a spec (``FILE``, ``NAME``); empty: the agent takes none."""
    seeded: bool = False
    """The run's seed drives it (and so the header records it)."""
    looks: bool = False
    """It looks at the images (the runner renders frames only for such agents)."""

    @property
    def usage(self) -> str:
        """How a spec names it: ``random``, ``scripted:FILE``."""
        return f"{self.name}:{self.argument}" if self.argument else self.name


PROVIDERS: dict[str, Provider] = {}
"""Every provider by spec prefix, in registration order (forms list them so)."""
AGENTS: dict[str, AgentType] = {}
"""Every agent that is not a provider's model, by name, in registration order."""


def register_provider(
    name: str, *, label: str, client: str, settings: str | None = None
) -> Provider:
    """Add a provider to ``PROVIDERS``; ``client`` is its client class's entry point,
    ``settings`` that of what its clients send (``Provider.settings``)."""
    if name in PROVIDERS or name in AGENTS:
        raise ValueError(f"{name!r} is registered already")
    provider = PROVIDERS[name] = Provider(name, label, client, settings)
    return provider


def register_agent(
    name: str,
    *,
    kind: str,
    label: str,
    entry_point: str | None,
    argument: str = "",
    seeded: bool = False,
    looks: bool = False,
) -> AgentType:
    """Add an agent to ``AGENTS``; ``entry_point`` names its class (None: not built here)."""
    if name in PROVIDERS or name in AGENTS:
        raise ValueError(f"{name!r} is registered already")
    agent = AGENTS[name] = AgentType(name, kind, label, entry_point, argument, seeded, looks)
    return agent


register_provider(
    "openai",
    label="OpenAI-compatible (OpenAI, vLLM, OpenRouter, ...)",
    client="evaluation.adapters.openai:OpenAIChatClient",
)
register_provider(
    "anthropic",
    label="Anthropic",
    client="evaluation.adapters.anthropic:AnthropicClient",
    settings="evaluation.adapters.anthropic_models:anthropic_sent_params",
)
register_agent(
    "random",
    kind="baseline",
    label="Random",
    entry_point="evaluation.agents:RandomAgent",
    seeded=True,
)
register_agent(
    "oracle", kind="baseline", label="Oracle", entry_point="evaluation.agents:OracleAgent"
)
register_agent(
    "mirror-confused",
    kind="baseline",
    label="Mirror-confused",
    entry_point="evaluation.agents:MirrorConfusedAgent",
)
register_agent(
    "chest", kind="baseline", label="Go to the chest", entry_point="evaluation.agents:ChestAgent"
)
register_agent(
    "scripted",
    kind="baseline",
    label="Scripted",
    entry_point="evaluation.agents:ScriptedAgent",
    argument="FILE",
)
register_agent("human", kind="human", label="Human", entry_point=None, argument="NAME", looks=True)

BASELINES = tuple(
    name for name, agent in AGENTS.items() if agent.kind == "baseline" and not agent.argument
)
"""The baselines a bare name runs: ``random``, ``oracle``, ``mirror-confused``, ``chest``."""


class AgentSpecError(ValueError):
    """An agent spec that names no agent."""


@dataclass(frozen=True)
class AgentSpec:
    """A parsed agent spec: ``name`` (an agent's or a provider's) and its ``argument``."""

    spec: str
    name: str
    argument: str = ""

    @property
    def is_model(self) -> bool:
        """Whether it names a provider's model."""
        return self.name in PROVIDERS

    @property
    def provider(self) -> str:
        """The provider of a model agent; empty for the others."""
        return self.name if self.is_model else ""

    @property
    def model(self) -> str:
        """The model name of a model agent; empty for the others."""
        return self.argument if self.is_model else ""

    @property
    def agent_type(self) -> AgentType | None:
        """The agent's entry in ``AGENTS``; None for a model agent."""
        return AGENTS.get(self.name)

    @property
    def kind(self) -> str:
        """The bundle header's ``agent.kind``: ``model``, ``baseline`` or ``human``."""
        agent = self.agent_type
        return agent.kind if agent is not None else "model"

    @property
    def looks(self) -> bool:
        """Whether the agent looks at the images."""
        agent = self.agent_type
        return agent.looks if agent is not None else True


def agent_specs_text() -> str:
    """Return the specs the engine runs, as help and error messages list them."""
    built = [agent.usage for agent in AGENTS.values() if agent.entry_point is not None]
    return ", ".join([*built, *(f"{name}:MODEL" for name in PROVIDERS)])


def parse_agent_spec(spec: str) -> AgentSpec:
    """Return what ``spec`` names; raise AgentSpecError (listing the valid specs) if nothing.

    The one parser of ``PROVIDER:MODEL`` and the other specs: everything after the first ``:``
    is the argument (a model name may hold ``:`` and ``/``).
    """
    name, sep, argument = spec.partition(":")
    agent = AGENTS.get(name)
    if name in PROVIDERS and argument:
        return AgentSpec(spec, name, argument)
    if agent is not None and bool(agent.argument) == bool(argument) and bool(sep) == bool(argument):
        return AgentSpec(spec, name, argument)
    raise AgentSpecError(f"unknown agent {spec!r}; expected one of {agent_specs_text()}")


def model_spec(provider: str, model: str) -> str:
    """Return the spec of ``model`` at ``provider`` (``openai:gpt-4o``), checked.

    Raises:
        AgentSpecError: ``provider`` is no provider's name, or ``model`` is empty.
    """
    spec = f"{provider}:{model.strip()}"
    if not parse_agent_spec(spec).is_model:
        raise AgentSpecError(f"{spec!r} names no model; expected PROVIDER:MODEL")
    return spec


def provider_choices() -> list[tuple[str, str]]:
    """Return ``(name, label)`` of every provider, for forms and API enums."""
    return [(provider.name, provider.label) for provider in PROVIDERS.values()]


def agent_label(spec: str) -> str:
    """Return an agent's name for people: a named agent's label with its argument
    (``Random``, ``Scripted (answers.txt)``), a model agent's model name."""
    parsed = parse_agent_spec(spec)
    agent = parsed.agent_type
    if agent is None:
        return parsed.model
    return f"{agent.label} ({parsed.argument})" if parsed.argument else agent.label


def agent_looks(agent: str) -> bool:
    """Return whether the agent a run names looks at images; True for names that are no spec
    (an uploaded bundle's model, a row of the paper), which are models."""
    try:
        return parse_agent_spec(agent).looks
    except AgentSpecError:
        return True


def describe_agent(spec: str, *, seed: int = 0, image_history: int = 1) -> dict[str, Any]:
    """Return the bundle header's ``agent`` field for ``spec``, without building anything."""
    parsed = parse_agent_spec(spec)
    agent = parsed.agent_type
    if agent is None:
        return {
            "name": parsed.spec,
            "kind": "model",
            "provider": parsed.provider,
            "model": parsed.model,
            "image_history": image_history,
        }
    if agent.kind == "human":
        return {"name": parsed.spec, "kind": agent.kind}
    described: dict[str, Any] = {"name": agent.name, "kind": agent.kind}
    if agent.seeded:
        described["seed"] = seed
    if parsed.argument:
        described["source"] = Path(parsed.argument).name
    return described


def header_extras(
    spec: str, *, base_url: str | None = None, params: GenerationParams | None = None
) -> dict[str, Any]:
    """Return the bundle header's ``model`` and ``generation`` fields (null for other agents).

    ``generation`` is what the provider's client sends given ``params`` (default
    ``GenerationParams()``): ``{"temperature": 0.0, "max_tokens": null}`` for an OpenAI-compatible
    model (null: no cap), the model's maximum output as ``max_tokens`` for an Anthropic one; a
    ``seed`` only when one is sent. A setting the model turns out to reject is recorded per
    step (``request["params"]`` and ``request["not_sent"]``), not here.
    """
    parsed = parse_agent_spec(spec)
    if not parsed.is_model:
        return {"model": None, "generation": None}
    sent = PROVIDERS[parsed.provider].sent_params(parsed.model, params or GenerationParams())
    return {
        "model": {
            "provider": parsed.provider,
            "model": parsed.model,
            "base_url": public_base_url(base_url) if base_url else None,
        },
        "generation": sent.as_dict(),
    }


def make_client(
    spec: str,
    *,
    base_url: str | None = None,
    params: GenerationParams | None = None,
    api_key: str | None = None,
    retry: Any = None,
    allow_private: bool | None = None,
) -> ModelClient:
    """Build the client of a model agent, ``"PROVIDER:MODEL"`` (``"openai:qwen2.5-vl:7b"``).

    ``allow_private=True`` lets the client call loopback and private addresses (a local model
    server); ``None`` leaves it to ``MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS``. ``retry`` is a
    ``RetryPolicy`` (default: the client's).

    Raises:
        AgentSpecError: ``spec`` names no provider's model (the message lists the providers).
        MissingAPIKeyError: The provider's key variable is unset and ``base_url`` is not
            on loopback.
    """
    try:
        parsed = parse_agent_spec(spec)
    except AgentSpecError:
        parsed = None
    if parsed is None or not parsed.is_model:
        raise AgentSpecError(
            f"model spec {spec!r} must look like PROVIDER:MODEL, PROVIDER one of "
            + ", ".join(sorted(PROVIDERS))
        )
    options: dict[str, Any] = {"base_url": base_url, "api_key": api_key}
    options["allow_private"] = allow_private
    if params is not None:
        options["params"] = params
    if retry is not None:
        options["retry"] = retry
    return PROVIDERS[parsed.provider].client_class()(parsed.model, **options)


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

    Raises:
        AgentSpecError: ``spec`` names no agent, or one that is not built here (a person).
    """
    parsed = parse_agent_spec(spec)
    params = params or GenerationParams()
    extras = header_extras(spec, base_url=base_url, params=params)
    agent = parsed.agent_type
    if agent is not None:
        if agent.entry_point is None:
            raise AgentSpecError(f"{spec!r}: {agent.label.lower()} agents are not run here")
        agent_class: AgentClass = load_entry_point(agent.entry_point)
        return agent_class.factory(parsed.argument, seed=seed), extras
    client = make_client(
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
