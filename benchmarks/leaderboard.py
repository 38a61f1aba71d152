"""Leaderboard benchmark: server time of ``/`` and ``/leaderboard/overall.csv`` at scale.

200 model entries, each with a 264-episode run (synthetic: random-agent bundles with
different seeds, imported through the real services), in a throwaway SQLite database.
Target: at most 100 ms per request (median), since scores are aggregated once per result.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ENTRIES = int(os.environ.get("BENCH_ENTRIES", "200"))
BUNDLES = 10
REQUESTS = 21
TARGET_MS = 100.0


def main() -> None:
    data = Path(tempfile.mkdtemp(prefix="mirrorbench-bench-"))
    os.environ["MIRRORBENCH_DATA_DIR"] = str(data)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mirrorbench_site.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from evaluation.agents import RandomAgent
    from evaluation.bundle import read_bundle
    from evaluation.runner import run
    from leaderboard.services.entries import model_entry_upsert
    from leaderboard.services.imports import run_import_bundle
    from simulation.catalogue import select_scenes

    call_command("migrate", verbosity=0)
    with open(os.devnull, "w") as quiet:
        call_command("load_reference_results", stdout=quiet)
    scenes = select_scenes("all")
    bundles = []
    for seed in range(BUNDLES):
        path = data / f"random-{seed}.jsonl"
        run(
            lambda seed=seed: RandomAgent(seed),
            scenes,
            [0, 1, 2, 3],
            path,
            seed=seed,
            header_extra={"model": None, "generation": None},
        )
        bundles.append(read_bundle(path))
    start = time.perf_counter()
    kinds = ["proprietary", "open-weights"]
    for i in range(ENTRIES):
        entry = model_entry_upsert(
            name=f"Synthetic model {i:03d}", kind=kinds[i % 2], params_b=float(1 + i % 80)
        )
        run_import_bundle(
            model_entry=entry, bundle=bundles[i % BUNDLES], source="evaluated", with_steps=False
        )
    setup_s = time.perf_counter() - start
    client = Client(SERVER_NAME="localhost")
    print(
        f"MirrorBench leaderboard benchmark: {ENTRIES} entries x 264 episodes + the paper's 20 rows"
    )
    print(
        f"(imported in {setup_s:.0f} s; median of {REQUESTS} requests through the Django test "
        "client: server time)"
    )
    for url in (
        "/",
        "/leaderboard/overall.csv",
        "/levels/2/",
        "/?kind=open-weights&sort=robot_avg&order=desc",
    ):
        times = []
        for _ in range(REQUESTS):
            t = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - t) * 1000)
            assert response.status_code == 200, url
        ms = statistics.median(times)
        print(f"{url:48} {ms:7.1f} ms   target {TARGET_MS:.0f} ms, ratio {ms / TARGET_MS:.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
