"""Search benchmark: a query's server time over generated responses on a real PostgreSQL.

A throwaway PostgreSQL cluster (``tests/leaderboard/postgres.py``: Debian's postgresql), the
site's migrations, then ``BENCH_SEARCH_RUNS`` public runs (default 1,000) of 264 episodes of
``BENCH_SEARCH_STEPS`` steps each (default 19: about 5 million steps for 1,000 runs), their
responses made from a model-like vocabulary (a few common words, many rare ones, the moves'
phrases). Steps are loaded with COPY and the GIN index built once after (PostgreSQL maintains
it the same way as steps are stored one by one; building it at the end only loads faster).
Each query of ``QUERIES`` then runs ``BENCH_SEARCH_REPEATS`` times (default 7) through
``leaderboard.search.selectors.step_search``, the page's own read (the steps, their frames):
the time printed is the server's, from the call to the hits in hand.

    .venv/bin/python -m benchmarks.search                       # 1,000 runs, ~5M steps
    BENCH_SEARCH_RUNS=100 .venv/bin/python -m benchmarks.search # a tenth
"""

from __future__ import annotations

import io
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUNS = int(os.environ.get("BENCH_SEARCH_RUNS", "1000"))
STEPS = int(os.environ.get("BENCH_SEARCH_STEPS", "19"))
REPEATS = int(os.environ.get("BENCH_SEARCH_REPEATS", "7"))
TARGET_MS = 200

COMMON = [
    *("i", "the", "hand", "mark", "mirror", "move", "see", "my", "to", "is", "in", "chest"),
    *("body", "reflection", "left", "right", "up", "down", "forward", "backward", "closer"),
    *("choice", "step", "now", "it", "a", "of", "and", "towards", "image"),
]
MOVES = ("move up", "move down", "move left", "move right", "move forward", "move backward")
QUERIES: list[tuple[str, dict[str, object]]] = [
    ("mirror", {}),
    ("reflection hand", {}),
    ('"my own hand"', {}),
    ("mirr*", {}),
    ("mirror -left", {}),
    ("periscope", {}),
    ("periscope", {"level": 3, "track": "robot"}),
    ("hand", {"model": "model-7", "outcome": "success"}),
]


def _response(rng: random.Random, rare: list[str]) -> str:
    words = rng.choices(COMMON, k=rng.randint(12, 40))
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words) + 1), rng.choice(rare))
    if rng.random() < 0.05:
        words.insert(0, "my own hand")
    return " ".join(words) + f". I {rng.choice(MOVES)}. Choice: [{rng.randint(1, 6)}]"


def _generate(seed: int = 0) -> int:
    """Store RUNS runs with their episodes and steps; return the number of steps."""
    from django.db import connection

    from leaderboard.boards.entries import benchmark_current
    from leaderboard.models import Episode, ModelEntry, Run
    from leaderboard.search.index import step_search_index_drop, step_search_index_ensure

    rng = random.Random(seed)
    rare = [f"rare{n}" for n in range(5000)] + ["periscope"]
    version = benchmark_current()
    scenes = list(version.scenes.all())
    entries = ModelEntry.objects.bulk_create(
        ModelEntry(name=f"Model {n}", slug=f"model-{n}", kind=ModelEntry.Kind.PROPRIETARY)
        for n in range(max(1, RUNS // 10))
    )
    step_search_index_drop(connection=connection)
    total = 0
    for start in range(0, RUNS, 20):
        runs = Run.objects.bulk_create(
            Run(
                model_entry=entries[n % len(entries)],
                benchmark=version,
                source=Run.Source.EVALUATED,
                status=Run.Status.COMPLETED,
                visibility=Run.Visibility.PUBLIC,
            )
            for n in range(start, min(RUNS, start + 20))
        )
        episodes = Episode.objects.bulk_create(
            Episode(
                run=run,
                scene=scene,
                level=level,
                status=Episode.Status.COMPLETED,
                success=rng.random() < 0.3,
                steps_taken=STEPS,
            )
            for run in runs
            for scene in scenes
            for level in range(4)
        )
        rows = io.StringIO()
        for episode in episodes:
            for index in range(STEPS):
                text = _response(rng, rare).replace("\\", "").replace("\t", " ")
                rows.write(f"{episode.pk}\t{index}\t{text}\t3\t\tt\t2\t[0, 0, 0]\t\tf\t{{}}\n")
                total += 1
        with connection.cursor() as cursor:
            raw = cursor.connection
            with raw.cursor().copy(
                "COPY leaderboard_step (episode_id, index, response, option, parse_error, "
                "executed, distance_steps, hand_cell, frame_key, cached, request) FROM STDIN"
            ) as copy:
                copy.write(rows.getvalue())
        print(f"  {min(RUNS, start + 20)} runs, {total:,} steps", flush=True)
    began = time.perf_counter()
    step_search_index_ensure(connection=connection)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(f"  GIN index built and analysed in {time.perf_counter() - began:.0f} s", flush=True)
    return total


def _measure() -> list[tuple[str, float, int]]:
    from leaderboard.search.query import parse_query
    from leaderboard.search.selectors import step_search, step_search_queryset

    rows = []
    for text, filters in QUERIES:
        query = parse_query(text)
        times = []
        for _ in range(REPEATS):
            began = time.perf_counter()
            hits = step_search(query=query, **filters).hits  # type: ignore[arg-type]
            times.append((time.perf_counter() - began) * 1000)
        if os.environ.get("BENCH_SEARCH_EXPLAIN"):
            plan = step_search_queryset(query=query, **filters)[:21]  # type: ignore[arg-type]
            print(text, filters, plan.explain(analyze=True), sep="\n")
        label = text + "".join(f" {k}={v}" for k, v in filters.items())
        rows.append((label, statistics.median(times), len(hits)))
    return rows


def main() -> None:
    from tests.leaderboard.postgres import postgres_server

    with (
        tempfile.TemporaryDirectory(prefix="mirrorbench-search-") as data,
        postgres_server() as url,
    ):
        os.environ.update(
            DATABASE_URL=url,
            MIRRORBENCH_DATA_DIR=data,
            DJANGO_SETTINGS_MODULE="mirrorbench_site.settings",
        )
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"],
            cwd=ROOT,
            env=os.environ,
            check=True,
        )
        import django

        django.setup()
        began = time.perf_counter()
        steps = _generate()
        print(f"Generated {RUNS} runs, {steps:,} steps in {time.perf_counter() - began:.0f} s")
        rows = _measure()
        from django.db import connection

        connection.close()
    print(f"Search on PostgreSQL: {steps:,} steps of {RUNS} runs, median of {REPEATS} per query")
    print("| query | server time | hits |")
    print("|---|---:|---:|")
    for label, ms, hits in rows:
        print(f"| `{label}` | {ms:.1f} ms | {hits} |")
    median = statistics.median(ms for _, ms, _ in rows)
    print(f"Median query server time: {median:.1f} ms (target < {TARGET_MS} ms)")


if __name__ == "__main__":
    main()
