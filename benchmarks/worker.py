"""Worker benchmark: a worker's CPU for a 264-episode baseline run, episode by episode.

A random run (66 scenes x 4 levels, 32 px) is played in this process by the worker's own code
(``leaderboard.worker.episode_evaluate`` for each episode, as a Celery task would call it) in a
throwaway SQLite database, and its CPU time is measured (``time.process_time``). Two ways, each
``ROUNDS`` times, alternating:

* **together**: as the site does, a baseline's steps stored together when its episode ends;
* **per step**: every step stored in a transaction of its own as it happens, as a model's are
  (the worker is made to take the random agent for a model's).

It prints the medians and their ratio (target: per step / together >= 1.5).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

ROUNDS = 3
TARGET_RATIO = 1.5


def _play_run(*, per_step: bool) -> tuple[float, int]:
    """Play a fresh random run; return its CPU seconds and its episodes."""
    from evaluation.config import RunConfig
    from leaderboard import worker
    from leaderboard.boards.entries import model_entry_upsert
    from leaderboard.runs.services import run_create, run_start

    entry = model_entry_upsert(name="Random", kind="baseline")
    run = run_create(model_entry=entry, config=RunConfig(agent="random", image_size=32))
    episodes = run_start(run_id=run.pk)
    model = object if per_step else worker.ModelAgent  # every agent is a model's, or as it is
    with mock.patch.object(worker, "ModelAgent", model):
        started = time.process_time()
        outcomes = [worker.episode_evaluate(episode_id=pk) for pk in episodes]
        spent = time.process_time() - started
    assert outcomes == ["completed"] * len(episodes), set(outcomes)
    return spent, len(episodes)


def main() -> None:
    data = Path(tempfile.mkdtemp(prefix="mirrorbench-bench-"))
    os.environ["MIRRORBENCH_DATA_DIR"] = str(data)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mirrorbench_site.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    spent: dict[str, list[float]] = {"together": [], "per step": []}
    episodes = 0
    for _ in range(ROUNDS):
        for name in spent:
            seconds, episodes = _play_run(per_step=name == "per step")
            spent[name].append(seconds)
    print(f"worker: a {episodes}-episode random run played by episode_evaluate, CPU s")
    for name, rounds in spent.items():
        median = statistics.median(rounds)
        runs = ", ".join(f"{s:.2f}" for s in rounds)
        print(
            f"  {name:9} median {median:6.2f} s ({1000 * median / episodes:.1f} ms an episode)"
            f"  rounds: {runs}"
        )
    ratio = statistics.median(spent["per step"]) / statistics.median(spent["together"])
    verdict = "ok" if ratio >= TARGET_RATIO else "BELOW TARGET"
    print(f"  ratio per step / together: {ratio:.2f} (target >= {TARGET_RATIO}) {verdict}")


if __name__ == "__main__":
    main()
