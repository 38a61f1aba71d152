"""What a run will cost before it starts: requests, tokens and, given prices, money.

Estimates, not bills: the number of steps depends on the model (an episode ends early at the
mark), and token counts on the provider's tokenizer. The figures use:

- requests: one per step; at most each scene's step budget (15 to 21, by body), and about the
  ``typical_steps`` a baseline took per episode (the caller passes it; ``TYPICAL_STEPS`` when
  none is known: the random policy's mean over the 264 episodes of protocol v2, which rarely
  reaches the mark, as most models do not);
- input tokens: the prompt's text at 4 characters a token (the system message, the task, the
  moves so far, the instructions; ``evaluation.prompts``), plus the images: the current view and,
  after the first step, the previous one, at ``IMAGE_TOKENS`` each;
- output tokens: ``OUTPUT_TOKENS`` a reply (a short reasoning and an option), at most the
  run's ``max_tokens`` when it sets one (by default none is sent: protocol v3). A typical reply,
  not the cap: Anthropic runs send the model's maximum output as ``max_tokens``, which bounds
  nothing in practice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.messages import ImagePart, TextPart
from evaluation.prompts import HistoryEntry, build_messages
from simulation.catalogue import Scene

TYPICAL_STEPS = 19.1
"""Steps per episode of the random baseline (protocol v2, all 264 episodes)."""
CHARS_PER_TOKEN = 4.0
OUTPUT_TOKENS = 250
IMAGE_TOKENS: Mapping[str, int] = {
    # A 1024 x 1024 image: OpenAI scales it to 768 x 768, four 512-pixel tiles at 170 tokens
    # each plus 85 (high detail); Anthropic counts width x height / 750.
    "openai": 765,
    "anthropic": 1398,
}
DEFAULT_IMAGE_TOKENS = 1000


@dataclass(frozen=True)
class RunEstimate:
    """The expected size of a run (``estimate_run``)."""

    episodes: int
    requests: int
    requests_max: int
    steps_per_episode: float
    input_tokens: int
    output_tokens: int
    cost_usd: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "episodes": self.episodes,
            "requests": self.requests,
            "requests_max": self.requests_max,
            "steps_per_episode": round(self.steps_per_episode, 1),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
        }


def _text_tokens(scene: Scene, level: int, moves: int) -> float:
    """Return the text tokens of the prompt at the step after ``moves`` moves."""
    history = [HistoryEntry(option=1 + i % 6, executed=True) for i in range(moves)]
    image = ImagePart(png=b"", width=0, height=0)
    messages = build_messages(scene, level, history, [image] if moves else [], image)
    chars = sum(len(p.text) for m in messages for p in m.parts if isinstance(p, TextPart))
    return chars / CHARS_PER_TOKEN


def estimate_run(
    *,
    scenes: Sequence[Scene],
    levels: Sequence[int],
    provider: str,
    typical_steps: float = TYPICAL_STEPS,
    price: Mapping[str, Any] | None = None,
    max_tokens: int | None = None,
    repeats: int = 1,
) -> RunEstimate:
    """Return the expected requests, tokens and cost of running ``scenes`` x ``levels``,
    ``repeats`` times each (every repeat asks afresh: K repeats cost K times one).

    ``price`` is a ``MIRRORBENCH_PRICES`` entry: ``input_per_mtok`` and ``output_per_mtok`` in US
    dollars per million tokens; without one the cost is None.
    """
    episodes = len(scenes) * len(levels) * repeats
    requests_max = sum(s.max_steps for s in scenes) * len(levels) * repeats
    image = IMAGE_TOKENS.get(provider, DEFAULT_IMAGE_TOKENS)
    requests = 0.0
    input_tokens = 0.0
    for scene in scenes:
        steps = min(float(scene.max_steps), typical_steps)
        requests += steps * len(levels)
        for level in levels:
            # The prompt grows by one line a move: the mean of its first and last step.
            text = (_text_tokens(scene, level, 0) + _text_tokens(scene, level, scene.max_steps)) / 2
            images = 2 - 1 / steps if steps else 1  # the previous view from the second step on
            input_tokens += steps * (text + images * image)
    requests *= repeats
    input_tokens *= repeats
    per_reply = OUTPUT_TOKENS if max_tokens is None else min(OUTPUT_TOKENS, max_tokens)
    output_tokens = requests * per_reply
    cost = None
    if price:
        cost = round(
            (
                input_tokens * float(price.get("input_per_mtok", 0))
                + output_tokens * float(price.get("output_per_mtok", 0))
            )
            / 1e6,
            2,
        )
    return RunEstimate(
        episodes=episodes,
        requests=round(requests),
        requests_max=requests_max,
        steps_per_episode=requests / episodes if episodes else 0.0,
        input_tokens=round(input_tokens),
        output_tokens=round(output_tokens),
        cost_usd=cost,
    )
