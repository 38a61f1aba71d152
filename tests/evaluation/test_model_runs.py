"""End to end: ``mirrorbench run`` against model APIs served on loopback, frames rendered."""

import base64
import io
import json

from PIL import Image

from evaluation.cli import main
from tests.evaluation.fake_providers import Scripted

SCENE = "GR1_T2-shadow_hand-logo_0"


def run_args(agent, base_url, out, tmp_path, *extra):
    return [
        "run",
        "--agent",
        agent,
        "--base-url",
        base_url,
        "--scenes",
        SCENE,
        "--levels",
        "2",
        "--image-size",
        "48",
        "--out",
        str(out),
        *extra,
    ]


def test_an_openai_compatible_model_runs_and_its_responses_are_stored(
    fake_openai, tmp_path, monkeypatch
):
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-123")
    out = tmp_path / "model.jsonl"
    assert main(run_args("openai:fake-vl", fake_openai.base_url, out, tmp_path)) == 0
    header, episode = (json.loads(line) for line in out.read_text().splitlines())
    assert header["model"] == {
        "provider": "openai",
        "model": "fake-vl",
        "base_url": fake_openai.base_url,
    }
    assert header["generation"]["temperature"] == 0.0
    assert episode["status"] == "completed"
    # The fake model always answers "down": the whole budget is used.
    assert len(episode["steps"]) == episode["max_steps"] == len(fake_openai.requests)
    step = episode["steps"][0]
    assert step["response"].endswith("Choice: [2]") and step["option"] == 2
    assert step["model_id"] and step["input_tokens"] is not None
    # What reached the server: PNG frames at full size, previous + current after step 0.
    request = fake_openai.requests[1].body
    images = [
        part["image_url"]
        for part in request["messages"][1]["content"]
        if part["type"] == "image_url"
    ]
    assert len(images) == 2 and all(image["detail"] == "high" for image in images)
    png = base64.b64decode(images[-1]["url"].split(",", 1)[1])
    assert Image.open(io.BytesIO(png)).size == (48, 48)
    assert "sk-test-secret-123" not in out.read_text()
    assert main(["verify", str(out)]) == 0


def test_a_rerun_is_answered_from_the_response_cache(fake_openai, tmp_path, monkeypatch):
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert main(run_args("openai:fake-vl", fake_openai.base_url, first, tmp_path)) == 0
    sent = len(fake_openai.requests)
    assert main(run_args("openai:fake-vl", fake_openai.base_url, second, tmp_path)) == 0
    assert len(fake_openai.requests) == sent
    steps = json.loads(second.read_text().splitlines()[1])["steps"]
    assert all(step["cached"] for step in steps)


def test_a_provider_that_keeps_failing_gives_an_error_episode_not_answers(
    fake_openai, tmp_path, monkeypatch
):
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setattr("evaluation.adapters.base.time.sleep", lambda s: None)
    fake_openai.enqueue(Scripted(200), *[Scripted(500)] * 10)
    out = tmp_path / "err.jsonl"
    assert main(run_args("openai:fake-vl", fake_openai.base_url, out, tmp_path, "--no-cache")) == 0
    episode = json.loads(out.read_text().splitlines()[1])
    assert episode["status"] == "error" and episode["metrics"] is None
    assert len(episode["steps"]) == 1 and "500" in episode["error"]


def test_an_anthropic_model_runs_too(fake_anthropic, tmp_path, monkeypatch):
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    out = tmp_path / "claude.jsonl"
    assert main(run_args("anthropic:claude-fake", fake_anthropic.base_url, out, tmp_path)) == 0
    episode = json.loads(out.read_text().splitlines()[1])
    assert episode["status"] == "completed" and episode["steps"][0]["option"] == 2
    body = fake_anthropic.requests[-1].body
    assert isinstance(body["system"], str | list) and body["messages"][0]["role"] == "user"
    assert main(["verify", str(out)]) == 0


def _generation_sent(body):
    return {k: v for k, v in body.items() if k not in ("model", "messages", "system")}


def test_an_openai_run_sends_temperature_zero_only_and_records_it(
    fake_openai, tmp_path, monkeypatch
):
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "model.jsonl"
    args = run_args("openai:fake-vl", fake_openai.base_url, out, tmp_path, "--seed", "9")
    assert main(args) == 0
    header, episode = (json.loads(line) for line in out.read_text().splitlines())
    assert header["generation"] == {"temperature": 0.0, "max_tokens": None}
    assert header["seed"] == 9  # the run's seed, not sent
    for request, step in zip(fake_openai.requests, episode["steps"], strict=True):
        assert _generation_sent(request.body) == {"temperature": 0}
        assert step["request"]["params"] == {"temperature": 0.0}
    assert main(["verify", str(out)]) == 0


def test_max_tokens_on_the_command_line_is_sent_and_recorded(fake_openai, tmp_path, monkeypatch):
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "model.jsonl"
    args = run_args("openai:fake-vl", fake_openai.base_url, out, tmp_path, "--max-tokens", "3000")
    assert main(args) == 0
    header, episode = (json.loads(line) for line in out.read_text().splitlines())
    assert header["generation"] == {"temperature": 0.0, "max_tokens": 3000}
    assert _generation_sent(fake_openai.requests[0].body) == {"max_tokens": 3000, "temperature": 0}
    assert episode["steps"][0]["request"]["params"] == {"max_tokens": 3000, "temperature": 0.0}


def test_an_anthropic_run_sends_the_model_maximum_output_and_records_it(
    fake_anthropic, tmp_path, monkeypatch
):
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    out = tmp_path / "claude.jsonl"
    agent = "anthropic:claude-3-5-sonnet-20241022"
    assert main(run_args(agent, fake_anthropic.base_url, out, tmp_path)) == 0
    header, episode = (json.loads(line) for line in out.read_text().splitlines())
    assert header["generation"] == {"temperature": 0.0, "max_tokens": 8192}
    for request, step in zip(fake_anthropic.requests, episode["steps"], strict=True):
        assert _generation_sent(request.body) == {"max_tokens": 8192, "temperature": 0}
        assert step["request"]["params"] == {"max_tokens": 8192, "temperature": 0.0}
    assert main(["verify", str(out)]) == 0
