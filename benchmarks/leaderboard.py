"""Leaderboard benchmark: server time of ``/`` and ``/leaderboard/overall.csv`` at scale.

200 model entries, each with a 264-episode run (synthetic: random-agent bundles with
different seeds, imported through the real services), in a throwaway SQLite database.
Target: at most 100 ms per request (median), since scores are aggregated once per result, and
5 ms once the table is cached (``services.data_version``: until the next new result). Each URL is
measured both ways: after a data version bump (uncached) and again (cached).
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
CACHED_TARGET_MS = 5.0


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
    from leaderboard.data_version import data_version_bump, data_version_cache_clear

    print(f"{'':48} {'uncached':>10} {'cached':>9}")
    for url in (
        "/",
        "/leaderboard/overall.csv",
        "/levels/2/",
        "/?kind=open-weights&sort=robot_avg&order=desc",
    ):
        figures = []
        for cached in (False, True):
            times = []
            for _ in range(REQUESTS):
                if not cached:  # a new result: every cached table is stale
                    data_version_bump()
                    data_version_cache_clear()
                t = time.perf_counter()
                response = client.get(url)
                times.append((time.perf_counter() - t) * 1000)
                assert response.status_code == 200, url
            figures.append(statistics.median(times))
        uncached, cached_ms = figures
        print(
            f"{url:48} {uncached:7.1f} ms {cached_ms:6.2f} ms   target {TARGET_MS:.0f} ms "
            f"uncached, {CACHED_TARGET_MS:.0f} ms cached"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
