"""Run files: a run's every option in one TOML file (``mirrorbench run --config``)."""

from __future__ import annotations

import dataclasses
import tomllib

import pytest

from evaluation.bundle import read_bundle, schema_errors
from evaluation.cli import main
from evaluation.config import RunConfig, RunConfigError, bundle_header
from evaluation.run_file import (
    Execution,
    config_from_header,
    load_run_file,
    run_file_from_dict,
    run_file_text,
)
from simulation.catalogue import select_scenes


@pytest.mark.parametrize(
    "config",
    [
        RunConfig(agent="random"),
        RunConfig(agent="oracle", levels=(0, 3), scenes="robot", seed=7, image_size=64),
        RunConfig(
            agent="openai:gpt-4o",
            base_url="http://models.example/v1",
            image_history=2,
            max_tokens=512,
            pairs=(("male_0-mano_white-splash", 2),),
            use_cache=False,
            condition="no-mirror",
        ),
    ],
)
def test_a_run_file_reads_back_to_the_same_configuration(config):
    execution = Execution(workers=8, out="gpt-4o.jsonl")
    text = run_file_text(config, execution, comment=["a comment", "another"])
    loaded = run_file_from_dict(tomllib.loads(text))
    assert loaded.config == config
    assert loaded.execution == execution


@pytest.mark.parametrize(
    ("text", "field", "said"),
    [
        ('agent = "random"\nlevels = [7]\n', "levels", "a non-empty list of levels"),
        ('agent = "random"\nimage_size = "big"\n', "image_size", "expected pixels"),
        ('agent = "random"\ncolour = "red"\n', "colour", "is no field"),
        ("levels = [0]\n", "agent", "is required"),
        ('agent = "random"\n[execution]\nworkers = 0\n', "execution.workers", "positive"),
        ('agent = "random"\n[execution]\nthreads = 2\n', "execution.threads", "no execution"),
        ('agent = "random"\nexecution = 3\n', "execution", "expected a table"),
        ('agent = "random"\nlevels = [0,\n', "config", "is not TOML"),
    ],
)
def test_a_bad_run_file_is_refused_naming_the_field(tmp_path, text, field, said):
    path = tmp_path / "run.toml"
    path.write_text(text)
    with pytest.raises(RunConfigError) as caught:
        load_run_file(path)
    assert caught.value.field == field and said in str(caught.value)


def test_a_bundle_header_gives_the_configuration_that_wrote_it(tmp_path):
    config = RunConfig(agent="random", scenes="human", levels=(1, 2), seed=3, image_size=32)
    out = tmp_path / "run.jsonl"
    (tmp_path / "run.toml").write_text(run_file_text(config, Execution(out=str(out))))
    assert main(["run", "--config", str(tmp_path / "run.toml")]) == 0
    assert config_from_header(read_bundle(out).header) == config


def test_mirrorbench_run_takes_every_option_from_the_file(tmp_path, capsys):
    out = tmp_path / "oracle.jsonl"
    config = RunConfig(agent="oracle", levels=(0,), scenes="robot", seed=5, image_size=32)
    path = tmp_path / "run.toml"
    path.write_text(run_file_text(config, Execution(workers=2, out=str(out))))
    assert main(["run", "--config", str(path)]) == 0
    header = read_bundle(out).header
    assert header["agent"]["name"] == "oracle" and header["seed"] == 5
    assert header["selection"]["levels"] == [0] and len(header["selection"]["scenes"]) == 18
    assert header["renderer"]["image_size"] == 32
    # An option on the command line replaces the file's.
    other = tmp_path / "other.jsonl"
    assert main(["run", "--config", str(path), "--levels", "1", "--out", str(other)]) == 0
    assert read_bundle(other).header["selection"]["levels"] == [1]


def test_mirrorbench_run_names_the_field_a_run_file_gets_wrong(tmp_path, capsys):
    path = tmp_path / "run.toml"
    path.write_text('agent = "oracle"\nseed = "zero"\n')
    assert main(["run", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: seed: expected a whole number" in err
    assert main(["run"]) == 2
    assert "--agent" in capsys.readouterr().err


@pytest.mark.parametrize(
    "config",
    [
        RunConfig(agent="random", seed=5, image_size=32),
        RunConfig(
            agent="openai:gpt-4o",
            base_url="https://user:secret@models.example/v1?key=k-1",
            levels=(2,),
            max_tokens=256,
            pairs=(("male_0-mano_white-splash", 2),),
            use_cache=False,
            condition="moved-mark",
            repeats=3,
        ),
    ],
    ids=["baseline", "model"],
)
def test_every_header_stores_the_resolved_configuration_and_gives_it_back(config):
    header = bundle_header(config, scenes=["male_0-mano_white-splash"])
    assert schema_errors(header, "header") == []
    stored = header["config"]
    assert {k: v for k, v in stored.items() if k != "base_url"} == {
        k: v for k, v in config.as_dict().items() if k != "base_url"
    }
    if config.base_url:
        # Never a credential: the endpoint as the header's model names it.
        assert stored["base_url"] == "https://models.example/v1" == header["model"]["base_url"]
        assert config_from_header(header) == dataclasses.replace(
            config, base_url="https://models.example/v1"
        )
    else:
        # pairs, use_cache and repeats, which the header's parts do not hold, come back too.
        assert config_from_header(header) == config


def test_a_header_written_before_it_stored_its_configuration_is_read_from_its_parts():
    config = RunConfig(agent="oracle", levels=(0, 3), scenes="robot", seed=2, image_size=64)
    header = bundle_header(config, scenes=[s.id for s in select_scenes("robot")])
    del header["config"]
    assert config_from_header(header) == config
