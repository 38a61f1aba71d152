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
        assert header_extras(spec, params=GenerationParams(seed=3)) == extras, spec


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
