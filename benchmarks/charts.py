"""Charts benchmark: time to build each chart's JSON at scale.

200 model entries (BENCH_ENTRIES), each with a 264-episode run (``benchmarks.load``'s synthetic
board: random-agent bundles imported through the real services, cognitive stability stored as
the scores are computed), plus the paper's rows, in a throwaway SQLite database. For each chart
it reports the median of REQUESTS builds of the JSON in-process (selector, figure,
``json.dumps``) and of requests to its API endpoint and the pages through the Django test
client (server time). Target: at most 250 ms per chart (median); the figures are for comparing
code, not a capacity estimate. It also reports the median time to build each figure alone, from
selector output made once (``figures.*_figure`` and ``cost.cost_figure``, without ``json.dumps``).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.load import ENTRIES, build_data_dir

REQUESTS = 21
TARGET_MS = 250.0


def _median_ms(work: Callable[[], Any]) -> float:
    times = []
    for _ in range(REQUESTS):
        start = time.perf_counter()
        work()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    data = Path(tempfile.mkdtemp(prefix="mirrorbench-bench-"))
    os.environ["MIRRORBENCH_DATA_DIR"] = str(data)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mirrorbench_site.settings")
    setup_s = build_data_dir(data)
    from django.test import Client

    from leaderboard.boards.selectors import tracks_page
    from leaderboard.charts import figures
    from leaderboard.charts.cost import cost_figure
    from leaderboard.charts.selectors import chart_runs, chart_runs_for, cost_points, default_slugs

    picked = ["synthetic-model-000", "synthetic-model-001", "gpt-41-api", "random"]

    def build(figure: Callable[[], figures.Chart]) -> Callable[[], str]:
        return lambda: json.dumps(figures.chart_json(figure()))

    def tracks() -> figures.Chart:
        page = tracks_page()
        return figures.tracks_figure(page.table_iii, page.models)

    builders: dict[str, Callable[[], str]] = {
        "stability (Fig. 2)": build(lambda: figures.stability_figure(chart_runs())),
        "stability ranking (Fig. 5)": build(lambda: figures.stability_ranking_figure(chart_runs())),
        "radar, 4 models": build(
            lambda: figures.radar_figure(chart_runs_for(version="v2", slugs=picked))
        ),
        "trajectories, 4 models": build(
            lambda: figures.trajectories_figure(chart_runs_for(version="v2", slugs=picked))
        ),
        "radar, default models": build(
            lambda: figures.radar_figure(
                chart_runs_for(version="v2", slugs=default_slugs(chart_runs()))
            )
        ),
        "tracks (Table III)": build(tracks),
    }
    shown = len(figures.stability_runs(chart_runs()))
    print(f"MirrorBench charts benchmark: {ENTRIES} entries x 264 episodes + the paper's 20 rows")
    print(
        f"(built in {setup_s:.0f} s; {shown} models on Fig. 2; median of {REQUESTS} builds: "
        "selector + figure + json.dumps, in-process)"
    )
    for name, work in builders.items():
        ms = _median_ms(work)
        size = len(work()) / 1024
        print(f"{name:32} {ms:7.1f} ms  {size:6.0f} KiB   target {TARGET_MS:.0f} ms")
    runs = chart_runs()
    four = chart_runs_for(version="v2", slugs=picked)
    defaults = chart_runs_for(version="v2", slugs=default_slugs(runs))
    points = cost_points(runs=runs)
    page = tracks_page()
    alone: dict[str, Callable[[], figures.Chart]] = {
        "stability (Fig. 2)": lambda: figures.stability_figure(runs),
        "stability ranking (Fig. 5)": lambda: figures.stability_ranking_figure(runs),
        "radar, 4 models": lambda: figures.radar_figure(four),
        "trajectories, 4 models": lambda: figures.trajectories_figure(four),
        "radar, default models": lambda: figures.radar_figure(defaults),
        "tracks (Table III)": lambda: figures.tracks_figure(page.table_iii, page.models),
        f"cost ({len(points)} runs)": lambda: cost_figure(points),
    }
    print(f"(median of {REQUESTS} builds of the figure alone: selector output made once)")
    for name, chart in alone.items():
        print(f"{name:32} {_median_ms(chart):7.2f} ms")
    print(f"(median of {REQUESTS} requests through the Django test client: server time)")
    client = Client(SERVER_NAME="localhost")
    query = "&".join(f"m={slug}" for slug in picked)
    for url in (
        "/api/charts/stability/",
        "/api/charts/stability-ranking/",
        f"/api/charts/radar/?{query}",
        f"/api/charts/trajectories/?{query}",
        "/api/charts/tracks/",
        "/charts/",
        f"/compare/?{query}",
        "/models/synthetic-model-000/",
    ):

        def get(url: str = url) -> None:
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)

        ms = _median_ms(get)
        print(f"{url.replace(query, 'm=(4 models)'):48} {ms:7.1f} ms")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
