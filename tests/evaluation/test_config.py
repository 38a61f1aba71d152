"""A run's configuration goes to JSON and back unchanged, loads every shape the site stored, and
refuses anything else naming the field; the one header builder describes it."""

import pytest

from evaluation.bundle import schema_errors
from evaluation.config import RunConfig, RunConfigError, agent_factory, bundle_header
from evaluation.vocabulary import LEVELS

FULL = RunConfig(
    agent="anthropic:claude-x:v1",
    levels=(1, 3),
    scenes="robot",
    base_url="https://api.example.com",
    seed=7,
    image_size=512,
    image_history=2,
    max_tokens=900,
    pairs=(("tienkung-allegro-logo_0", 1), ("GR1_T2-allegro-logo_1", 3)),
    use_cache=False,
)


@pytest.mark.parametrize("config", [RunConfig(agent="random"), FULL], ids=["defaults", "full"])
def test_a_configuration_goes_to_json_and_back_unchanged(config):
    data = config.as_dict()
    assert RunConfig.from_dict(data) == config
    assert RunConfig.from_dict(data).as_dict() == data


def test_the_defaults_are_the_protocols():
    config = RunConfig(agent="random")
    assert config.levels == LEVELS and config.scenes == "all" and config.seed == 0
    assert config.params.as_dict() == {"temperature": 0.0, "max_tokens": None}
    assert "pairs" not in config.as_dict() and "use_cache" not in config.as_dict()


@pytest.mark.parametrize(
    "stored",
    [
        # A hosted run stored before protocol v3: a 2048-token cap.
        {
            "agent": "openai:gpt-4o",
            "levels": [0, 1, 2, 3],
            "scenes": "all",
            "base_url": None,
            "seed": 0,
            "image_size": 1024,
            "image_history": 1,
            "max_tokens": 2048,
        },
        # A Human run, which stored its kind.
        {
            "agent": "human:alice",
            "kind": "human",
            "levels": [0, 1, 2, 3],
            "scenes": "all",
            "base_url": None,
            "seed": 0,
            "image_size": 512,
            "image_history": 1,
        },
        # A reproduction's sample, pairs as JSON arrays.
        {
            "agent": "openai:m",
            "levels": [0, 1, 2, 3],
            "scenes": "all",
            "base_url": "https://api.example.com/v1",
            "seed": 3,
            "image_size": 256,
            "image_history": 1,
            "max_tokens": None,
            "pairs": [["male_0-mano_white-splash", 2]],
            "use_cache": False,
        },
    ],
    ids=["v2-hosted", "human", "reproduction"],
)
def test_every_stored_shape_loads(stored):
    config = RunConfig.from_dict(stored)
    assert config.agent == stored["agent"] and list(config.levels) == stored["levels"]
    assert config.image_size == stored["image_size"]
    assert config.max_tokens == stored.get("max_tokens")
    assert [list(p) for p in config.pairs] == stored.get("pairs", [])


@pytest.mark.parametrize(
    ("data", "field", "expected"),
    [
        ({}, "agent", "is required"),
        ({"agent": 3}, "agent", "expected an agent spec, got 3"),
        ({"agent": "gpt-4o"}, "agent", "expected one of random"),
        ({"agent": "random", "levels": []}, "levels", "non-empty list of levels from 0, 1, 2, 3"),
        ({"agent": "random", "levels": [0, 4]}, "levels", "got 4 in it"),
        ({"agent": "random", "levels": "0,1"}, "levels", "got '0,1'"),
        ({"agent": "random", "levels": [True]}, "levels", "got True in it"),
        ({"agent": "random", "scenes": None}, "scenes", "expected a scene selection"),
        ({"agent": "random", "base_url": 5}, "base_url", "expected a URL or null"),
        ({"agent": "random", "seed": "0"}, "seed", "expected a whole number, got '0'"),
        ({"agent": "random", "image_size": 8}, "image_size", "pixels from 16 to"),
        ({"agent": "random", "image_size": 1.5}, "image_size", "pixels from 16 to"),
        ({"agent": "random", "image_history": -1}, "image_history", "0 or more images"),
        ({"agent": "random", "max_tokens": 0}, "max_tokens", "a positive number of tokens"),
        ({"agent": "random", "pairs": [["x", 9]]}, "pairs", "[scene id, level] pairs"),
        ({"agent": "random", "use_cache": "no"}, "use_cache", "expected true or false"),
        ({"agent": "random", "workers": 4}, "workers", "is no field of a run configuration"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_what_it_expected(data, field, expected):
    with pytest.raises(RunConfigError) as caught:
        RunConfig.from_dict(data)
    assert caught.value.field == field
    assert expected in caught.value.message
    assert str(caught.value).startswith(f"{field}: ")


def test_a_configuration_that_is_not_an_object_is_refused():
    with pytest.raises(RunConfigError, match="expected a JSON object, got an array"):
        RunConfig.from_dict(["random"])  # type: ignore[arg-type]


SCENES = ["tienkung-allegro-logo_0", "GR1_T2-allegro-logo_1"]


def test_the_header_describes_the_configuration_and_passes_the_schema(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # describing needs no key
    header = bundle_header(FULL, scenes=SCENES, created="2026-01-01T00:00:00+00:00")
    assert schema_errors(header, "header") == []
    assert header["agent"] == {
        "name": "anthropic:claude-x:v1",
        "kind": "model",
        "provider": "anthropic",
        "model": "claude-x:v1",
        "image_history": 2,
    }
    assert header["renderer"]["image_size"] == 512 and header["renderer"]["image_history"] == 2
    assert header["selection"] == {"levels": [1, 3], "scenes": SCENES}
    assert header["seed"] == 7 and header["created"] == "2026-01-01T00:00:00+00:00"
    assert header["model"]["base_url"] == "https://api.example.com"
    assert header["generation"] == {"temperature": 0.0, "max_tokens": 900}


def test_agents_that_do_not_look_get_no_image_history_and_people_no_model():
    random = bundle_header(RunConfig(agent="random", seed=2), scenes=SCENES, levels=[0])
    assert random["agent"] == {"name": "random", "kind": "baseline", "seed": 2}
    assert random["renderer"]["image_history"] == 0
    assert random["selection"]["levels"] == [0]
    human = bundle_header(RunConfig(agent="human:alice", image_size=256), scenes=SCENES)
    assert human["agent"] == {"name": "human:alice", "kind": "human"}
    assert human["renderer"]["image_history"] == 1
    assert (human["model"], human["generation"]) == (None, None)
    assert schema_errors(random, "header") == [] and schema_errors(human, "header") == []


def test_the_agents_are_built_from_the_configuration(tmp_path):
    script = tmp_path / "answers.txt"
    script.write_text("Choice: [6]\n")
    agent = agent_factory(RunConfig(agent=f"scripted:{script}"))()
    assert agent.describe() == {"name": "scripted", "kind": "baseline", "source": "answers.txt"}
    assert agent_factory(RunConfig(agent="random", seed=9))().describe()["seed"] == 9
