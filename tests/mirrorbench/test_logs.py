"""From an Inspect log to the board: mirrorbench import-inspect, verify, import; tampered logs
and logs of another version are refused with the reason."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from evaluation.bundle import read_bundle
from evaluation.cli import main
from evaluation.verify import verify_bundle
from leaderboard.runs.imports import model_entry_import_bundle
from leaderboard.submissions.tokens import api_token_create
from simulation.versions import BENCHMARK_VERSION
from tests.leaderboard.factories import UserFactory
from tests.mirrorbench.conftest import (
    IMAGE_SIZE,
    LEVELS,
    SCENES,
    engine_run,
    inspect_eval,
)

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog

# One xdist worker (--dist loadgroup) runs them all: each worker would load Inspect (~10 s) and
# play the session's runs again. Inspect (and mirrorbench.logs, which imports it) loads in the
# tests, not when pytest collects the module in every worker; the tests skip where it is
# missing (tests/mirrorbench/conftest.py).
pytestmark = pytest.mark.xdist_group("inspect")


def _tampered(log: Path, out: Path, edit: Any) -> Path:
    """Write a copy of ``log`` changed by ``edit(EvalLog)``."""
    from inspect_ai.log import read_eval_log, write_eval_log

    copy: EvalLog = read_eval_log(log)
    edit(copy)
    write_eval_log(copy, out)
    return out


def _failed_sample(log: EvalLog):
    return next(s for s in log.samples if not s.scores["episode_metrics"].metadata["success"])


def test_a_log_becomes_a_bundle_that_verifies(scripted_log, tmp_path):
    from mirrorbench.logs import convert_log, write_bundle

    converted = convert_log(scripted_log)
    header = converted.header
    assert header["agent"] == {
        "name": "inspect:mirrorbench/scripted",
        "kind": "model",
        "provider": "mirrorbench",
        "model": "scripted",
        "image_history": 1,
    }
    assert header["selection"] == {"levels": list(LEVELS), "scenes": list(SCENES)}
    assert header["generation"] == {"temperature": 0.0, "max_tokens": None}
    assert header["inspect"]["task_version"] == BENCHMARK_VERSION
    write_bundle(converted, tmp_path / "b.jsonl")
    bundle = read_bundle(tmp_path / "b.jsonl")
    assert len(bundle.episodes) == 4
    assert verify_bundle(bundle) == []


def test_the_bundle_holds_what_mirrorbench_run_holds_for_the_same_answers(
    scripted_log, scripted_bundle
):
    from mirrorbench.logs import convert_log

    converted = {(e["scene_id"], e["level"]): e for e in convert_log(scripted_log).episodes}
    for engine in read_bundle(scripted_bundle).episodes:
        episode = converted[(engine["scene_id"], engine["level"])]
        for field in ("status", "success", "distances", "metrics"):
            assert episode[field] == engine[field]
        for mine, theirs in zip(episode["steps"], engine["steps"], strict=True):
            for field in ("response", "option", "parse_error", "executed", "hand_cell"):
                assert mine[field] == theirs[field]


def test_a_model_behind_an_api_gives_the_bundle_mirrorbench_run_gives(fake_openai_runs):
    from mirrorbench.logs import convert_log

    log, _, bundle, _ = fake_openai_runs
    (episode,) = convert_log(log).episodes
    (engine,) = read_bundle(bundle).episodes
    assert episode["distances"] == engine["distances"]
    assert episode["metrics"] == engine["metrics"]
    for mine, theirs in zip(episode["steps"], engine["steps"], strict=True):
        # The same views (frame keys), answers, tokens and model id.
        for field in ("frame_key", "response", "option", "input_tokens", "output_tokens"):
            assert mine[field] == theirs[field]
        assert mine["model_id"] == theirs["model_id"] == "fake-vlm-2025-06-01"
        assert mine["fingerprint"] == theirs["fingerprint"] == "fp_fake0123"
        # What went on the wire besides the messages: temperature 0, nothing else.
        assert mine["request"]["params"] == theirs["request"]["params"] == {"temperature": 0.0}


def test_import_inspect_writes_a_verified_bundle(scripted_log, tmp_path, capsys):
    out = tmp_path / "bundle.jsonl"
    assert main(["import-inspect", str(scripted_log), "--out", str(out)]) == 0
    assert "4 episodes" in capsys.readouterr().out
    assert main(["verify", str(out)]) == 0


@pytest.mark.django_db
def test_the_bundle_goes_on_the_board_as_our_own_runs_do(scripted_log, tmp_path):
    from mirrorbench.logs import convert_log, write_bundle

    out = tmp_path / "bundle.jsonl"
    write_bundle(convert_log(scripted_log), out)
    imported = model_entry_import_bundle(
        name="Scripted via Inspect", kind="open-weights", bundle=read_bundle(out)
    )
    assert imported.episodes == 4
    assert imported.run.agent == "inspect:mirrorbench/scripted"
    assert imported.run.scores.exists()


@pytest.mark.django_db
def test_the_web_upload_takes_the_bundle_as_it_takes_our_own(
    scripted_log, tmp_path, client, settings
):
    from mirrorbench.logs import convert_log, write_bundle

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MIRRORBENCH_IMAGE_SIZES = [IMAGE_SIZE]  # the site serves the frames of its replays
    out = tmp_path / "bundle.jsonl"
    write_bundle(convert_log(scripted_log), out)
    owner = UserFactory(username="carol")
    upload = io.BytesIO(out.read_bytes())
    upload.name = "inspect.jsonl"
    response = client.post(
        "/api/submissions/",
        {"model_name": "Scripted 0B", "kind": "open-weights", "bundle": upload},
        HTTP_AUTHORIZATION=f"Token {api_token_create(user=owner, name='inspect').key}",
    )
    assert response.status_code == 201, response.content
    assert response.json()["episodes"] == 4


def test_a_log_whose_answers_disagree_with_its_distances_is_refused(scripted_log, tmp_path):
    from inspect_ai.event import ModelEvent

    from mirrorbench.logs import InspectLogRefused, convert_log

    def edit(log: EvalLog) -> None:
        sample = _failed_sample(log)
        calls = [e for e in sample.events if isinstance(e, ModelEvent)]
        choice = calls[0].output.choices[0]
        choice.message.content = "Choice: [5]"  # was 6: forward, not backward
        calls[0].output.completion = "Choice: [5]"

    tampered = _tampered(scripted_log, tmp_path / "tampered.eval", edit)
    with pytest.raises(InspectLogRefused, match=r"-L\d: step 0: option 6 \(the replay gives 5\)"):
        convert_log(tampered)


def test_a_log_whose_scores_were_edited_is_refused(scripted_log, tmp_path):
    from mirrorbench.logs import InspectLogRefused, convert_log

    def edit(log: EvalLog) -> None:
        sample = _failed_sample(log)
        score = sample.scores["episode_metrics"]
        score.value = {**score.value, "tsr": 1.0}

    tampered = _tampered(scripted_log, tmp_path / "tampered.eval", edit)
    with pytest.raises(
        InspectLogRefused, match=r"episode_metrics scored .* the replay gives tsr 0"
    ):
        convert_log(tampered)


def test_a_log_of_another_benchmark_version_is_refused(scripted_log, tmp_path, capsys):
    from mirrorbench.logs import InspectLogRefused, convert_log

    def retired(log: EvalLog) -> None:
        log.eval.task_version = "v2"

    def other_prompts(log: EvalLog) -> None:
        log.eval.metadata["mirrorbench"]["benchmark"]["prompt_version"] = "v9"

    with pytest.raises(InspectLogRefused, match="'v2' is retired"):
        convert_log(_tampered(scripted_log, tmp_path / "v2.eval", retired))
    tampered = _tampered(scripted_log, tmp_path / "v9.eval", other_prompts)
    with pytest.raises(InspectLogRefused, match=r"'prompt_version': 'v9'.* differs"):
        convert_log(tampered)
    assert main(["import-inspect", str(tampered), "--out", str(tmp_path / "b.jsonl")]) == 1
    assert "refused" in capsys.readouterr().err
    assert not (tmp_path / "b.jsonl").exists()


def test_a_log_generated_away_from_temperature_0_is_refused(scripted_log, tmp_path):
    from inspect_ai.event import ModelEvent

    from mirrorbench.logs import InspectLogRefused, convert_log

    def edit(log: EvalLog) -> None:
        for sample in log.samples:
            for event in sample.events:
                if isinstance(event, ModelEvent):
                    event.config.temperature = 0.7

    with pytest.raises(InspectLogRefused, match=r"temperature 0\.7"):
        convert_log(_tampered(scripted_log, tmp_path / "hot.eval", edit))


def test_a_control_conditions_log_becomes_a_bundle_of_that_condition(script_file, tmp_path):
    from mirrorbench.logs import convert_log, write_bundle

    log = inspect_eval(
        tmp_path / "logs",
        "mirrorbench/scripted",
        model_args={"script": str(script_file)},
        task_args={"condition": "moved-mark"},
    )
    converted = convert_log(log)
    assert converted.header["condition"] == "moved-mark"
    write_bundle(converted, tmp_path / "moved.jsonl")
    assert verify_bundle(read_bundle(tmp_path / "moved.jsonl")) == []
    engine = engine_run(
        tmp_path / "engine.jsonl", f"scripted:{script_file}", "--condition", "moved-mark"
    )
    played = {(e["scene_id"], e["level"]): e["distances"] for e in converted.episodes}
    # The same answers under the moved mark: the engine's distances, not the main scenes'.
    assert played == {
        (e["scene_id"], e["level"]): e["distances"] for e in read_bundle(engine).episodes
    }
