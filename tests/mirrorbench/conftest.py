"""Inspect runs of a small selection, made once per test session (per xdist worker).

Inspect AI is the ``inspect`` extra: every test here asks for it first (``inspect_installed``,
with ``tests.parts``), so a machine without it skips them and CI fails them. It loads when the
first of them runs, not when pytest collects their modules (about 2 s of CPU in every xdist
worker). Logs go to the session's temporary folders.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evaluation.cli import main
from evaluation.outbound import ALLOW_PRIVATE_ENV
from tests.evaluation.fake_providers import FakeOpenAI
from tests.parts import import_part

SCENES = ("male_1-mano_brown-leaf_0", "female_0-mano_white-bread")
"""Two human scenes (a robot's first frame takes seconds to compile here)."""
LEVELS = (0, 3)
IMAGE_SIZE = 32
SCRIPT = [
    # male_1's shortest path (oracle_options): it reaches the mark at step 9; female_0 does not.
    # A long answer first: a log keeps texts over 100 characters apart (as attachments).
    "Thought: (0) I have not moved backward yet, so I move backward first to reach the depth "
    "of my body.\nChoice: [6]",
    *["Choice: [6]"] * 3,
    *["Choice: [4]"] * 4,
    "Choice: [2]",
    "I cannot tell where my hand is.",  # a bad response
    "**Choice:** [5]",  # falls through to the last number: 5
    "Choice 3 (move left); step 2",  # 3
    "Choice: [6]",  # repeated to the end: the body stops the hand (collisions)
]


@pytest.fixture(scope="session", autouse=True)
def inspect_installed() -> None:
    """Skip the test, or fail it under CI, where Inspect AI cannot be imported. Set up before
    the session's Inspect runs (an autouse fixture comes first among those of its scope)."""
    import_part("inspect_ai", "Inspect AI", "make install installs it (the inspect extra)")


def inspect_eval(log_dir: Path, model: Any, **options: Any) -> Path:
    """Run mirror_test on ``SCENES`` x ``LEVELS`` at ``IMAGE_SIZE``; return the log's path."""
    from inspect_ai import eval as inspect_eval_

    task_args = {
        "levels": ",".join(map(str, LEVELS)),
        "scenes": ",".join(SCENES),
        "image_size": IMAGE_SIZE,
        **options.pop("task_args", {}),
    }
    (log,) = inspect_eval_(
        "mirrorbench/mirror_test",
        model=model,
        task_args=task_args,
        log_dir=str(log_dir),
        display="none",
        **options,
    )
    assert log.status == "success", log.error
    assert log.location
    return Path(log.location)


def engine_run(out: Path, agent: str, *extra: str, levels: tuple[int, ...] = LEVELS) -> Path:
    """Write the bundle of ``mirrorbench run`` on the same selection."""
    args = ["run", "--agent", agent, "--levels", ",".join(map(str, levels))]
    args += ["--scenes", ",".join(SCENES), "--image-size", str(IMAGE_SIZE), "--out", str(out)]
    assert main([*args, "--no-cache", *extra]) == 0
    return out


@pytest.fixture(scope="session")
def script_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("script") / "answers.json"
    path.write_text(json.dumps(SCRIPT))
    return path


@pytest.fixture(scope="session")
def scripted_log(tmp_path_factory: pytest.TempPathFactory, script_file: Path) -> Path:
    """The log of ``mirrorbench/scripted`` playing ``SCRIPT``."""
    return inspect_eval(
        tmp_path_factory.mktemp("logs"),
        "mirrorbench/scripted",
        model_args={"script": str(script_file)},
    )


@pytest.fixture(scope="session")
def scripted_bundle(tmp_path_factory: pytest.TempPathFactory, script_file: Path) -> Path:
    """``mirrorbench run --agent scripted:FILE`` on the same selection."""
    return engine_run(tmp_path_factory.mktemp("run") / "scripted.jsonl", f"scripted:{script_file}")


@pytest.fixture(scope="session")
def fake_openai_runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, list[Any], Path, list[Any]]]:
    """One model behind a fake OpenAI-compatible server on loopback, evaluated by Inspect
    (``openai/gpt-4o``) and by ``mirrorbench run`` (``openai:gpt-4o``), on level 1 of the first
    scene: the log, Inspect's requests, the bundle, the engine's requests."""
    with pytest.MonkeyPatch.context() as patch, FakeOpenAI() as server:
        patch.setenv(ALLOW_PRIVATE_ENV, "1")
        patch.setenv("OPENAI_API_KEY", "sk-fake")
        log = inspect_eval(
            tmp_path_factory.mktemp("logs"),
            "openai/gpt-4o",
            model_base_url=server.base_url,
            task_args={"levels": "1", "scenes": SCENES[0]},
            log_model_api=True,  # every raw response, with its system fingerprint
        )
        from_inspect = list(server.requests)
        server.requests.clear()
        out = tmp_path_factory.mktemp("run") / "gpt-4o.jsonl"
        args = ["run", "--agent", "openai:gpt-4o", "--base-url", server.base_url]
        args += ["--levels", "1", "--scenes", SCENES[0], "--image-size", str(IMAGE_SIZE)]
        assert main([*args, "--no-cache", "--out", str(out)]) == 0
        yield log, from_inspect, out, list(server.requests)


def _mock_answer(text: str) -> Callable[..., Any]:
    """An answer for Inspect's mock model, with its usage (the mock counts tokens with tiktoken
    otherwise, whose files it would download)."""
    from inspect_ai.model import ModelOutput, ModelUsage

    def answer(*args: Any) -> ModelOutput:
        output = ModelOutput.from_content(model="mockllm", content=text)
        output.usage = ModelUsage(input_tokens=100, output_tokens=len(text), total_tokens=110)
        return output

    return answer


@pytest.fixture
def mock_answer() -> Callable[[str], Callable[..., Any]]:
    return _mock_answer
