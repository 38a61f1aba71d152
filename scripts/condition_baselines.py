"""The baselines on every condition: what each control condition separates (issue 36).

Plays the oracle, random (seed 0), mirror-confused and chest baselines on the 66 scenes x 4
levels under each condition, as ``mirrorbench run --agent NAME --condition NAME`` would (the
same runner, no images: baselines never look), and prints TSR and AVG per level (pooled over
both tracks, the paper's Overall column) as a Markdown table; ``--json FILE`` also writes every
cell of every level table.

    .venv/bin/python scripts/condition_baselines.py [--json figures.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from evaluation.bundle import episode_results
from evaluation.config import RunConfig, agent_factory
from evaluation.metrics import ScoreJSON, score_json
from evaluation.runner import run_episode
from evaluation.vocabulary import CONDITIONS, LEVEL_KEYS, LEVELS, OVERALL, condition_label
from simulation.catalogue import scene_set

AGENTS = ("oracle", "random", "mirror-confused", "chest")
SEED = 0


def baseline_scores(agent: str, condition: str) -> ScoreJSON:
    """Return the ``mirrorbench score --json`` document of ``agent`` on every episode."""
    config = RunConfig(agent, seed=SEED, condition=condition)
    make_agent = agent_factory(config)
    records = [
        run_episode(scene, level, make_agent(), seed=SEED)
        for scene in scene_set(condition).values()
        for level in LEVELS
    ]
    return score_json(episode_results(records))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write every level table here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    scores = {a: {c: baseline_scores(a, c) for c in CONDITIONS} for a in AGENTS}
    head = " | ".join(f"L{k} TSR | L{k} AVG" for k in LEVEL_KEYS)
    print(f"| agent | condition | {head} | Overall TSR | Overall AVG |")
    print("|---|---|" + "---|" * (2 * len(LEVEL_KEYS) + 2))
    for agent, by_condition in scores.items():
        for condition, document in by_condition.items():
            cells = [document["levels"][k][OVERALL] for k in LEVEL_KEYS]
            cells.append(document["overall"][OVERALL])
            values = " | ".join(f"{c['tsr']:.3f} | {c['avg']:.3f}" if c else "- | -" for c in cells)
            print(f"| {agent} | {condition_label(condition)} | {values} |")
    seconds = time.perf_counter() - started
    episodes = len(AGENTS) * len(CONDITIONS) * len(scene_set()) * len(LEVELS)
    print(f"\n{episodes} episodes in {seconds:.1f} s", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(scores, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
