"""mirrorbench/mirror_test in Inspect: found by name, one sample per episode, the engine's
measurement (prompts, images, answers, scores), each step's frames in the transcript."""

from __future__ import annotations

import base64
import math
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from evaluation.adapters.base import png_size
from evaluation.bundle import benchmark_version, episode_results, read_bundle
from evaluation.metrics import score_json
from evaluation.verify import verify_bundle
from simulation.versions import BENCHMARK_VERSION
from tests.mirrorbench.conftest import IMAGE_SIZE, LEVELS, SCENES, engine_run

# One xdist worker (--dist loadgroup) runs them all: each worker would load Inspect (~10 s) and
# play the session's runs again. Inspect (and the mirrorbench package's modules, which import
# it) loads in the tests, not when pytest collects the module in every worker; the tests skip
# where it is missing (tests/mirrorbench/conftest.py).
pytestmark = pytest.mark.xdist_group("inspect")


def _episodes(bundle: Path) -> dict[tuple[str, int], dict]:
    return {(e["scene_id"], e["level"]): e for e in read_bundle(bundle).episodes}


def _samples(log: Path) -> dict[tuple[str, int], object]:
    from inspect_ai.log import read_eval_log

    return {(s.metadata["scene"], s.metadata["level"]): s for s in read_eval_log(log).samples}


def test_inspect_finds_the_task_by_name_through_the_installed_entry_point():
    from inspect_ai.util import registry_info

    from mirrorbench import _registry
    from mirrorbench.task import TASK_NAME

    (entry,) = [e for e in entry_points(group="inspect_ai") if e.name == "mirrorbench"]
    assert entry.value == "mirrorbench._registry"
    assert registry_info(_registry.mirror_test).name == TASK_NAME == "mirrorbench/mirror_test"


def test_the_inspect_command_runs_the_task_by_its_name_alone(tmp_path):
    from inspect_ai.log import read_eval_log

    from mirrorbench.task import TASK_NAME

    # A fresh process: nothing imported the package, so Inspect finds it through its entry point.
    inspect = Path(sys.executable).with_name("inspect")
    command = [str(inspect), "eval", "mirrorbench/mirror_test", "--model", "mirrorbench/scripted"]
    command += ["-M", 'responses=["Choice: [6]"]', "-T", "levels=3", "-T", f"scenes={SCENES[0]}"]
    command += ["-T", f"image_size={IMAGE_SIZE}", "--log-dir", str(tmp_path), "--display", "none"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    (log_file,) = tmp_path.glob("*.eval")
    log = read_eval_log(log_file)
    assert log.status == "success" and log.eval.task == TASK_NAME
    assert [s.id for s in log.samples] == [f"{SCENES[0]}-L3"]


def test_there_is_one_sample_per_scene_and_level_with_what_the_episode_is():
    from mirrorbench.task import mirror_test

    task = mirror_test(levels=["0", "3"], scenes="robot")  # -T levels=0,3 -T scenes=robot
    samples = list(task.dataset)
    assert len(samples) == 18 * 2
    first = samples[0]
    assert first.id == "GR1_T2-allegro-logo_0-L0" or first.id.endswith("-L0")
    assert [s.metadata["level"] for s in samples[:2]] == [0, 3]  # scene by scene
    assert set(first.metadata) == {
        "scene", "body", "hand", "mark", "track", "level", "budget", "d0_steps",
    }  # fmt: skip
    assert first.metadata["track"] == "Robot"
    assert first.metadata["budget"] in (15, 16)


def test_levels_and_scenes_arrive_as_the_command_line_passes_them():
    from mirrorbench.task import mirror_test

    assert len(mirror_test(levels=2, scenes=SCENES[0]).dataset) == 1
    assert len(mirror_test(levels="0,3", scenes=list(SCENES)).dataset) == 4
    with pytest.raises(ValueError, match="0, 1, 2, 3"):
        mirror_test(levels="0,7")
    with pytest.raises(KeyError):
        mirror_test(scenes="nobody-no_hand-no_mark")


def test_the_task_version_is_the_benchmark_version_and_every_log_carries_it(scripted_log):
    from inspect_ai.log import read_eval_log

    from mirrorbench.task import TASK_NAME, mirror_test

    task = mirror_test(levels=0, scenes=SCENES[0])
    assert task.version == BENCHMARK_VERSION
    log = read_eval_log(scripted_log, header_only=True)
    assert log.eval.task == TASK_NAME
    assert log.eval.task_version == BENCHMARK_VERSION
    metadata = log.eval.metadata["mirrorbench"]
    assert metadata["benchmark"] == benchmark_version()
    assert metadata["renderer"]["image_size"] == IMAGE_SIZE
    assert metadata["selection"] == {"levels": list(LEVELS), "scenes": list(SCENES)}


def test_an_inspect_run_scores_what_mirrorbench_run_scores_for_the_same_answers(
    scripted_log, scripted_bundle
):
    from inspect_ai.log import read_eval_log

    from mirrorbench.scorer import metric_key, paper_table_values

    engine = _episodes(scripted_bundle)
    samples = _samples(scripted_log)
    assert set(samples) == set(engine) and len(engine) == 4
    outcomes = set()
    for key, episode in engine.items():
        score = samples[key].scores["episode_metrics"]
        options = [step["option"] for step in episode["steps"]]
        assert score.metadata["options"] == options
        assert score.metadata["distances"] == episode["distances"]
        assert score.value == pytest.approx(episode["metrics"], abs=1e-12)
        outcomes.add(episode["success"])
        if not episode["success"]:  # past step 9: a bad response, then collisions
            assert None in options
            assert any(
                o is not None and not s["executed"]
                for o, s in zip(options, episode["steps"], strict=True)
            )
    assert outcomes == {True, False}
    # The run's metrics are the engine's tables: SIR pooled over steps, per level and track.
    tables = score_json(episode_results(list(engine.values())))
    metrics = read_eval_log(scripted_log, header_only=True).results.scores[0].metrics
    values = {name: m.value for name, m in metrics.items()}
    assert values == pytest.approx(paper_table_values(list(episode_results(list(engine.values())))))
    for level in LEVELS:
        for track in ("human", "overall"):
            for m in ("tsr", "sir", "fcr", "pcr", "avg"):
                cell = tables["levels"][str(level)][track][m]
                assert values[metric_key(m, level=level, track=track)] == pytest.approx(cell)
    assert values["avg"] == pytest.approx(
        sum(tables["levels"][str(level)]["overall"]["avg"] for level in LEVELS) / len(LEVELS)
    )
    assert "robot_avg" not in values  # no robot scene: no robot column


def test_inspects_mock_model_plays_as_mirrorbench_run_plays_its_answer(
    tmp_path, mock_answer, script_file
):
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from mirrorbench.logs import convert_log, write_bundle

    model = get_model("mockllm/model", custom_outputs=mock_answer("Choice: [1]"))
    (log,) = inspect_eval(
        "mirrorbench/mirror_test",
        model=model,
        task_args={"levels": "2", "scenes": SCENES[1], "image_size": IMAGE_SIZE},
        log_dir=str(tmp_path / "logs"),
        display="none",
        log_images=False,  # a small log: the frames are left out, the measurement is not
    )
    assert log.status == "success"
    (sample,) = log.samples
    script = tmp_path / "one.txt"
    script.write_text("Choice: [1]\n")
    bundle = engine_run(tmp_path / "one.jsonl", f"scripted:{script}", levels=(2,))
    episode = _episodes(bundle)[(SCENES[1], 2)]
    score = sample.scores["episode_metrics"]
    assert score.metadata["distances"] == episode["distances"]
    assert score.value == pytest.approx(episode["metrics"])
    assert sample.model_usage["mockllm/model"].input_tokens == 100 * len(episode["steps"])
    converted = convert_log(Path(log.location))
    assert [e["distances"] for e in converted.episodes] == [episode["distances"]]
    write_bundle(converted, tmp_path / "mock.jsonl")
    assert verify_bundle(read_bundle(tmp_path / "mock.jsonl")) == []


def test_each_step_shows_its_frames_and_outcome_in_the_transcript(scripted_log):
    from inspect_ai.event import InfoEvent, ModelEvent, SpanBeginEvent
    from inspect_ai.log import read_eval_log
    from inspect_ai.model import ChatMessageUser, ContentImage

    log = read_eval_log(scripted_log, resolve_attachments=True)
    sample = next(s for s in log.samples if s.metadata["level"] == 0)
    steps = len(sample.scores["episode_metrics"].metadata["options"])
    spans = [e for e in sample.events if isinstance(e, SpanBeginEvent) and e.type]
    assert [e.name for e in spans if e.type == "mirrorbench-step"] == [
        f"step {i}" for i in range(steps)
    ]
    calls = [e for e in sample.events if isinstance(e, ModelEvent)]
    assert len(calls) == steps
    for index, call in enumerate(calls):
        (user,) = [m for m in call.input if isinstance(m, ChatMessageUser)]
        images = [c for c in user.content if isinstance(c, ContentImage)]
        # The current view, and from the second step on the previous one (as in the engine:
        # the view before a bad response is not kept).
        assert len(images) == (1 if index == 0 else 2)
        for image in images:
            prefix = "data:image/png;base64,"
            assert image.image.startswith(prefix) and image.detail == "high"
            png = base64.b64decode(image.image.removeprefix(prefix))
            assert png_size(png) == (IMAGE_SIZE, IMAGE_SIZE)
        assert user.metadata["mirrorbench"]["step"] == index
    infos = [e for e in sample.events if isinstance(e, InfoEvent) and e.source == "mirrorbench"]
    assert len(infos) == steps and infos[0].data.startswith("step 0: option 6 (backward)")
    # The sample's messages are the episode: the system message, then each step's prompt (with
    # its images) and the model's answer.
    assert sample.messages[0].role == "system"
    assert [m.role for m in sample.messages[1:]] == ["user", "assistant"] * steps


def test_inspect_and_mirrorbench_run_send_the_same_model_the_same_requests(fake_openai_runs):
    from inspect_ai.log import read_eval_log

    log, from_inspect, bundle, from_engine = fake_openai_runs
    (episode,) = read_bundle(bundle).episodes
    assert len(from_inspect) == len(from_engine) == len(episode["steps"]) > 1
    for sent_by_inspect, sent_by_engine in zip(from_inspect, from_engine, strict=True):
        # Every message, text part and image byte, and temperature 0 with nothing else.
        assert sent_by_inspect.body == sent_by_engine.body
    (sample,) = read_eval_log(log).samples
    score = sample.scores["episode_metrics"]
    assert score.metadata["distances"] == episode["distances"]
    assert score.value == pytest.approx(episode["metrics"])


def test_an_episode_a_limit_ends_is_unscored_and_counts_nowhere(tmp_path, mock_answer):
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from mirrorbench.logs import convert_log, write_bundle

    model = get_model("mockllm/model", custom_outputs=mock_answer("Choice: [6]"))
    (log,) = inspect_eval(
        "mirrorbench/mirror_test",
        model=model,
        task_args={"levels": "0,1", "scenes": SCENES[0], "image_size": IMAGE_SIZE},
        log_dir=str(tmp_path / "logs"),
        display="none",
        message_limit=6,  # the system message, then two messages a step
    )
    assert log.status == "success"
    for sample in log.samples:
        assert sample.limit is not None and sample.limit.type == "message"
        score = sample.scores["episode_metrics"]
        assert math.isnan(score.value)
        assert score.metadata["status"] != "completed"
        assert len(score.metadata["options"]) == 2
    assert log.results.scores[0].scored_samples == 0
    assert log.results.scores[0].unscored_samples == 2
    # In a bundle, such an episode ends in error, as one that lost its model does.
    converted = convert_log(Path(log.location))
    assert [e["status"] for e in converted.episodes] == ["error", "error"]
    assert "message limit" in converted.episodes[0]["error"]
    write_bundle(converted, tmp_path / "limited.jsonl")
    assert verify_bundle(read_bundle(tmp_path / "limited.jsonl")) == []
