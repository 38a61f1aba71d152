"""Engine benchmark: a full random-agent run (264 episodes, no rendering) and ``verify``.

Prints the median wall time of each over a few repetitions. Target for verify: well under a
second per 264-episode bundle.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from evaluation.agents import RandomAgent
from evaluation.bundle import read_bundle
from evaluation.config import RunConfig
from evaluation.runner import run
from evaluation.verify import verify_bundle

REPEATS = 5


def main() -> None:
    runs, verifies = [], []
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "random.jsonl"
        for seed in range(REPEATS):
            start = time.perf_counter()
            run(lambda seed=seed: RandomAgent(seed), RunConfig(agent="random", seed=seed), out)
            runs.append(time.perf_counter() - start)
            start = time.perf_counter()
            problems = verify_bundle(read_bundle(out))
            verifies.append(time.perf_counter() - start)
            assert not problems, problems[:3]
        size_kb = out.stat().st_size / 1024
    print(f"MirrorBench engine benchmark ({REPEATS} repeats, medians)")
    print(f"random agent, 264 episodes, no rendering: {statistics.median(runs) * 1000:8.0f} ms")
    verify_s = statistics.median(verifies)
    print(
        f"verify one 264-episode bundle ({size_kb:.0f} KiB): {verify_s * 1000:8.0f} ms"
        f"   target < 1000 ms, ratio {verify_s:.2f}"
    )


if __name__ == "__main__":
    main()
