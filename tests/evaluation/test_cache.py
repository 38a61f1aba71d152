"""The response cache: one stored answer per step of an episode, reused only by that step.

After an unreadable answer the episode's next prompt is the same as the last one (the bad
answer stays out of the history and its view is not kept), so a cache keyed by the request
alone would answer every later step with the same garbage. These tests run ``mirrorbench run``
against a loopback model server that garbles some answers, counting what it is asked.
"""

import json
import sqlite3
import threading

from evaluation.cache import ResponseCache, StepKey, request_key
from evaluation.cli import main
from evaluation.messages import GenerationParams, Message, TextPart
from tests.evaluation.fake_providers import Scripted, openai_completion
from tests.evaluation.test_model_runs import run_args

GARBAGE = Scripted(200, openai_completion("I cannot tell where the mark is from this view."))
GOOD = Scripted(200)  # the fake's default: "Choice: [2]"


def episode_of(path):
    return json.loads(path.read_text().splitlines()[1])


def run_model(fake, out, *extra):
    """Play one episode of ``openai:fake-vl`` at level 2 with small frames into ``out``."""
    return main(run_args("openai:fake-vl", fake.base_url, out, out.parent, *extra))


def test_after_a_bad_answer_the_next_step_asks_the_model_again(fake_openai, tmp_path, monkeypatch):
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    # Step 1 and step 4 are garbled; every other answer is good.
    fake_openai.enqueue(GOOD, GARBAGE, GOOD, GOOD, GARBAGE)
    out = tmp_path / "bad.jsonl"
    assert run_model(fake_openai, out) == 0
    steps = episode_of(out)["steps"]
    # Every step was a real request: the step after a bad one was not served the same garbage.
    assert len(fake_openai.requests) == len(steps) > 5
    assert [s["index"] for s in steps if s["option"] is None] == [1, 4]
    assert not any(s["cached"] for s in steps)
    # The step after the bad one was asked exactly what the bad one was asked (by design).
    assert fake_openai.requests[2].body["messages"] == fake_openai.requests[1].body["messages"]
    assert main(["verify", str(out)]) == 0


def test_a_rerun_with_the_same_cache_replays_every_step_without_a_request(
    fake_openai, tmp_path, monkeypatch
):
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake_openai.enqueue(GOOD, GARBAGE, GOOD, GARBAGE)
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert run_model(fake_openai, first) == 0
    sent = len(fake_openai.requests)
    assert run_model(fake_openai, second) == 0
    assert len(fake_openai.requests) == sent  # not one new request
    before, after = episode_of(first)["steps"], episode_of(second)["steps"]
    assert all(step["cached"] for step in after)
    fields = ("response", "option", "executed", "hand_cell", "input_tokens", "output_tokens")
    assert [[s[f] for f in fields] for s in after] == [[s[f] for f in fields] for s in before]
    assert main(["verify", str(second)]) == 0


def test_resuming_an_errored_episode_reuses_the_steps_it_had_taken(
    fake_openai, tmp_path, monkeypatch
):
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setattr("evaluation.adapters.base.time.sleep", lambda s: None)
    # Three answers (one garbled), then the provider fails until the retries run out.
    fake_openai.enqueue(GOOD, GARBAGE, GOOD, *[Scripted(500)] * 10)
    out = tmp_path / "resumed.jsonl"
    assert run_model(fake_openai, out) == 0
    broken = episode_of(out)
    assert broken["status"] == "error" and len(broken["steps"]) == 3
    sent = len(fake_openai.requests)
    failures_left = 10 - (sent - 3)  # the 500s the retries did not use are met again below

    assert run_model(fake_openai, out, "--resume") == 0
    episode = episode_of(out)
    assert episode["status"] == "completed"
    # The three steps answered before are replayed from the cache; the rest are asked.
    assert [s["cached"] for s in episode["steps"][:3]] == [True, True, True]
    assert not any(s["cached"] for s in episode["steps"][3:])
    assert len(fake_openai.requests) - sent == len(episode["steps"]) - 3 + failures_left
    assert episode["steps"][1]["option"] is None and episode["steps"][2]["option"] == 2


def test_without_the_cache_every_step_is_asked(fake_openai, tmp_path, monkeypatch):
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "a.jsonl"
    assert run_model(fake_openai, out, "--no-cache") == 0
    assert run_model(fake_openai, out, "--no-cache") == 0
    steps = episode_of(out)["steps"]
    assert len(fake_openai.requests) == 2 * len(steps)
    assert not any(step["cached"] for step in steps)


CONVERSATION = [Message("user", (TextPart("Where is the mark?"),))]


def key(step: StepKey, scope: str = "") -> str:
    return request_key(
        "openai", "m", None, GenerationParams(), CONVERSATION, step=step, scope=scope
    )


def test_the_key_holds_the_episode_the_step_and_the_scope():
    base = StepKey("GR1_T2-shadow_hand-logo_0", 2, 3)
    assert key(base) == key(StepKey("GR1_T2-shadow_hand-logo_0", 2, 3))
    others = [
        StepKey("GR1_T2-shadow_hand-logo_0", 2, 4),  # the next step, same messages
        StepKey("GR1_T2-shadow_hand-logo_0", 1, 3),  # another level
        StepKey("tienkung-allegro-logo_0", 2, 3),  # another scene
    ]
    keys = {key(base), *(key(other) for other in others), key(base, scope="user:7")}
    assert len(keys) == 5


def test_the_store_keeps_replies_across_connections(tmp_path):
    from evaluation.messages import ModelReply

    path = tmp_path / "cache.sqlite3"
    store = ResponseCache(path)
    store.put("k", ModelReply("Choice: [1]", input_tokens=10, latency_s=0.5))
    store.close()
    again = ResponseCache(path)
    reply = again.get("k")
    again.close()
    assert reply is not None and reply.text == "Choice: [1]" and reply.input_tokens == 10


def test_a_cache_file_another_process_holds_while_it_is_opened_is_waited_for(tmp_path):
    """A worker's episodes open the shared cache file together. Switching a new file to WAL
    needs its exclusive lock, and SQLite answered "database is locked" (after its 5 s busy
    wait, or at once when two openers met) instead of the episode starting: the task failed
    and the episode waited for the stale check. Here another connection holds the lock for
    longer than SQLite's own wait; the cache opens once it is let go."""
    path = tmp_path / "cache.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(5.5, holder.execute, ("COMMIT",))
    release.start()
    try:
        store = ResponseCache(path)
    finally:
        release.join()
        holder.close()
    assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
