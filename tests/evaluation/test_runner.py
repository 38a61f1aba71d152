import json
import threading
import time

import numpy as np
import pytest

from evaluation.agents import ModelAgent, RandomAgent
from evaluation.bundle import read_bundle, schema_errors
from evaluation.config import RunConfig
from evaluation.messages import GenerationParams, ModelReply, TransportError
from evaluation.runner import FrameSource, ResumeError, run, run_episode
from evaluation.verify import verify_bundle
from simulation.catalogue import get_scene, select_scenes

SCENES = select_scenes("male_1-mano_brown-leaf_0,GR1_T2-Robotiq_2F_85-logo_1")


def config(levels, scenes=SCENES, agent="random", **options):
    """The configuration of a run of ``agent`` on ``scenes`` at ``levels``."""
    ids = ",".join(s.id for s in scenes)
    return RunConfig(agent=agent, levels=tuple(levels), scenes=ids, **options)


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_run_writes_a_header_and_one_valid_line_per_episode(tmp_path):
    out = tmp_path / "run.jsonl"
    result = run(
        lambda: RandomAgent(1), config([0, 3], seed=1), out, workers=2, progress_stream=None
    )
    assert result.ran == 4 and result.skipped == 0
    header, *episodes = lines(out)
    assert schema_errors(header, "header") == []
    assert header["selection"] == {"levels": [0, 3], "scenes": [s.id for s in SCENES]}
    assert len(episodes) == 4
    for episode in episodes:
        assert schema_errors(episode, "episode") == []
        assert len(episode["steps"]) == len(episode["distances"]) - 1
    assert verify_bundle(read_bundle(out)) == []


class Crash(Exception):
    pass


class CrashingAgent(RandomAgent):
    """Crashes the run when it reaches a chosen scene."""

    crash_on = ""

    def start(self, scene, level, seed):
        if scene.id == self.crash_on:
            raise Crash()
        super().start(scene, level, seed)


def test_a_crash_keeps_the_finished_episodes_and_resume_completes_the_rest(tmp_path):
    out = tmp_path / "run.jsonl"
    CrashingAgent.crash_on = SCENES[1].id
    with pytest.raises(Crash):
        run(CrashingAgent, config([0, 1]), out, workers=1, progress_stream=None)
    finished = lines(out)[1:]
    assert 1 <= len(finished) < 4
    assert all(e["scene_id"] == SCENES[0].id for e in finished)
    CrashingAgent.crash_on = ""
    result = run(CrashingAgent, config([0, 1]), out, resume=True, progress_stream=None)
    assert result.skipped == len(finished) and result.ran == 4 - len(finished)
    assert verify_bundle(read_bundle(out)) == []
    keys = [(e["scene_id"], e["level"]) for e in lines(out)[1:]]
    assert len(keys) == len(set(keys)) == 4
    # The episodes kept are byte-for-byte those written before the crash.
    assert lines(out)[1 : 1 + len(finished)] == finished


def test_resume_repairs_a_line_cut_off_by_a_crash(tmp_path):
    out = tmp_path / "run.jsonl"
    run(lambda: RandomAgent(0), config([2]), out, progress_stream=None)
    text = out.read_text().splitlines()
    out.write_text("\n".join(text[:-1]) + "\n" + text[-1][: len(text[-1]) // 2])
    assert read_bundle(out).truncated_tail
    assert any("cut off" in p for p in verify_bundle(read_bundle(out)))
    result = run(lambda: RandomAgent(0), config([2]), out, resume=True, progress_stream=None)
    assert result.ran == 1 and verify_bundle(read_bundle(out)) == []


def test_resume_refuses_a_bundle_of_another_configuration(tmp_path):
    out = tmp_path / "run.jsonl"
    run(lambda: RandomAgent(0), config([0]), out, progress_stream=None)
    with pytest.raises(ResumeError, match="selection"):
        run(lambda: RandomAgent(0), config([0, 1]), out, resume=True, progress_stream=None)
    with pytest.raises(ResumeError, match="seed"):
        run(lambda: RandomAgent(0), config([0], seed=5), out, resume=True, progress_stream=None)


class FlakyClient:
    """A model client whose provider is down after a few answers."""

    provider, model, params = "test", "flaky", GenerationParams()

    def __init__(self, answers_before_failing):
        self.left = answers_before_failing
        self.seen_images = []

    def complete(self, messages):
        if self.left == 0:
            raise TransportError("503 Service Unavailable", status=503, attempts=6)
        self.left -= 1
        self.seen_images.append([p for p in messages[1].parts if hasattr(p, "png")])
        return ModelReply(
            text="Backward.\nChoice: [6]", model_id="flaky-1", input_tokens=10, output_tokens=3
        )


def test_a_transport_error_marks_the_episode_as_error_and_keeps_its_steps():
    scene = get_scene("tienkung-allegro-logo_0")
    frames = FrameSource(32)
    record = run_episode(scene, 1, ModelAgent(FlakyClient(2)), frames=frames, image_size=32)
    assert record["status"] == "error" and record["metrics"] is None
    assert "transport error after 6 attempts" in record["error"]
    assert len(record["steps"]) == 2 and record["steps"][0]["model_id"] == "flaky-1"


def test_a_model_agent_sees_the_previous_and_current_frames_as_png():
    scene = get_scene("tienkung-allegro-logo_0")
    client = FlakyClient(100)
    frames = FrameSource(32)
    record = run_episode(
        scene, 0, ModelAgent(client, image_history=1), frames=frames, image_size=32
    )
    assert record["status"] == "completed"
    assert [len(images) for images in client.seen_images[:3]] == [1, 2, 2]
    first, current = client.seen_images[1]
    assert first.png.startswith(b"\x89PNG") and (first.width, first.height) == (32, 32)
    assert first.png == client.seen_images[0][0].png  # the previous view is the earlier frame
    assert current.png != first.png
    assert record["steps"][0]["frame_key"] != record["steps"][1]["frame_key"]
    assert verify_bundle_record(record) == []


def verify_bundle_record(record):
    from evaluation.verify import _check_episode

    return _check_episode(record)


def test_baseline_runs_never_render(tmp_path, monkeypatch):
    def no_render(*args, **kwargs):
        raise AssertionError("rendered for a baseline")

    monkeypatch.setattr(FrameSource, "episode", no_render)
    out = tmp_path / "run.jsonl"
    run(lambda: RandomAgent(0), config([0]), out, progress_stream=None)
    assert np.all([e["status"] == "completed" for e in lines(out)[1:]])


@pytest.mark.parametrize("cut", [1, 5, 12])
def test_a_resumed_episode_plays_exactly_as_an_uninterrupted_one(cut):
    scene = get_scene("female_1-mano_purple-leaf_1")
    whole = run_episode(scene, 2, RandomAgent(9), seed=9)
    resumed = run_episode(scene, 2, RandomAgent(9), seed=9, prior_steps=whole["steps"][:cut])
    assert resumed["steps"] == whole["steps"]
    assert resumed["distances"] == whole["distances"]


def test_a_model_sees_the_same_views_after_a_resume():
    scene = get_scene("tienkung-allegro-logo_0")
    first, second = FlakyClient(100), FlakyClient(100)
    whole = run_episode(scene, 0, ModelAgent(first), frames=FrameSource(32), image_size=32)
    run_episode(
        scene,
        0,
        ModelAgent(second),
        frames=FrameSource(32),
        image_size=32,
        prior_steps=whole["steps"][:3],
    )
    assert [[i.png for i in images] for images in second.seen_images] == [
        [i.png for i in images] for images in first.seen_images[3:]
    ]


def test_stored_steps_that_disagree_with_the_dynamics_are_refused():
    scene = get_scene("female_1-mano_purple-leaf_1")
    whole = run_episode(scene, 2, RandomAgent(9), seed=9)
    forged = [dict(whole["steps"][0], distance_steps=0)]
    with pytest.raises(ValueError, match="disagrees with the dynamics"):
        run_episode(scene, 2, RandomAgent(9), seed=9, prior_steps=forged)


class ScriptClient:
    """A model client that answers from a list and records what it was shown."""

    provider, model, params = "test", "script", GenerationParams()

    def __init__(self, answers):
        self.answers = list(answers)
        self.seen = []

    def complete(self, messages):
        images = [p.png for p in messages[1].parts if hasattr(p, "png")]
        self.seen.append({"images": images, "messages": messages})
        return ModelReply(text=self.answers.pop(0))


class RecordingModelAgent(ModelAgent):
    """A model agent that keeps the history it was given at each step."""

    def act(self, observation):
        self.__dict__.setdefault("histories", []).append(observation.history)
        return super().act(observation)


# Down (executed), an unreadable answer, then backward: the bad answer must leave no trace.
BAD_IN_THE_MIDDLE = ["Choice: [2]", "I am not sure.", "Choice: [6]", *["Choice: [2]"] * 30]


def test_an_unreadable_answer_stays_out_of_the_history_and_its_view_is_not_kept():
    scene = get_scene("tienkung-allegro-logo_0")
    client = ScriptClient(BAD_IN_THE_MIDDLE)
    agent = RecordingModelAgent(client, image_history=1)
    record = run_episode(scene, 0, agent, frames=FrameSource(32), image_size=32)
    assert record["steps"][1]["option"] is None
    assert record["distances"][2] == record["distances"][1]  # the step is used up, no move
    _, step1, step2, step3 = client.seen[:4]
    # Step 2 (after the bad answer) is shown the view from before the bad step as previous:
    # the view of step 1's move, exactly what step 1 itself was shown as current.
    assert step2["images"] == step1["images"]
    assert step3["images"][0] == step2["images"][1]
    text = "\n".join(p.text for p in step2["messages"][1].parts if hasattr(p, "text"))
    assert "I am not sure" not in text
    assert [h.option for h in agent.histories[2]] == [2]
    assert [h.option for h in agent.histories[3]] == [2, 6]


def test_a_resume_after_an_unreadable_answer_shows_the_same_views():
    scene = get_scene("tienkung-allegro-logo_0")
    whole_client = ScriptClient(BAD_IN_THE_MIDDLE)
    whole = run_episode(scene, 0, ModelAgent(whole_client), frames=FrameSource(32), image_size=32)
    resumed_client = ScriptClient(BAD_IN_THE_MIDDLE[2:])
    run_episode(
        scene,
        0,
        ModelAgent(resumed_client),
        frames=FrameSource(32),
        image_size=32,
        prior_steps=whole["steps"][:2],
    )
    assert [s["images"] for s in resumed_client.seen] == [
        s["images"] for s in whole_client.seen[2:]
    ]


class VerboseClient(FlakyClient):
    """Answers well once, then with more text than a bundle holds."""

    def complete(self, messages):
        reply = super().complete(messages)
        if len(self.seen_images) > 1:
            reply.text = "x" * 300_000 + "\nChoice: [6]"
        return reply


def test_an_answer_longer_than_a_bundle_holds_ends_the_episode_as_an_error(tmp_path):
    from evaluation.bundle import RESPONSE_MAX_CHARS

    scene = get_scene("tienkung-allegro-logo_0")
    record = run_episode(
        scene, 0, ModelAgent(VerboseClient(100)), frames=FrameSource(32), image_size=32
    )
    assert record["status"] == "error" and record["metrics"] is None
    from evaluation.public import ErrorSummary, error_summary

    assert error_summary(record["error"]) == ErrorSummary(None, "unusable_response")
    assert "after 1 attempts" in record["error"]
    assert f"more than the {RESPONSE_MAX_CHARS}" in record["error"]
    assert len(record["steps"]) == 1
    assert schema_errors(record, "episode") == []


def test_a_run_plays_all_levels_of_a_scene_before_the_next_scene(tmp_path):
    scenes = select_scenes("male_0-mano_white-splash,tienkung-allegro-logo_0")
    out = tmp_path / "order.jsonl"
    run(lambda: RandomAgent(0), config([0, 1, 2], scenes), out)
    order = [(e["scene_id"], e["level"]) for e in read_bundle(out).episodes]
    assert order == [(s.id, level) for s in scenes for level in (0, 1, 2)]


def test_a_frame_found_in_the_store_is_read_not_rendered():
    from evaluation.png import encode_png

    stored = encode_png(np.zeros((8, 8, 3), np.uint8))
    asked: list[str] = []

    def lookup(key: str) -> bytes:
        asked.append(key)
        return stored

    def no_renderer():
        raise AssertionError("a stored frame was rendered again")

    frames = FrameSource(8, make_renderer=no_renderer, lookup=lookup)
    frames.pool._version = "test-renderer"  # the version probe would make a renderer
    with frames.episode(get_scene("male_0-mano_white-splash")) as frame:
        image, key = frame((0, 0, 0))
        again, _ = frame((0, 0, 0))
    assert image.png == again.png == stored and asked == [key]  # the second from memory
    assert frames.rendered == 0 and frames.reused == 2


def test_many_workers_share_a_few_persistent_renderers(tmp_path):
    from simulation.mujoco_backend import MujocoRenderer

    made: list[MujocoRenderer] = []

    def counting_renderer():
        made.append(MujocoRenderer(keep_scenes=4))
        return made[-1]

    out = tmp_path / "run.jsonl"
    result = run(
        lambda: ModelAgent(FlakyClient(100), image_history=1),
        config([0, 1, 2, 3], agent="openai:fake-vl", image_size=32),
        out,
        workers=8,
        make_renderer=counting_renderer,
        render_threads=2,
        progress_stream=None,
    )
    assert result.ran == 8 and result.errors == 0
    # One probe for the version, then at most one renderer per render thread for 8 episodes.
    assert len(made) <= 3
    frames = result.frames
    steps = sum(len(e["steps"]) for e in lines(out)[1:])
    # The four levels of a scene play the same moves here: each view is rendered once.
    assert frames.rendered == len({s["frame_key"] for e in lines(out)[1:] for s in e["steps"]})
    assert frames.rendered < steps and frames.loads <= 4


def test_a_run_tells_its_render_pool_the_scenes_to_come_in_order(tmp_path, monkeypatch):
    from evaluation.render_pool import RenderPool

    told: list[list[str]] = []
    real = RenderPool.expect

    def expect(self, scenes, **kw):
        scenes = list(scenes)
        told.append([s.id for s in scenes])
        return real(self, scenes, **kw)

    monkeypatch.setattr(RenderPool, "expect", expect)
    result = run(
        lambda: ModelAgent(FlakyClient(100), image_history=1),
        config([0, 1], agent="openai:fake-vl", image_size=32),
        tmp_path / "run.jsonl",
        progress_stream=None,
    )
    assert told == [[s.id for s in SCENES for _ in (0, 1)]]  # the order episodes will open in
    assert result.errors == 0 and result.frames.prepared <= len(SCENES)


def test_an_episode_asks_for_its_frames_with_the_steps_it_has_left(tmp_path, monkeypatch):
    from evaluation.render_pool import RenderPool

    asked: list[tuple[int, int]] = []
    real = RenderPool.render

    def render(self, scene, cell, size, **kw):
        asked.append((kw["episode"], kw["steps_left"]))
        return real(self, scene, cell, size, **kw)

    monkeypatch.setattr(RenderPool, "render", render)
    scene = SCENES[0]
    out = tmp_path / "run.jsonl"
    run(
        lambda: ModelAgent(FlakyClient(100), image_history=0),
        config([0], [scene], agent="openai:fake-vl", image_size=32),
        out,
        progress_stream=None,
    )
    steps = len(lines(out)[1]["steps"])
    # Its longest chain first: the most steps it may still take, one fewer each step (frames
    # served from memory are not asked for again).
    assert asked and all(episode == 1 for episode, _ in asked)
    assert [left for _, left in asked] == sorted({left for _, left in asked}, reverse=True)
    assert set(left for _, left in asked) <= set(
        range(scene.max_steps - steps + 1, scene.max_steps + 1)
    )
    assert asked[0][1] == scene.max_steps


class SlowCountingClient(FlakyClient):
    """Answers after a short wait and counts the calls in flight across all its copies."""

    lock = threading.Lock()
    in_flight = most_in_flight = 0

    def complete(self, messages):
        cls = SlowCountingClient
        with cls.lock:
            cls.in_flight += 1
            cls.most_in_flight = max(cls.most_in_flight, cls.in_flight)
        try:
            time.sleep(0.01)
            return super().complete(messages)
        finally:
            with cls.lock:
                cls.in_flight -= 1


def test_more_episodes_are_open_than_workers_but_no_more_calls_are_in_flight(tmp_path, monkeypatch):
    import evaluation.runner as runner

    lock = threading.Lock()
    open_now = most_open = 0
    real = runner.run_episode

    def counting_episode(*args, **kw):
        nonlocal open_now, most_open
        assert kw["slots"] is not None and kw["slots"].size == 2
        with lock:
            open_now += 1
            most_open = max(most_open, open_now)
        try:
            return real(*args, **kw)
        finally:
            with lock:
                open_now -= 1

    monkeypatch.setattr(runner, "run_episode", counting_episode)
    SlowCountingClient.in_flight = SlowCountingClient.most_in_flight = 0
    result = run(
        lambda: ModelAgent(SlowCountingClient(100), image_history=0),
        config([0, 1, 2, 3], agent="openai:fake-vl", image_size=16),
        tmp_path / "run.jsonl",
        workers=2,
        render_threads=1,
        progress_stream=None,
    )
    assert result.ran == 8 and result.errors == 0
    assert SlowCountingClient.most_in_flight == 2  # both slots used, never a third call
    # One more episode than workers per render thread, up to twice the workers plus that.
    assert 3 <= most_open <= 5


class SlowThenCrashingAgent(RandomAgent):
    """Level 1 of the first scene takes a while; the second scene crashes the run."""

    def start(self, scene, level, seed):
        if scene.id == SCENES[1].id:
            raise Crash()
        if level == 1:
            time.sleep(0.3)
        super().start(scene, level, seed)


def test_a_crash_stores_the_episodes_still_open_when_they_finish(tmp_path):
    out = tmp_path / "run.jsonl"
    with pytest.raises(Crash):
        run(SlowThenCrashingAgent, config([0, 1]), out, workers=2, progress_stream=None)
    # The slow episode was still playing when the crash came: it is kept, not lost.
    kept = {(e["scene_id"], e["level"]) for e in lines(out)[1:]}
    assert kept == {(SCENES[0].id, 0), (SCENES[0].id, 1)}
    assert all(schema_errors(e, "episode") == [] for e in lines(out)[1:])
