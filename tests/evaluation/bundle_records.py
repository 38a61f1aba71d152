"""Bundle records written by hand for the export tests (details, Every Eval Ever): a model
run's header and an episode that ended in a provider error after one unparsed answer."""

from __future__ import annotations

from typing import Any

SCENE = "male_0-mano_white-splash"


def model_header() -> dict[str, Any]:
    """The header of run 7 of ``openai:gpt-4o`` at 256 px."""
    return {
        "type": "header",
        "agent": {"name": "openai:gpt-4o", "kind": "model"},
        "model": {"provider": "openai", "model": "gpt-4o", "base_url": None},
        "generation": {"temperature": 0.0, "max_tokens": 2048, "seed": 3},
        "benchmark": {"version": "v3", "scene_set": "v2", "prompt_version": "v3"},
        "renderer": {"version": "r", "image_size": 256},
        "tool": {"name": "mirrorbench", "version": "0.1.0", "run": 7},
    }


def errored_episode(*, finished: str | None = None) -> dict[str, Any]:
    """A level-3 episode of ``SCENE`` whose one answer named no option (1,200 tokens in, 30
    out, 1.5 s), then ended on a 429; ``finished`` when it records its end."""
    step = {
        "index": 0,
        "response": "Choice: [9]",
        "option": None,
        "parse_error": "no option 1-6",
        "executed": False,
        "distance_steps": 5,
        "hand_cell": [0, 0, 0],
        "frame_key": "ab" * 20,
        "input_tokens": 1200,
        "output_tokens": 30,
        "latency_s": 1.5,
    }
    episode: dict[str, Any] = {
        "type": "episode",
        "scene_id": SCENE,
        "track": "Human",
        "level": 3,
        "status": "error",
        "error": "[rate_limited HTTP 429] slow down",
        "d0_steps": 5,
        "max_steps": 20,
        "success": False,
        "distances": [5, 5],
        "steps": [step],
        "metrics": None,
        "started": "2026-12-01T10:00:00+00:00",
    }
    if finished is not None:
        episode["finished"] = finished
    return episode
