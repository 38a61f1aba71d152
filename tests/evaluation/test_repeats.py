"""Repeats: a run that plays every episode K times, its bundle, verify, and the noise it shows.

A fake OpenAI-compatible model on loopback answers the same request differently between
repeats: in one repeat it walks the oracle's path to the mark, in the other it keeps pressing
"up". The spread across repeats, the flip rate, the bootstrap interval and the tie marks are
checked against values worked out by hand from the two trajectories.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evaluation.agents import oracle_options
from evaluation.bundle import episode_results, read_bundle
from evaluation.cli import main
from evaluation.config import RunConfig, RunConfigError, bundle_header
from evaluation.metrics import (
    EpisodeResult,
    bootstrap_ci,
    rank_intervals,
    repeat_spread,
    scene_sums,
    tied_with_above,
)
from evaluation.run_file import config_from_header
from evaluation.verify import verify_bundle
from simulation.catalogue import scene_set
from simulation.dynamics import Action, EpisodeState
from tests.evaluation.fake_providers import FakeOpenAI, openai_completion

SCENE = "GR1_T2-shadow_hand-logo_0"
WANDER = Action.UP.value
"""What the fake answers, every step, in the repeat where it does not find the mark."""


class TwoMindedModel(FakeOpenAI):
    """Answers identical requests differently: the first episode to start walks the oracle's
    path, the second keeps answering "up" (the repeat's role is set by its first answer, and
    its history, which the prompt lists, tells the two apart from then on)."""

    def __init__(self) -> None:
        super().__init__()
        self.path_options = oracle_options(scene_set()[SCENE])
        self.starts = 0
        self._starts_lock = threading.Lock()

    def success_body(self, request: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(request.get("messages", []))
        moves = [int(o) for o in re.findall(r"\d+\. Option (\d),", text)]
        if not moves:
            with self._starts_lock:
                first = self.starts == 0
                self.starts += 1
            finds = first
        else:
            finds = moves == self.path_options[: len(moves)]
        option = self.path_options[len(moves)] if finds else WANDER
        return openai_completion(f"Thought: this way.\nChoice: [{option}]")


def by_hand(distances: list[int]) -> dict[str, float]:
    """The paper's Table I for one episode, written out (d_th = 1)."""
    steps = len(distances) - 1
    tsr = 1.0 if distances[-1] <= 1 else 0.0
    sir = sum(b < a for a, b in itertools.pairwise(distances)) / steps
    fcr = 1 - (distances[-1] - 1) / (distances[0] - 1)
    pcr = 1 - (min(distances) - 1) / (distances[0] - 1)
    return {"tsr": tsr, "sir": sir, "fcr": fcr, "pcr": pcr, "avg": (tsr + sir + fcr + pcr) / 4}


def trajectory(options: list[int]) -> list[int]:
    state = EpisodeState(scene_set()[SCENE])
    for option in options:
        if state.done:
            break
        state.step(Action(option))
    return state.distances


@pytest.fixture(scope="module")
def two_repeats(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundle of the two-minded model: one scene, level 0, two repeats, 32 px frames."""
    folder = tmp_path_factory.mktemp("repeats")
    out = folder / "model.jsonl"
    with pytest.MonkeyPatch.context() as patch, TwoMindedModel() as fake:
        patch.setenv("MIRRORBENCH_DATA_DIR", str(folder / "data"))
        patch.setenv("OPENAI_API_KEY", "sk-test-repeats")
        args = ["run", "--agent", "openai:two-minded", "--base-url", fake.base_url]
        args += ["--scenes", SCENE, "--levels", "0", "--repeats", "2", "--image-size", "32"]
        assert main([*args, "--workers", "1", "--render-threads", "1", "--out", str(out)]) == 0
    return out


def test_a_run_of_two_repeats_records_each_episode_twice_and_verifies(two_repeats):
    bundle = read_bundle(two_repeats)
    assert bundle.header["selection"]["repeats"] == 2
    assert sorted(e["repeat"] for e in bundle.episodes) == [0, 1]
    assert verify_bundle(bundle) == []
    # The repeats asked the model afresh: no answer came from the cache.
    assert not any(s.get("cached") for e in bundle.episodes for s in e["steps"])


def test_spread_flip_rate_interval_and_tie_equal_the_hand_computation(two_repeats):
    scene = scene_set()[SCENE]
    found = by_hand(trajectory(oracle_options(scene)))
    lost = by_hand(trajectory([WANDER] * scene.max_steps))
    assert found["tsr"] == 1.0 and lost["tsr"] == 0.0

    results = episode_results(read_bundle(two_repeats).episodes)
    spread = repeat_spread(results, table="0")
    assert spread is not None and spread.repeats == 2
    assert spread.low["avg"] == pytest.approx(lost["avg"])
    assert spread.high["avg"] == pytest.approx(found["avg"])
    assert spread.sd["avg"] == pytest.approx(abs(found["avg"] - lost["avg"]) / np.sqrt(2))
    assert (spread.paired, spread.flipped, spread.flip_rate) == (1, 1, 1.0)

    # One scene: resampling scenes changes nothing; each resample draws the scene's two
    # repeats with replacement: both the finding one (1/4), both the lost one (1/4), or one of
    # each (1/2). Each end has more than 2.5% of the resamples, so the interval runs from the
    # lost repeat's AVG to the finding one's.
    interval = bootstrap_ci(results)["levels"]["0"]["overall"]
    assert interval is not None
    assert interval["avg"] == pytest.approx((lost["avg"], found["avg"]))

    # Against a published row between the lost repeat and one of each, the model ranks 1st in
    # the draws with the finding repeat in them and 2nd when it draws the lost one twice: its
    # rank interval is 1-2, and the row below it (2-2) is statistically tied with it.
    path, wander = trajectory(oracle_options(scene)), trajectory([WANDER] * scene.max_steps)
    improving = sum(b < a for d in (path, wander) for a, b in itertools.pairwise(d))
    mixed_sir = improving / (len(path) - 1 + len(wander) - 1)  # SIR pools the steps
    mixed = (1 / 2 + mixed_sir + (found["fcr"] + lost["fcr"]) / 2) / 4
    mixed += (found["pcr"] + lost["pcr"]) / 2 / 4
    assert lost["avg"] < mixed < found["avg"]
    middle = (lost["avg"] + mixed) / 2
    ranks = rank_intervals({"model": scene_sums(results)}, table="0", fixed={"paper": middle})
    assert ranks == {"model": (1, 2)}
    assert tied_with_above([ranks["model"], (2, 2)]) == [False, True]
    # Its first repeat alone would have no interval to speak of, and no tie.
    finding = next(r for r in results if r.distances[-1] <= 1)
    first = [dataclasses.replace(finding, repeat=0)]
    alone = rank_intervals({"model": scene_sums(first)}, table="0", fixed={"paper": middle})
    assert alone == {"model": (1, 1)}


def test_the_score_command_reports_the_repeats(two_repeats, capsys):
    assert main(["score", str(two_repeats), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    # Level 0 only: there is no overall row, so no overall spread either.
    assert "repeats" not in document


def test_repeats_go_through_the_configuration_the_header_and_the_run_file():
    config = RunConfig.from_dict({"agent": "random", "repeats": 5})
    assert config.as_dict()["repeats"] == 5
    header = bundle_header(config, scenes=[SCENE])
    assert header["selection"]["repeats"] == 5
    assert config_from_header(header).repeats == 5
    assert "repeats" not in RunConfig(agent="random").as_dict()
    assert "repeats" not in bundle_header(RunConfig(agent="random"), scenes=[SCENE])["selection"]
    for bad in (0, 21, "two", True):
        with pytest.raises(RunConfigError) as error:
            RunConfig.from_dict({"agent": "random", "repeats": bad})
        assert error.value.field == "repeats"


def test_seeded_random_repeats_differ_and_verify_catches_a_missing_or_doubled_repeat(tmp_path):
    out = tmp_path / "random.jsonl"
    args = ["run", "--agent", "random", "--scenes", SCENE, "--repeats", "3", "--out", str(out)]
    assert main(args) == 0
    bundle = read_bundle(out)
    assert len(bundle.episodes) == 4 * 3 and verify_bundle(bundle) == []
    by_repeat = {r: [e["distances"] for e in bundle.episodes if e["repeat"] == r] for r in range(3)}
    assert by_repeat[0] != by_repeat[1] != by_repeat[2]
    results = episode_results(bundle.episodes)
    spread = repeat_spread(results)
    assert spread is not None and spread.repeats == 3
    assert spread.low["avg"] <= spread.high["avg"]
    # The first repeat is the run of one repeat with the same seed, episode for episode.
    single = tmp_path / "single.jsonl"
    assert main(["run", "--agent", "random", "--scenes", SCENE, "--out", str(single)]) == 0
    assert sorted(e["distances"] for e in read_bundle(single).episodes) == sorted(by_repeat[0])

    lines = out.read_text().splitlines()
    doubled = json.loads(lines[2])
    doubled["repeat"] = json.loads(lines[1])["repeat"]
    doubled["level"] = json.loads(lines[1])["level"]
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines[:2], json.dumps(doubled), *lines[3:]]) + "\n")
    problems = verify_bundle(read_bundle(broken))
    assert any("duplicate" in p for p in problems)
    assert any(p.startswith("missing episode:") and "repeat" in p for p in problems)


def test_an_episode_result_keeps_its_repeat_and_twice_the_same_repeat_is_refused():
    a = EpisodeResult(SCENE, "Robot", 0, (3, 2, 1), repeat=1)
    with pytest.raises(ValueError, match="repeat 1"):
        repeat_spread([a, a], table="0")
