"""Errored episodes apart from failures: real model clients against loopback servers that fail
in each way, counted by category; refusals scored as bad responses; resume plays errors again."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from evaluation import adapters
from evaluation.adapters.retry import RetryPolicy
from evaluation.agents import ModelAgent
from evaluation.cli import main
from evaluation.errors import ERRORED_SHARE_LIMIT, ErrorCounts, error_counts, refusal_kind
from evaluation.runner import FrameSource, run_episode
from simulation.catalogue import get_scene
from tests.evaluation.fake_providers import (
    FakeOpenAI,
    Scripted,
    openai_completion,
    openai_error,
)

# OpenAI's SDK loads when a test first names its client (``adapters.OpenAIChatClient``), not
# when pytest collects the module in every xdist worker; one worker runs the tests that load it.
pytestmark = pytest.mark.xdist_group("sdk")

SCENE = "tienkung-allegro-logo_0"
ONE_RETRY = RetryPolicy(max_attempts=2, base_delay_s=0.0, max_delay_s=0.0, jitter=0.0)


@pytest.fixture(scope="module")
def frames() -> Iterator[FrameSource]:
    """One small frame source for the module: its renderers are built once."""
    source = FrameSource(32)
    yield source
    source.close()


def _episode(server: FakeOpenAI, frames: FrameSource, *failures: Scripted) -> dict:
    server.enqueue(*failures)
    client = adapters.OpenAIChatClient(
        "fake-vl",
        base_url=server.base_url,
        retry=ONE_RETRY,
        timeout_s=0.3,
        sleep=lambda s: None,
    )
    return run_episode(get_scene(SCENE), 2, ModelAgent(client), frames=frames, image_size=32)


def test_each_way_a_provider_fails_is_an_errored_episode_of_its_category(
    fake_openai, frames, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    ways = {
        "server_error": [Scripted(500, openai_error("boom")), Scripted(503, "unavailable")],
        "rate_limited": [Scripted(429, openai_error("slow down"))] * 2,
        "auth": [Scripted(401, openai_error("bad key", type="authentication_error"))],
        "not_found": [Scripted(404, openai_error("no such model"))],
        "bad_request": [Scripted(400, openai_error("no"))],
        "timeout": [Scripted(delay_s=1.0)] * 2,
        "connection_error": [Scripted(drop=True)] * 2,
    }
    records = []
    for category, failures in ways.items():
        record = _episode(fake_openai, frames, Scripted(200), *failures)
        assert record["status"] == "error", category
        assert record["metrics"] is None and len(record["steps"]) == 1
        records.append(record)
    # One healthy episode beside them: its failures to reach the mark are the model's own.
    records.append(_episode(fake_openai, frames))
    assert records[-1]["status"] == "completed"

    counts = error_counts(records)
    assert counts.episodes == 8 and counts.errored == 7
    assert counts.by_category == dict.fromkeys(ways, 1)
    assert counts.share == pytest.approx(7 / 8) and counts.over(ERRORED_SHARE_LIMIT)
    assert counts.as_dict()["by_category"] == {
        "auth": 1,
        "bad_request": 1,
        "connection_error": 1,
        "not_found": 1,
        "rate_limited": 1,
        "server_error": 1,
        "timeout": 1,
    }
    assert next(label for _, label, _ in counts.categories()) == "Refused the key (HTTP 401/403)"


def test_a_refusal_with_no_answer_is_a_bad_response_counted_apart(fake_openai, frames, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    record = _episode(
        fake_openai,
        frames,
        Scripted(200, openai_completion(None, refusal="I can't help with that.")),
        Scripted(200, openai_completion("", finish_reason="content_filter")),
    )
    # The protocol: an empty answer is a bad response; the episode goes on and is scored.
    assert record["status"] == "completed" and record["metrics"] is not None
    first, second = record["steps"][:2]
    assert first["option"] is None and refusal_kind(first["parse_error"]) == "refusal"
    assert second["option"] is None and refusal_kind(second["parse_error"]) == "content_filter"
    counts = error_counts([record])
    assert counts.errored == 0 and not counts.over(0.0)
    assert counts.refused_steps == {"content_filter": 1, "refusal": 1}


def test_no_episodes_no_share():
    assert ErrorCounts(0).share == 0.0 and not ErrorCounts(0).over(0.0)
    assert refusal_kind("no number in the answer") is None


def test_score_counts_errors_and_resume_plays_the_errored_episodes_again(
    fake_openai, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setattr("evaluation.adapters.base.time.sleep", lambda s: None)
    out = tmp_path / "run.jsonl"
    args = ["run", "--agent", "openai:fake-vl", "--base-url", fake_openai.base_url]
    args += ["--scenes", SCENE, "--levels", "1,2", "--image-size", "32", "--out", str(out)]
    # The first episode played meets a server that fails every retry; the second, answers.
    fake_openai.enqueue(*[Scripted(500, openai_error("boom"))] * 6)
    assert main([*args, "--no-cache", "--workers", "1"]) == 0
    first = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    errored_level = next(e["level"] for e in first if e["status"] == "error")
    capsys.readouterr()
    assert main(["score", str(out), "--json"]) == 0
    errors = json.loads(capsys.readouterr().out)["errors"]
    assert errors == {
        "episodes": 2,
        "errored": 1,
        "errored_share": 0.5,
        "by_category": {"server_error": 1},
        "refused_steps": {},
    }
    assert main(["score", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Errored episodes: 1 of 2 (50.0%), left out of every score" in text
    assert "Server error (HTTP 5xx) after every retry: 1" in text

    sent = len(fake_openai.requests)
    assert main([*args, "--no-cache", "--resume"]) == 0
    episodes = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    assert sorted(e["status"] for e in episodes) == ["completed", "completed"]
    # Only the errored episode was asked again; the completed one was kept as it was.
    replayed = next(e for e in episodes if e["level"] == errored_level)
    assert len(fake_openai.requests) - sent == len(replayed["steps"])
    capsys.readouterr()
    assert main(["score", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["errors"]["errored"] == 0
