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

from benchmarks.load import ENTRIES, build_data_dir

REQUESTS = 21
TARGET_MS = 100.0


def main() -> None:
    data = Path(tempfile.mkdtemp(prefix="mirrorbench-bench-"))
    os.environ["MIRRORBENCH_DATA_DIR"] = str(data)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mirrorbench_site.settings")
    setup_s = build_data_dir(data)
    from django.test import Client

    client = Client(SERVER_NAME="localhost")
    print(
        f"MirrorBench leaderboard benchmark: {ENTRIES} entries x 264 episodes + the paper's 20 rows"
    )
    print(
        f"(built in {setup_s:.0f} s; median of {REQUESTS} requests through the Django test "
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
