"""The agent registry describes every agent without building a client or needing a key."""

import pytest

from evaluation.messages import GenerationParams
from evaluation.registry import (
    BASELINES,
    PROVIDERS,
    AgentSpecError,
    describe_agent,
    header_extras,
    make_agent_factory,
    parse_agent_spec,
)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "answers.txt"
    path.write_text("Choice: [6]\n")
    return path


def specs(script):
    return [*BASELINES, f"scripted:{script}", "openai:gpt-4o", "anthropic:claude-x:v1"]


def test_describing_an_agent_gives_what_the_built_agent_says_of_itself(script, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    for spec in specs(script):
        factory, extras = make_agent_factory(spec, seed=3, image_history=2)
        assert describe_agent(spec, seed=3, image_history=2) == factory().describe(), spec
        assert header_extras(spec) == extras, spec


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


def test_every_provider_has_a_client_class():
    from evaluation.adapters import CLIENT_CLASSES

    assert set(CLIENT_CLASSES) == set(PROVIDERS)


def generation_schema_errors(generation):
    """The schema errors of an OpenAI model's header whose ``generation`` is ``generation``."""
    from evaluation.bundle import make_header, schema_errors

    header = make_header(
        agent=describe_agent("openai:gpt-4o"),
        renderer={"version": "v2-test", "image_size": 1024, "image_history": 1},
        selection={"levels": [0], "scenes": ["male_0-mano_white-splash"]},
        seed=0,
        extra={**header_extras("openai:gpt-4o"), "generation": generation},
    )
    return schema_errors(header, "header")


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
