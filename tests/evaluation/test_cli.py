"""The evaluation commands of the mirrorbench CLI: prompt, run, score, verify."""

import json
from importlib import metadata

import pytest

from evaluation.bundle import DISTRIBUTION
from evaluation.cli import main


def test_prompt_prints_the_step_0_text_with_image_placeholders(capsys):
    assert main(["prompt", "--scene", "male_0-mano_white-splash", "--level", "3"]) == 0
    text = capsys.readouterr().out
    assert "=== system ===" in text and "=== user ===" in text
    assert "[image current view, hand at cell (0, 0, 0), frame " in text
    assert "mirror" not in text.lower() and "Choice: [Option Number] (e.g. [1])" in text
    assert "Previous moves: none yet" in text and "previous view" not in text


def test_prompt_with_moves_prints_the_next_step_with_history_and_both_images(capsys):
    args = ["prompt", "--scene", "male_0-mano_white-splash", "--level", "1", "--moves", "6,6,3"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "1. Option 6, move backward (towards the camera): executed without collision." in text
    assert "3. Option 3, move left: executed without collision." in text
    assert "[image previous view, hand at cell (-2, 0, 0), frame " in text
    assert "[image current view, hand at cell (-2, 1, 0), frame " in text
    assert text.rstrip().endswith("no real person is involved.")


@pytest.mark.parametrize(
    "moves, message",
    [
        ("6,9", "each move must be an option 1-6, got '9'"),
        (",".join(["1"] * 30), "the episode ends"),
    ],
)
def test_prompt_with_bad_moves_says_why_and_exits_2(capsys, moves, message):
    args = ["prompt", "--scene", "male_0-mano_white-splash", "--level", "0", "--moves", moves]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


def test_run_then_score_json_has_the_documented_shape(tmp_path, capsys):
    out = tmp_path / "oracle.jsonl"
    assert (
        main(
            ["run", "--agent", "oracle", "--scenes", "robot", "--levels", "0,2", "--out", str(out)]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["score", str(out), "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert set(scores) == {
        "levels",
        "overall",
        "behaviour",
        "cognitive_stability",
        "errors",
        "process",
    }
    assert set(scores["levels"]) == {"0", "1", "2", "3"}
    assert scores["levels"]["0"]["robot"] == {
        "tsr": 1.0,
        "sir": 1.0,
        "fcr": 1.0,
        "pcr": 1.0,
        "avg": 1.0,
    }
    assert scores["levels"]["0"]["human"] is None and scores["levels"]["1"]["robot"] is None
    assert main(["verify", str(out)]) == 0


def test_score_prints_the_level_tables_and_table_ii(tmp_path, capsys):
    out = tmp_path / "random.jsonl"
    assert main(["run", "--agent", "random", "--seed", "3", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["score", str(out)]) == 0
    text = capsys.readouterr().out
    for title in ("Level 0", "Level 1", "Level 2", "Level 3", "Overall"):
        assert title in text
    tables, behaviour = text.split("Behaviour:", 1)
    assert tables.count("Human") == 5 and "no episodes" not in text
    assert behaviour.count("Human") == 5 and "Cognitive stability: " in behaviour


def test_score_json_adds_the_behaviour_and_cognitive_stability(tmp_path, capsys):
    out = tmp_path / "mirror-confused.jsonl"
    args = ["run", "--agent", "mirror-confused", "--scenes", "robot", "--out", str(out)]
    assert main(args) == 0
    capsys.readouterr()
    assert main(["score", str(out), "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    behaviour = scores["behaviour"]
    assert set(behaviour) == {"levels", "overall"}
    assert set(behaviour["levels"]) == {"0", "1", "2", "3"}
    robot = behaviour["levels"]["0"]["robot"]
    assert set(robot) == {
        "episodes",
        "mirror_confused_episodes",
        "confusion_rate",
        "bad_response_rate",
        "collision_rate",
    }
    assert (robot["episodes"], robot["mirror_confused_episodes"]) == (18, 18)
    assert robot["confusion_rate"] == pytest.approx(0.851, abs=0.001)
    assert robot["bad_response_rate"] == 0.0
    assert behaviour["levels"]["0"]["human"] is None and behaviour["overall"]["human"] is None
    assert behaviour["overall"]["robot"]["episodes"] == 72
    # The agent plays every level alike: no level step changes a scene's score.
    assert scores["cognitive_stability"] == 0.0


def test_score_json_has_no_cognitive_stability_without_a_scene_at_every_level(tmp_path, capsys):
    out = tmp_path / "oracle.jsonl"
    assert main(["run", "--agent", "oracle", "--levels", "0", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["score", str(out), "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["cognitive_stability"] is None
    assert scores["behaviour"]["levels"]["0"]["overall"]["confusion_rate"] == 0.0
    assert main(["score", str(out)]) == 0
    assert "Cognitive stability: n/a" in capsys.readouterr().out


def test_run_resumes_without_repeating_episodes(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    args = ["run", "--agent", "random", "--scenes", "human", "--levels", "1", "--out", str(out)]
    assert main(args) == 0
    first = out.read_text()
    assert main([*args, "--resume"]) == 0
    assert "0 episodes run, 48 kept" in capsys.readouterr().err
    assert out.read_text().splitlines()[1:] == first.splitlines()[1:]


def test_a_model_run_renders_on_the_threads_asked_for(tmp_path, capsys, fake_openai):
    out = tmp_path / "m.jsonl"
    args = ["run", "--agent", "openai:fake-vl", "--base-url", fake_openai.base_url]
    args += ["--scenes", "male_1-mano_white-splash", "--levels", "0,1", "--no-cache"]
    args += ["--workers", "4", "--render-threads", "1", "--image-size", "24", "--out", str(out)]
    env = {"OPENAI_API_KEY": "test"}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        assert main(args) == 0
    err = capsys.readouterr().err
    # Both levels answer left forever: the same few views, rendered once, then reused.
    assert "2 episodes run" in err and "frames rendered" in err and "reused)" in err


def test_run_with_a_script_file(tmp_path):
    script = tmp_path / "moves.txt"
    script.write_text("Choice: [6]\n")
    out = tmp_path / "s.jsonl"
    assert (
        main(
            [
                "run",
                "--agent",
                f"scripted:{script}",
                "--scenes",
                "male_1-mano_white-splash",
                "--levels",
                "0",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    episode = json.loads(out.read_text().splitlines()[1])
    assert [s["option"] for s in episode["steps"]][:4] == [6, 6, 6, 6]
    assert episode["steps"][4]["executed"] is False  # against the body


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "genius"], "unknown agent 'genius'"),
        (["--agent", "random", "--levels", "0,4"], "--levels must be"),
        (["--agent", "random", "--scenes", "male_0-x-y"], "unknown scene"),
        (["--agent", "random", "--workers", "0"], "--workers must be a positive integer"),
        (["--agent", "random", "--render-threads", "0"], "--render-threads must be a positive"),
        (["--agent", "scripted:/nonexistent/file"], "cannot read script"),
        (["--agent", "openai:gpt-4o"], "OPENAI_API_KEY"),
    ],
)
def test_run_rejects_bad_arguments_on_one_line(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "x.jsonl"
    assert main(["run", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_version_names_the_tool_and_the_benchmark(capsys):
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("mirrorbench ") and "(benchmark v3)" in out


def test_version_is_the_installed_distributions(capsys):
    assert main(["--version"]) == 0
    version = capsys.readouterr().out.split()[1]
    assert version == metadata.version(DISTRIBUTION) and version != "unknown"


def test_help_lists_every_subcommand(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("scenes", "render", "gallery", "prompt", "run", "verify", "score"):
        assert f"    {command} " in out, command


def test_score_refuses_a_bundle_that_does_not_verify_and_prints_no_scores(tmp_path, capsys):
    out = tmp_path / "random.jsonl"
    assert (
        main(["run", "--agent", "random", "--scenes", "robot", "--levels", "0", "--out", str(out)])
        == 0
    )
    lines = out.read_text().splitlines()
    # A duplicated episode: the scores it claims would count one scene twice.
    out.write_text("\n".join([*lines, lines[1]]) + "\n")
    capsys.readouterr()
    assert main(["score", str(out), "--json"]) == 1
    printed = capsys.readouterr()
    assert printed.out == ""
    assert "does not verify" in printed.err and "nothing was scored" in printed.err
