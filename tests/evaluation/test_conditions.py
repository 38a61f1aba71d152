"""Control conditions in the engine: configuration, runs, bundles, verify, baselines, the CLI."""

import json
import re

import pytest

from evaluation.agents import ChestAgent, OracleAgent, RandomAgent
from evaluation.bundle import read_bundle, schema_errors
from evaluation.cli import main
from evaluation.config import RunConfig, RunConfigError, bundle_header
from evaluation.registry import parse_agent_spec
from evaluation.runner import ResumeError, run, run_episode
from evaluation.verify import verify_bundle
from evaluation.vocabulary import (
    CONDITIONS,
    CONTROL_CONDITIONS,
    MAIN_CONDITION,
    condition_label,
    parse_condition,
)
from simulation.catalogue import scene_set
from simulation.renderer import frame_key

SCENES = "male_1-mano_brown-leaf_0,GR1_T2-Robotiq_2F_85-logo_1"
TIMES = re.compile(rb'"(created|started|finished)": ?"[^"]*"')
"""The times a bundle records (written compact, ``"started":"..."``), masked to compare runs."""


def test_the_vocabulary_names_main_and_the_three_controls():
    assert CONDITIONS == ("main", "no-mirror", "mark-unseen", "moved-mark")
    assert MAIN_CONDITION == "main" and CONDITIONS[1:] == CONTROL_CONDITIONS
    assert [condition_label(c) for c in CONDITIONS] == [
        "Main",
        "No mirror",
        "Mark unseen",
        "Moved mark",
    ]
    with pytest.raises(ValueError, match="expected one of main, no-mirror, mark-unseen"):
        parse_condition("Moved-Mark")


def test_a_configuration_carries_its_condition_only_when_it_is_a_control():
    main = RunConfig("random")
    assert main.condition == "main" and "condition" not in main.as_dict()
    moved = RunConfig("random", condition="moved-mark")
    assert moved.as_dict()["condition"] == "moved-mark"
    assert RunConfig.from_dict(moved.as_dict()) == moved
    assert RunConfig.from_dict({"agent": "random", "condition": "main"}) == main


@pytest.mark.parametrize("value", ["mirrorless", 3, None])
def test_an_unknown_condition_names_the_field_and_the_conditions(value):
    with pytest.raises(RunConfigError) as caught:
        RunConfig.from_dict({"agent": "random", "condition": value})
    assert caught.value.field == "condition"
    assert "main, no-mirror, mark-unseen, moved-mark" in caught.value.message


def test_a_main_header_is_the_one_written_without_a_condition():
    ids = SCENES.split(",")
    plain = bundle_header(RunConfig("random", scenes=SCENES), scenes=ids, created="t")
    main = bundle_header(
        RunConfig("random", scenes=SCENES, condition="main"), scenes=ids, created="t"
    )
    assert json.dumps(plain) == json.dumps(main) and "condition" not in main
    moved = bundle_header(
        RunConfig("random", scenes=SCENES, condition="moved-mark"), scenes=ids, created="t"
    )
    assert moved.pop("condition") == "moved-mark"
    # The stored configuration names it too; nothing else differs.
    assert moved.pop("config") == {**plain.pop("config"), "condition": "moved-mark"}
    assert moved == plain
    assert schema_errors({**moved, "condition": "moved-mark"}, "header") == []


def test_a_seeded_main_run_writes_the_bytes_a_run_without_a_condition_writes(tmp_path):
    written = []
    for name, options in (("plain", {}), ("main", {"condition": "main"})):
        config = RunConfig("random", levels=(0, 2), scenes=SCENES, seed=7, **options)
        out = tmp_path / f"{name}.jsonl"
        run(lambda config=config: RandomAgent(config.seed), config, out, progress_stream=None)
        written.append(TIMES.sub(rb'"\1":"TIME"', out.read_bytes()))
    assert b'"started":"TIME"' in written[0]  # the times are masked
    assert written[0] == written[1]
    header, *episodes = (json.loads(line) for line in written[0].splitlines())
    assert "condition" not in header
    first = episodes[0]
    assert first["steps"][0]["frame_key"] == frame_key(
        header["renderer"]["version"], first["scene_id"], (0, 0, 0), 1024
    )


@pytest.mark.parametrize("condition", CONDITIONS)
def test_the_oracle_reaches_the_mark_in_every_scene_under_every_condition(condition):
    for scene in scene_set(condition).values():
        record = run_episode(scene, 0, OracleAgent())
        assert record["success"] and record["metrics"]["tsr"] == 1.0, scene.id
        assert record["d0_steps"] == scene.d0_steps


@pytest.mark.parametrize("condition", ["main", "no-mirror", "mark-unseen"])
def test_going_to_the_chest_succeeds_wherever_the_mark_is_where_it_always_is(condition):
    for scene in scene_set(condition).values():
        assert run_episode(scene, 1, ChestAgent())["success"], scene.id


def test_going_to_the_chest_never_reaches_a_moved_mark():
    for scene in scene_set("moved-mark").values():
        record = run_episode(scene, 1, ChestAgent())
        assert not record["success"], scene.id
        assert min(record["distances"]) >= 2 and len(record["steps"]) == scene.max_steps


def test_chest_is_a_registered_baseline():
    spec = parse_agent_spec("chest")
    assert spec.kind == "baseline" and not spec.looks
    assert ChestAgent().describe() == {"name": "chest", "kind": "baseline"}


def test_a_control_run_names_its_condition_and_verifies_under_it(tmp_path):
    config = RunConfig("chest", levels=(0,), scenes=SCENES, condition="moved-mark")
    out = tmp_path / "moved.jsonl"
    run(ChestAgent, config, out, progress_stream=None)
    bundle = read_bundle(out)
    assert bundle.header["condition"] == "moved-mark"
    assert verify_bundle(bundle) == []
    assert not any(e["success"] for e in bundle.episodes)
    version = bundle.header["renderer"]["version"]
    first = bundle.episodes[0]
    assert first["steps"][0]["frame_key"] == frame_key(
        version, first["scene_id"], (0, 0, 0), 1024, condition="moved-mark"
    )
    # The same episodes claimed for the paper's protocol disagree with its replay.
    lines = out.read_text().splitlines()
    header = json.loads(lines[0])
    del header["condition"]
    (tmp_path / "as_main.jsonl").write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    problems = verify_bundle(read_bundle(tmp_path / "as_main.jsonl"))
    assert any("d0_steps/max_steps" in p for p in problems)
    header["condition"] = "mirrorless"
    (tmp_path / "unknown.jsonl").write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    assert verify_bundle(read_bundle(tmp_path / "unknown.jsonl")) == [
        "header: unknown condition 'mirrorless'; "
        "expected one of main, no-mirror, mark-unseen, moved-mark"
    ]


def test_a_bundle_is_resumed_only_under_its_own_condition(tmp_path):
    out = tmp_path / "run.jsonl"
    config = RunConfig("oracle", levels=(0,), scenes=SCENES, condition="mark-unseen")
    run(OracleAgent, config, out, progress_stream=None)
    other = RunConfig("oracle", levels=(0,), scenes=SCENES)
    with pytest.raises(ResumeError, match="condition"):
        run(OracleAgent, other, out, resume=True, progress_stream=None)


def test_run_condition_writes_a_bundle_of_that_condition(tmp_path, capsys):
    out = tmp_path / "chest.jsonl"
    args = ["run", "--agent", "chest", "--scenes", SCENES, "--levels", "0"]
    assert main([*args, "--condition", "no-mirror", "--out", str(out)]) == 0
    bundle = read_bundle(out)
    assert bundle.header["condition"] == "no-mirror"
    assert all(e["success"] for e in bundle.episodes)


@pytest.mark.parametrize("command", ["run", "render", "prompt"])
def test_an_unknown_condition_on_the_command_line_names_the_conditions(tmp_path, capsys, command):
    args = {
        "run": ["run", "--agent", "oracle", "--out", str(tmp_path / "x.jsonl")],
        "render": ["render", "--scene", "male_0-mano_white-splash", "--out", str(tmp_path / "x")],
        "prompt": ["prompt", "--scene", "male_0-mano_white-splash", "--level", "0"],
    }[command]
    assert main([*args, "--condition", "mirrorless"]) == 2
    error = capsys.readouterr().err
    assert "unknown condition 'mirrorless'; expected one of main, no-mirror" in error


def test_prompt_tells_a_model_the_same_under_every_condition(capsys):
    texts = {}
    for condition in CONDITIONS:
        args = ["prompt", "--scene", "tienkung-allegro-logo_0", "--level", "1", "--moves", "6,6"]
        assert main([*args, "--condition", condition, "--size", "32"]) == 0
        texts[condition] = capsys.readouterr().out
    frames = re.compile(r"frame [0-9a-f]{40}")
    assert len({frames.sub("frame KEY", text) for text in texts.values()}) == 1
    assert len({tuple(frames.findall(text)) for text in texts.values()}) == 4


def test_render_condition_draws_the_condition(tmp_path):
    import numpy as np
    from PIL import Image

    images = {}
    for condition in CONDITIONS:
        out = tmp_path / f"{condition}.png"
        args = ["render", "--scene", "male_0-mano_white-splash", "--size", "32"]
        assert main([*args, "--condition", condition, "--out", str(out)]) == 0
        images[condition] = np.asarray(Image.open(out)).astype(int)
    for control in CONTROL_CONDITIONS:
        assert np.abs(images[control] - images["main"]).sum() > 0, control


def test_score_says_a_control_bundles_condition_and_nothing_more_for_main(tmp_path, capsys):
    for condition in ("moved-mark", "main"):
        out = tmp_path / f"{condition}.jsonl"
        args = ["run", "--agent", "chest", "--scenes", SCENES, "--levels", "0"]
        assert main([*args, "--condition", condition, "--out", str(out)]) == 0
        capsys.readouterr()
        assert main(["score", str(out), "--json"]) == 0
        document = json.loads(capsys.readouterr().out)
        assert main(["score", str(out)]) == 0
        text = capsys.readouterr().out
        if condition == "main":
            assert "condition" not in document and "Condition" not in text
        else:
            assert document["condition"] == "moved-mark"
            assert text.startswith("Condition: moved-mark (the mark sits at another seeded place")
            assert document["levels"]["0"]["overall"]["tsr"] == 0.0
