"""A run's configuration, typed (``RunConfig``), and the one builder of a run's bundle header.

What a run evaluates (the agent, the levels, the scenes) and how (the endpoint, the seed, the
images, the generation settings): ``mirrorbench run`` builds one from its options, the site
stores one per run (``Run.spec``, read back as ``Run.config``), and both describe the run in its
bundle header through :func:`bundle_header` and build its agents through :func:`agent_factory`.
How one process executes a run (workers, render threads, the output path, resuming) is not part
of it: that changes no result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from evaluation.agents import AgentFactory
from evaluation.bundle import BUNDLE_VERSION, benchmark_version, now_iso, tool_version
from evaluation.cache import ResponseCache
from evaluation.messages import GenerationParams
from evaluation.public import public_base_url
from evaluation.registry import (
    AgentSpec,
    AgentSpecError,
    describe_agent,
    header_extras,
    make_agent_factory,
    parse_agent_spec,
)
from evaluation.vocabulary import LEVELS, MAIN_CONDITION, levels_text, parse_condition
from simulation.backends import renderer_version
from simulation.renderer import DEFAULT_SIZE, MAX_SIZE

MIN_SIZE = 16
MAX_REPEATS = 20
"""The most repeats a run may hold (the bundle schema allows more; runs are costly enough)."""
LEGACY_KEYS = frozenset({"kind"})
"""Keys that stored configurations hold and ``from_dict`` ignores: ``kind`` (Human runs stored
``"human"``, which their agent, ``human:NAME``, says)."""


class RunConfigError(ValueError):
    """A configuration value that is not what its field takes; ``field`` names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class RunConfig:
    """What to evaluate and how: the agent, the part of the benchmark, the images, the settings.

    Attributes:
        agent: An agent spec (``evaluation.registry``): ``random``, ``openai:MODEL``, ...
        levels: The prompt levels to play, a non-empty subset of ``vocabulary.LEVELS``.
        scenes: A scene selection: ``all``, ``human``, ``robot`` or comma-separated scene ids.
        base_url: The model API's root; None: the provider's.
        seed: The run's seed (the random agent's); never sent to a model API.
        image_size: The side of the frames in pixels.
        image_history: Previous images shown with the current one (agents that look).
        max_tokens: Cap on each answer's output tokens; None: none (an Anthropic model gets its
            maximum output). Configurations stored before protocol v3 hold 2048, which their
            runs keep sending.
        pairs: Only these (scene id, level) episodes, when given (a reproduction's sample).
        use_cache: Reuse cached answers to identical requests (a reproduction asks afresh).
        condition: The condition the scenes are played under (``vocabulary.CONDITIONS``):
            ``main``, the paper's protocol, or a control.
        repeats: How many times every episode is played (1 to ``MAX_REPEATS``): each repeat
            asks the model afresh (no cached answer), and the random agent draws anew in each
            (its episode seed is ``seed + repeat``).
    """

    agent: str
    levels: tuple[int, ...] = LEVELS
    scenes: str = "all"
    base_url: str | None = None
    seed: int = 0
    image_size: int = DEFAULT_SIZE
    image_history: int = 1
    max_tokens: int | None = None
    pairs: tuple[tuple[str, int], ...] = ()
    use_cache: bool = True
    condition: str = MAIN_CONDITION
    repeats: int = 1

    def __post_init__(self) -> None:
        try:
            parse_condition(self.condition)
        except ValueError as exc:
            raise RunConfigError("condition", str(exc)) from None
        if not 1 <= self.repeats <= MAX_REPEATS:
            raise RunConfigError(
                "repeats", f"expected 1 to {MAX_REPEATS} repeats, got {self.repeats}"
            )

    @property
    def agent_spec(self) -> AgentSpec:
        """The parsed agent (AgentSpecError if ``agent`` names none)."""
        return parse_agent_spec(self.agent)

    @property
    def params(self) -> GenerationParams:
        """What is asked of the model with every request: temperature 0, no seed, and the cap
        when there is one (protocol v3)."""
        return GenerationParams(max_tokens=self.max_tokens)

    def as_dict(self) -> dict[str, Any]:
        """Return the configuration as JSON (``pairs``, ``use_cache``, ``condition`` and
        ``repeats`` only when they are not their defaults)."""
        return {
            "agent": self.agent,
            "levels": list(self.levels),
            "scenes": self.scenes,
            "base_url": self.base_url,
            "seed": self.seed,
            "image_size": self.image_size,
            "image_history": self.image_history,
            "max_tokens": self.max_tokens,
            **({"pairs": [list(p) for p in self.pairs]} if self.pairs else {}),
            **({"use_cache": False} if not self.use_cache else {}),
            **({"condition": self.condition} if self.condition != MAIN_CONDITION else {}),
            **({"repeats": self.repeats} if self.repeats != 1 else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        """Return the configuration that ``as_dict`` (or a stored ``Run.spec``) gave.

        Every configuration the site has stored loads: missing optional keys take their
        defaults and ``LEGACY_KEYS`` are ignored.

        Raises:
            RunConfigError: A key that is no field, or a value that is not what its field
                takes; the error names the field and what it expected.
        """
        if not isinstance(data, Mapping):
            raise RunConfigError("config", f"expected a JSON object, got {_kind(data)}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known - LEGACY_KEYS)
        if unknown:
            raise RunConfigError(
                unknown[0], f"is no field of a run configuration ({_names(known)})"
            )
        if "agent" not in data:
            raise RunConfigError("agent", "is required: an agent spec such as random")
        values: dict[str, Any] = {"agent": _agent(data["agent"])}
        if "levels" in data:
            values["levels"] = _levels(data["levels"])
        if "scenes" in data:
            values["scenes"] = _text("scenes", data["scenes"], "a scene selection (all, ...)")
        if "base_url" in data and data["base_url"] is not None:
            values["base_url"] = _text("base_url", data["base_url"], "a URL or null") or None
        if "seed" in data:
            values["seed"] = _whole("seed", data["seed"], "a whole number")
        if "image_size" in data:
            values["image_size"] = _whole(
                "image_size", data["image_size"], f"pixels from {MIN_SIZE} to {MAX_SIZE}"
            )
            if not MIN_SIZE <= values["image_size"] <= MAX_SIZE:
                raise RunConfigError(
                    "image_size",
                    f"expected pixels from {MIN_SIZE} to {MAX_SIZE}, got {values['image_size']}",
                )
        if "image_history" in data:
            values["image_history"] = _whole(
                "image_history", data["image_history"], "0 or more images", least=0
            )
        if "max_tokens" in data and data["max_tokens"] is not None:
            values["max_tokens"] = _whole(
                "max_tokens", data["max_tokens"], "a positive number of tokens or null", least=1
            )
        if "pairs" in data:
            values["pairs"] = _pairs(data["pairs"])
        if "use_cache" in data:
            if not isinstance(data["use_cache"], bool):
                raise RunConfigError(
                    "use_cache", f"expected true or false, got {_kind(data['use_cache'])}"
                )
            values["use_cache"] = data["use_cache"]
        if "condition" in data:
            values["condition"] = data["condition"]  # checked by __post_init__
        if "repeats" in data:
            values["repeats"] = _whole(
                "repeats", data["repeats"], f"a whole number of repeats from 1 to {MAX_REPEATS}"
            )  # its range checked by __post_init__
        return cls(**values)


def bundle_header(
    config: RunConfig,
    *,
    scenes: Sequence[str],
    levels: Sequence[int] | None = None,
    created: str | None = None,
    benchmark: dict[str, str] | None = None,
    tool: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return the bundle header of a run of ``config``: the one place a header is built.

    Built from the configuration alone, without a client or a key (``evaluation.registry``
    describes the agent). ``scenes`` are the scene ids the run plays and ``levels`` its levels
    (default ``config.levels``); the others default to this benchmark version, now, and this
    tool. The renderer's ``image_history`` is the configuration's for agents that look at
    images, 0 for the others. A run under a control condition names it (``condition``); a run
    of the paper's protocol has no such key, so its header is what it always was. A run of
    several repeats says how many in ``selection.repeats``. ``config`` is the resolved
    configuration itself (``RunConfig.as_dict``, the endpoint without credentials), so that
    ``evaluation.run_file.config_from_header`` gives back exactly what wrote the bundle.
    """
    spec = config.agent_spec
    resolved = config.as_dict()
    if config.base_url:
        resolved["base_url"] = public_base_url(config.base_url)
    return {
        "type": "header",
        "bundle_version": BUNDLE_VERSION,
        "benchmark": benchmark or benchmark_version(),
        "agent": describe_agent(config.agent, seed=config.seed, image_history=config.image_history),
        "renderer": {
            "version": renderer_version(),
            "image_size": config.image_size,
            "image_history": config.image_history if spec.looks else 0,
        },
        "selection": {
            "levels": list(config.levels if levels is None else levels),
            "scenes": list(scenes),
            **({"repeats": config.repeats} if config.repeats != 1 else {}),
        },
        **({"condition": config.condition} if config.condition != MAIN_CONDITION else {}),
        "seed": config.seed,
        "created": created or now_iso(),
        "tool": {"name": "mirrorbench", "version": tool_version(), **(tool or {})},
        **header_extras(config.agent, base_url=config.base_url, params=config.params),
        "config": resolved,
    }


def agent_factory(
    config: RunConfig,
    *,
    cache: ResponseCache | None = None,
    cache_scope: str = "",
    api_key: str | None = None,
    retry: Any = None,
    allow_private: bool | None = None,
) -> AgentFactory:
    """Return a factory of the run's per-episode agents (``registry.make_agent_factory``).

    ``cache`` is used only when the configuration allows it (``use_cache``) and the run has
    one repeat: a repeat asks the model again, which an answer from the cache would not.
    """
    factory, _ = make_agent_factory(
        config.agent,
        seed=config.seed,
        base_url=config.base_url,
        image_history=config.image_history,
        params=config.params,
        cache=cache if config.use_cache and config.repeats == 1 else None,
        cache_scope=cache_scope,
        api_key=api_key,
        retry=retry,
        allow_private=allow_private,
    )
    return factory


def episode_seed(seed: int, repeat: int) -> int:
    """Return the seed an episode of repeat ``repeat`` starts its agent with: ``seed + repeat``
    (the first repeat's is the run's, as in a run of one repeat)."""
    return seed + repeat


def _kind(value: Any) -> str:
    """How an error names a value: its JSON type and, for scalars, the value (shortened)."""
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return repr(value)[:80]


def _names(known: set[str]) -> str:
    return ", ".join(f.name for f in fields(RunConfig) if f.name in known)


def _agent(value: Any) -> str:
    if not isinstance(value, str):
        raise RunConfigError("agent", f"expected an agent spec, got {_kind(value)}")
    try:
        parse_agent_spec(value)
    except AgentSpecError as exc:
        raise RunConfigError("agent", str(exc)) from None
    return value


def _text(field: str, value: Any, expected: str) -> str:
    if not isinstance(value, str):
        raise RunConfigError(field, f"expected {expected}, got {_kind(value)}")
    return value


def _whole(field: str, value: Any, expected: str, *, least: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RunConfigError(field, f"expected {expected}, got {_kind(value)}")
    if least is not None and value < least:
        raise RunConfigError(field, f"expected {expected}, got {value}")
    return value


def _levels(value: Any) -> tuple[int, ...]:
    expected = f"a non-empty list of levels from {levels_text()}"
    if not isinstance(value, list | tuple) or not value:
        raise RunConfigError("levels", f"expected {expected}, got {_kind(value)}")
    for level in value:
        if isinstance(level, bool) or not isinstance(level, int) or level not in LEVELS:
            raise RunConfigError("levels", f"expected {expected}, got {_kind(level)} in it")
    return tuple(value)


def _pairs(value: Any) -> tuple[tuple[str, int], ...]:
    expected = "a list of [scene id, level] pairs"
    if not isinstance(value, list | tuple):
        raise RunConfigError("pairs", f"expected {expected}, got {_kind(value)}")
    pairs = []
    for pair in value:
        if (
            not isinstance(pair, list | tuple)
            or len(pair) != 2
            or not isinstance(pair[0], str)
            or isinstance(pair[1], bool)
            or not isinstance(pair[1], int)
            or pair[1] not in LEVELS
        ):
            raise RunConfigError("pairs", f"expected {expected}, got {_kind(pair)} in it")
        pairs.append((pair[0], pair[1]))
    return tuple(pairs)
