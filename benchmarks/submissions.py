"""Submission benchmark (``make bench``): verifying an uploaded bundle on the server.

A full 264-episode bundle played by the random agent, with every response padded to the length
of a reasoning model's answer (``BENCH_RESPONSE_CHARS``, default 1,500 characters), goes
through ``services.submissions.submission_create`` as an upload: spooled and hashed, read,
replayed (``evaluation.verify``) and stored as a private run. Prints the median wall time of
``BENCH_REPEATS`` uploads (each a new user, so none is a duplicate) and the peak of memory
allocated while verifying (tracemalloc) and the process's peak resident memory.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

RESPONSE_CHARS = int(os.environ.get("BENCH_RESPONSE_CHARS", "1500"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "5"))


def _bundle(folder: Path) -> Path:
    from evaluation.agents import RandomAgent
    from evaluation.config import RunConfig
    from evaluation.runner import run

    plain = folder / "random.jsonl"
    run(RandomAgent, RunConfig(agent="random"), plain)
    padded = folder / "padded.jsonl"
    filler = ("I look at the mirror and compare the hand with the mark. " * 40)[:RESPONSE_CHARS]
    with plain.open() as src, padded.open("w") as out:
        for line in src:
            record = json.loads(line)
            for step in record.get("steps", []):
                step["response"] = filler + "\n" + step["response"]
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
    return padded


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="mirrorbench-bench-"))
    os.environ["MIRRORBENCH_DATA_DIR"] = str(folder / "data")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mirrorbench_site.settings")
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from leaderboard.submissions.services import submission_create

    with open(os.devnull, "w") as quiet:
        call_command("prepare_data_dir", stdout=quiet)
        call_command("migrate", verbosity=0)
    bundle = _bundle(folder)
    size = bundle.stat().st_size
    data = {"model_name": "", "kind": "open-weights"}
    times, peaks = [], []
    for i in range(REPEATS + 1):
        user = User.objects.create_user(f"bench{i}", is_staff=True)  # staff: no caps
        traced = i == REPEATS  # the last upload measures memory (tracemalloc slows it down)
        with bundle.open("rb") as handle:
            chunks = iter(lambda: handle.read(1024 * 1024), b"")
            if traced:
                tracemalloc.start()
            start = time.perf_counter()
            done = submission_create(user=user, chunks=chunks, data={**data, "model_name": f"M{i}"})
            if traced:
                peaks.append(tracemalloc.get_traced_memory()[1])
                tracemalloc.stop()
            else:
                times.append(time.perf_counter() - start)
        assert done.submission.episodes == 264 and not done.duplicate
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"MirrorBench submission benchmark: a {size / 2**20:.1f} MiB bundle (264 episodes, "
        f"{RESPONSE_CHARS}-character responses), {REPEATS} uploads"
    )
    print(
        f"  spool, read, verify and store (scores, intervals, behaviour): median "
        f"{statistics.median(times) * 1000:.0f} ms"
    )
    print(
        f"  memory allocated while verifying: peak {statistics.median(peaks) / 2**20:.0f} MiB "
        f"(tracemalloc); process peak RSS {rss_mib:.0f} MiB"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
