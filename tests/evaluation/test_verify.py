"""``mirrorbench verify`` catches every kind of tampering, each with a precise message."""

import json

import pytest

from evaluation.agents import RandomAgent
from evaluation.bundle import read_bundle
from evaluation.cli import main
from evaluation.config import RunConfig
from evaluation.runner import run
from evaluation.verify import verify_bundle
from simulation.catalogue import select_scenes

SCENES = select_scenes("female_1-mano_white-bread,nova_carter-allegro-logo_0")


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundles") / "clean.jsonl"
    run(
        lambda: RandomAgent(4),
        RunConfig(
            agent="random", levels=(0, 1, 2, 3), scenes=",".join(s.id for s in SCENES), seed=4
        ),
        out,
        progress_stream=None,
    )
    return [json.loads(line) for line in out.read_text().splitlines()]


def problems(records, tmp_path):
    path = tmp_path / "tampered.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return verify_bundle(read_bundle(path))


def copy(records):
    return json.loads(json.dumps(records))


def first_executed_step(episode):
    return next(i for i, s in enumerate(episode["steps"]) if s["executed"])


def test_a_clean_bundle_verifies(clean, tmp_path):
    assert problems(clean, tmp_path) == []


def test_an_edited_distance_is_caught(clean, tmp_path):
    records = copy(clean)
    records[1]["steps"][2]["distance_steps"] += 1
    found = problems(records, tmp_path)
    assert any("step 2: distance" in p and "the replay gives" in p for p in found)


def test_an_edited_action_is_caught(clean, tmp_path):
    records = copy(clean)
    step = records[2]["steps"][0]
    step["option"] = 1 if step["option"] != 1 else 2
    found = problems(records, tmp_path)
    assert any("step 0: option" in p and "the response parses as" in p for p in found)


def test_an_edited_action_with_a_matching_response_still_breaks_the_replay(clean, tmp_path):
    records = copy(clean)
    step = records[2]["steps"][0]
    step["option"] = 1 if step["option"] != 1 else 2
    step["response"] = f"Choice: [{step['option']}]"
    found = problems(records, tmp_path)
    assert found and all(p.startswith("line 3 ") for p in found)


def test_a_forged_success_is_caught(clean, tmp_path):
    records = copy(clean)
    episode = records[1]
    episode["success"] = True
    episode["metrics"]["tsr"] = 1.0
    found = problems(records, tmp_path)
    assert any("success=True, the replay gives False" in p for p in found)
    assert any("metrics disagree: tsr 1.0" in p for p in found)


def test_an_edited_trajectory_and_metrics_are_caught(clean, tmp_path):
    records = copy(clean)
    records[3]["distances"][-1] = 1
    records[3]["metrics"]["avg"] = 0.9
    found = problems(records, tmp_path)
    assert any("distances" in p and "the replay gives" in p for p in found)
    assert any("metrics disagree" in p and "avg 0.9" in p for p in found)


def test_a_wrong_benchmark_part_is_caught(clean, tmp_path):
    records = copy(clean)
    records[0]["benchmark"]["prompt_version"] = "v0"
    assert any("differs from this verifier" in p for p in problems(records, tmp_path))


def test_a_v1_bundle_is_refused_naming_its_retired_version(clean, tmp_path):
    records = copy(clean)
    records[0]["benchmark"] = {"scene_set": "v1", "prompt_version": "v1", "dynamics_version": "v1"}
    found = problems(records, tmp_path)
    assert len(found) == 1
    assert "benchmark version 'v1' is retired" in found[0]
    assert "step budget" in found[0]


def test_a_v2_bundle_is_refused_naming_its_retired_version(clean, tmp_path):
    records = copy(clean)
    records[0]["benchmark"] = {
        "version": "v2",
        "scene_set": "v2",
        "prompt_version": "v2",
        "dynamics_version": "v1",
    }
    found = problems(records, tmp_path)
    assert len(found) == 1
    assert "benchmark version 'v2' is retired" in found[0]
    assert "prompts" in found[0] and "evaluate the model again" in found[0]


def test_a_bundle_of_an_unknown_version_is_refused_naming_it(clean, tmp_path):
    records = copy(clean)
    records[0]["benchmark"]["version"] = "v9"
    found = problems(records, tmp_path)
    assert found == [
        "header: benchmark version 'v9' is unknown to this engine (it knows v3); upgrade "
        "mirrorbench or use a bundle it wrote"
    ]


def test_an_unknown_scene_is_caught(clean, tmp_path):
    records = copy(clean)
    records[1]["scene_id"] = "male_9-mano_white-splash"
    found = problems(records, tmp_path)
    assert any("unknown scene 'male_9-mano_white-splash'" in p for p in found)


def test_duplicated_and_missing_episodes_are_caught(clean, tmp_path):
    records = copy(clean)
    duplicate = records[1]
    records[2] = copy([duplicate])[0]
    found = problems(records, tmp_path)
    assert any("duplicate of the episode on line 2" in p for p in found)
    missing = clean[2]
    assert f"missing episode: {missing['scene_id']} L{missing['level']}" in found


def test_an_ended_episode_cannot_go_on(clean, tmp_path):
    records = copy(clean)
    episode = next(e for e in records[1:] if len(e["steps"]) == e["max_steps"])
    episode["steps"].append(dict(episode["steps"][-1], index=len(episode["steps"])))
    found = problems(records, tmp_path)
    assert any("the episode had already ended" in p for p in found)


def test_a_malformed_record_is_reported_with_its_field(clean, tmp_path):
    records = copy(clean)
    records[1]["level"] = 7
    records[2]["steps"][0]["executed"] = "yes"
    found = problems(records, tmp_path)
    assert any(p.startswith("line 2: level:") for p in found)
    assert any(p.startswith("line 3: steps/0/executed:") for p in found)


def test_the_cli_exits_1_with_a_line_per_discrepancy(clean, tmp_path, capsys):
    records = copy(clean)
    records[1]["steps"][0]["distance_steps"] = 99
    path = tmp_path / "tampered.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["verify", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out and all(line.startswith(str(path)) for line in out)
    clean_path = tmp_path / "clean.jsonl"
    clean_path.write_text("".join(json.dumps(r) + "\n" for r in clean))
    assert main(["verify", str(clean_path)]) == 0
    assert "OK: 8 episodes" in capsys.readouterr().out


def test_an_unreadable_bundle_is_a_one_line_usage_error(tmp_path, capsys):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    assert main(["verify", str(path)]) == 2
    assert "empty file" in capsys.readouterr().err
    path.write_text('{"type": "header", "bundle_version": 9}\n')
    assert main(["verify", str(path)]) == 2
    assert "bundle_version 9 is not supported" in capsys.readouterr().err
