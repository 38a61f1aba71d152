"""The agent registry describes every agent without building a client or needing a key."""

import subprocess
import sys

import pytest

from evaluation.messages import GenerationParams
from evaluation.registry import (
    AGENTS,
    BASELINES,
    PROVIDERS,
    AgentSpecError,
    agent_looks,
    describe_agent,
    header_extras,
    load_entry_point,
    make_agent_factory,
    model_spec,
    parse_agent_spec,
)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "answers.txt"
    path.write_text("Choice: [6]\n")
    return path


def specs(script):
    return [*BASELINES, f"scripted:{script}", "openai:gpt-4o", "anthropic:claude-x:v1"]


@pytest.mark.xdist_group("sdk")  # builds both providers' clients: in the worker that loads them
def test_describing_an_agent_gives_what_the_built_agent_says_of_itself(script, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    for spec in specs(script):
        factory, extras = make_agent_factory(spec, seed=3, image_history=2)
        assert describe_agent(spec, seed=3, image_history=2) == factory().describe(), spec
        assert header_extras(spec) == extras, spec


@pytest.mark.xdist_group("sdk")  # builds both providers' clients: in the worker that loads them
def test_the_header_states_the_generation_settings_each_client_sends(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    # Protocol v3: temperature 0, no cap (null), no seed; Anthropic needs a cap: the model's
    # maximum output, or the user's.
    cases = [
        ("openai:gpt-4o", None, {"temperature": 0.0, "max_tokens": None}),
        (
            "openai:gpt-4o",
            GenerationParams(max_tokens=500),
            {"temperature": 0.0, "max_tokens": 500},
        ),
        ("anthropic:claude-sonnet-4-5", None, {"temperature": 0.0, "max_tokens": 64000}),
        ("anthropic:claude-3-5-haiku-latest", None, {"temperature": 0.0, "max_tokens": 8192}),
        ("anthropic:claude-x:v1", None, {"temperature": 0.0, "max_tokens": 64000}),
        (
            "anthropic:claude-sonnet-4-5",
            GenerationParams(max_tokens=700, seed=4),
            {"temperature": 0.0, "max_tokens": 700},
        ),
    ]
    for spec, params, generation in cases:
        assert header_extras(spec, params=params)["generation"] == generation, spec
        factory, extras = make_agent_factory(spec, seed=3, params=params)
        assert extras["generation"] == generation, spec
        assert factory().client.params.as_dict() == generation, spec


def test_describing_a_model_agent_needs_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert describe_agent("openai:qwen/qwen2.5-vl:7b") == {
        "name": "openai:qwen/qwen2.5-vl:7b",
        "kind": "model",
        "provider": "openai",
        "model": "qwen/qwen2.5-vl:7b",
        "image_history": 1,
    }
    extras = header_extras("openai:m", base_url="https://user:secret@api.example.com/v1?k=1")
    assert extras["model"]["base_url"] == "https://api.example.com/v1"


@pytest.mark.parametrize("spec", ["", "gpt-4o", "openai:", "scripted:", "llama:7b", "Random"])
def test_an_unknown_spec_is_refused_listing_the_valid_ones(spec):
    with pytest.raises(AgentSpecError, match="expected one of random, oracle, mirror-confused"):
        parse_agent_spec(spec)


@pytest.mark.xdist_group("sdk")
def test_every_provider_names_a_client_class_of_its_own():
    for name, provider in PROVIDERS.items():
        client_class = provider.client_class()
        assert client_class.provider == name
        assert callable(client_class.sent_params)


def test_every_agent_built_here_names_a_class_with_a_factory():
    built = {name: agent for name, agent in AGENTS.items() if agent.entry_point is not None}
    assert set(built) == {"random", "oracle", "mirror-confused", "chest", "scripted"}
    for agent in built.values():
        assert callable(load_entry_point(agent.entry_point).factory), agent.name


def test_a_person_is_an_agent_that_is_described_but_never_built():
    assert describe_agent("human:alice") == {"name": "human:alice", "kind": "human"}
    assert header_extras("human:alice") == {"model": None, "generation": None}
    with pytest.raises(AgentSpecError, match="not run here"):
        make_agent_factory("human:alice")


@pytest.mark.parametrize(
    ("spec", "name", "argument", "kind"),
    [
        ("random", "random", "", "baseline"),
        ("scripted:a:b.txt", "scripted", "a:b.txt", "baseline"),
        ("human:bob", "human", "bob", "human"),
        ("openai:qwen/qwen2.5-vl:7b", "openai", "qwen/qwen2.5-vl:7b", "model"),
    ],
)
def test_one_parser_splits_every_spec_at_its_first_colon(spec, name, argument, kind):
    parsed = parse_agent_spec(spec)
    assert (parsed.name, parsed.argument, parsed.kind) == (name, argument, kind)
    assert parsed.is_model == (kind == "model")


@pytest.mark.parametrize("spec", ["random:3", "oracle:", "human:", "anthropic:"])
def test_an_argument_where_none_belongs_or_none_where_one_does_is_refused(spec):
    with pytest.raises(AgentSpecError):
        parse_agent_spec(spec)


def test_a_model_spec_is_made_from_a_provider_and_a_model():
    assert model_spec("anthropic", " claude-x ") == "anthropic:claude-x"
    with pytest.raises(AgentSpecError):
        model_spec("random", "x")
    with pytest.raises(AgentSpecError):
        model_spec("openai", "")


def test_which_agents_look_at_images():
    assert [agent_looks(a) for a in ("random", "oracle", "mirror-confused")] == [False] * 3
    assert agent_looks("openai:m") and agent_looks("human:alice")
    assert agent_looks("GPT-4o (reported)")  # a row of the paper: a model


def test_describing_and_validating_agents_loads_no_sdk():
    code = (
        "import sys\n"
        "from evaluation.registry import describe_agent, parse_agent_spec, provider_choices\n"
        "from evaluation.registry import header_extras\n"
        "from evaluation.config import RunConfig, bundle_header\n"
        "parse_agent_spec('anthropic:claude-x'); describe_agent('openai:gpt-4o')\n"
        "provider_choices()\n"
        "import evaluation.adapters\n"
        "header_extras('anthropic:claude-sonnet-4-5'); header_extras('openai:gpt-4o')\n"
        "bundle_header(RunConfig(agent='anthropic:claude-x'), scenes=['male_0-mano_white-splash'])"
        "\n"
        "print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.xdist_group("sdk")  # loads both SDKs: in the one worker that does
@pytest.mark.parametrize(
    "params",
    [
        GenerationParams(),
        GenerationParams(temperature=0.7, max_tokens=512),
        GenerationParams(max_tokens=None, seed=3),
    ],
    ids=["default", "capped", "seeded"],
)
@pytest.mark.parametrize("model", ["claude-opus-4-1-20250805", "gpt-4o", "some-local-model"])
def test_a_provider_describes_the_settings_its_client_sends(params, model):
    for provider in PROVIDERS.values():
        expected = provider.client_class().sent_params(model, params)
        assert provider.sent_params(model, params) == expected, provider.name


def generation_schema_errors(generation):
    """The schema errors of an OpenAI model's header whose ``generation`` is ``generation``."""
    from evaluation.bundle import schema_errors
    from evaluation.config import RunConfig, bundle_header

    header = bundle_header(RunConfig(agent="openai:gpt-4o"), scenes=["male_0-mano_white-splash"])
    return schema_errors({**header, "generation": generation}, "header")


@pytest.mark.parametrize(
    "generation",
    [
        {"temperature": 0.0, "max_tokens": None},  # protocol v3, OpenAI-compatible: no cap
        {"temperature": 0.0, "max_tokens": 64000},  # protocol v3, Anthropic
        {"temperature": 0.0},
        {"temperature": 0.0, "max_tokens": 2048, "seed": 0},  # bundles written before v3
        {"temperature": 0.0, "max_tokens": 2048, "seed": None},
    ],
)
def test_the_schema_takes_old_and_new_generation_fields(generation):
    assert generation_schema_errors(generation) == []


@pytest.mark.parametrize("max_tokens", [-1, "2048", 2**31])
def test_the_schema_still_bounds_max_tokens(max_tokens):
    (error,) = generation_schema_errors({"max_tokens": max_tokens})
    assert error.startswith("generation/max_tokens")
