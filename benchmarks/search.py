"""Search benchmark: each query form's server time over generated responses, on PostgreSQL and
on SQLite (FTS5).

For each database (``BENCH_SEARCH_DATABASES``, default ``postgresql,sqlite``; each in a process
of its own): a throwaway PostgreSQL cluster (``tests/leaderboard/postgres.py``: Debian's
postgresql) or a fresh SQLite file, the site's migrations, then ``BENCH_SEARCH_RUNS`` public runs
(default 1,000; one in ten under the ``moved-mark`` condition) of 264 episodes of
``BENCH_SEARCH_STEPS`` steps each (default 19: about 5 million steps for 1,000 runs), their
responses made from a model-like vocabulary (a few common words, many rare ones, the moves'
phrases). Steps are loaded with COPY (PostgreSQL) or one INSERT (SQLite) and the index built
once after (the database maintains it the same way as steps are stored one by one; building it
at the end only loads faster). Each query of ``QUERIES`` (every form the /search/ page sends:
text alone, text and each filter, text and all filters, common and rare words, one run's
answers) then runs ``BENCH_SEARCH_REPEATS`` times (default 7) through
``leaderboard.search.selectors.step_search``, the page's own read (the steps, their frames):
the time printed, the median, is the server's, from the call to the hits in hand.

    .venv/bin/python -m benchmarks.search                       # 1,000 runs, ~5M steps
    BENCH_SEARCH_RUNS=100 .venv/bin/python -m benchmarks.search # a tenth
    BENCH_SEARCH_DATABASES=sqlite .venv/bin/python -m benchmarks.search
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUNS = int(os.environ.get("BENCH_SEARCH_RUNS", "1000"))
STEPS = int(os.environ.get("BENCH_SEARCH_STEPS", "19"))
REPEATS = int(os.environ.get("BENCH_SEARCH_REPEATS", "7"))
TARGET_MS = 200
DATABASES = os.environ.get("BENCH_SEARCH_DATABASES", "postgresql,sqlite").split(",")

COMMON = [
    *("i", "the", "hand", "mark", "mirror", "move", "see", "my", "to", "is", "in", "chest"),
    *("body", "reflection", "left", "right", "up", "down", "forward", "backward", "closer"),
    *("choice", "step", "now", "it", "a", "of", "and", "towards", "image"),
]
MOVES = ("move up", "move down", "move left", "move right", "move forward", "move backward")
EVERY_FILTER = {"model": "model-7", "level": 3, "track": "robot", "outcome": "success"}
QUERIES: list[tuple[str, dict[str, object]]] = [
    # Text alone: common words, a phrase, a prefix, an exclusion, rare words.
    ("mirror", {}),
    ("reflection hand", {}),
    ('"my own hand"', {}),
    ("mirr*", {}),
    ("mirror -left", {}),
    ("periscope", {}),
    ("rare17", {}),
    # A common word and each filter, then all of them.
    ("hand", {"model": "model-7"}),
    ("hand", {"level": 3}),
    ("hand", {"track": "robot"}),
    ("hand", {"outcome": "success"}),
    ("hand", {"outcome": "confused"}),
    ("hand", {"condition": "moved-mark"}),
    ("hand", {"condition": "no-mirror"}),
    ("hand", {"model": "model-7", "outcome": "success"}),
    ("hand", {**EVERY_FILTER, "condition": "main"}),
    # A phrase, a prefix, an exclusion and a rare word with filters.
    ('"my own hand"', {"model": "model-7"}),
    ('"my own hand"', {"model": "model-7", "outcome": "failure"}),
    ('"my own hand"', {"level": 2, "track": "human"}),
    ("mirr*", {"condition": "moved-mark", "level": 0}),
    ("mirror -left", {"level": 1, "outcome": "failure"}),
    ("periscope", {"model": "model-7"}),
    ("periscope", {"level": 3, "track": "robot"}),
    ("periscope", {**EVERY_FILTER, "condition": "main"}),
    # One run's own answers (its page's search box).
    ("mirror", {"run": "one"}),
    ("periscope", {"run": "one"}),
]


def _response(rng: random.Random, rare: list[str]) -> str:
    words = rng.choices(COMMON, k=rng.randint(12, 40))
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words) + 1), rng.choice(rare))
    if rng.random() < 0.05:
        words.insert(0, "my own hand")
    return " ".join(words) + f". I {rng.choice(MOVES)}. Choice: [{rng.randint(1, 6)}]"


def _store_steps(connection: Any, rows: list[tuple[int, int, str]]) -> None:
    """Store steps (episode id, index, response): COPY on PostgreSQL, one INSERT on SQLite."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            text = io.StringIO()
            for episode, index, response in rows:
                response = response.replace("\\", "").replace("\t", " ")
                text.write(f"{episode}\t{index}\t{response}\t3\t\tt\t2\t[0, 0, 0]\t\tf\t{{}}\n")
            with cursor.connection.cursor().copy(
                "COPY leaderboard_step (episode_id, index, response, option, parse_error, "
                "executed, distance_steps, hand_cell, frame_key, cached, request) FROM STDIN"
            ) as copy:
                copy.write(text.getvalue())
        else:
            cursor.executemany(
                'INSERT INTO leaderboard_step (episode_id, "index", response, option, '
                "parse_error, executed, distance_steps, hand_cell, frame_key, cached, request) "
                "VALUES (%s, %s, %s, 3, '', 1, 2, '[0, 0, 0]', '', 0, '{}')",
                rows,
            )


def _generate(seed: int = 0) -> int:
    """Store RUNS runs with their episodes and steps; return the number of steps."""
    from django.db import connection

    from evaluation.vocabulary import MAIN_CONDITION
    from leaderboard.boards.entries import benchmark_current
    from leaderboard.models import Episode, ModelEntry, Run
    from leaderboard.search.index import step_search_index_drop, step_search_index_ensure

    rng = random.Random(seed)
    rare = [f"rare{n}" for n in range(5000)] + ["periscope"]
    version = benchmark_current()
    scenes = list(version.scenes.all())
    conditions = [MAIN_CONDITION] * 9 + ["moved-mark"]
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
                condition=conditions[n % len(conditions)],
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
                mirror_confused=rng.random() < 0.05,
                steps_taken=STEPS,
            )
            for run in runs
            for scene in scenes
            for level in range(4)
        )
        rows = [
            (episode.pk, index, _response(rng, rare))
            for episode in episodes
            for index in range(STEPS)
        ]
        _store_steps(connection, rows)
        total += len(rows)
        print(f"  {min(RUNS, start + 20)} runs, {total:,} steps", flush=True)
    began = time.perf_counter()
    step_search_index_ensure(connection=connection)
    with connection.cursor() as cursor:
        # PostgreSQL: VACUUM as autovacuum would after the load, so that index-only scans
        # (each episode's first and last step id) need not visit the table.
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")
    print(f"  index built and analysed in {time.perf_counter() - began:.0f} s", flush=True)
    return total


def _measure() -> list[tuple[str, float, int]]:
    from leaderboard.models import Run
    from leaderboard.search.query import parse_query
    from leaderboard.search.selectors import step_search

    one_run = Run.objects.order_by("pk")[RUNS // 2]
    rows = []
    for text, filters in QUERIES:
        query = parse_query(text)
        chosen = {k: one_run if k == "run" else v for k, v in filters.items()}
        times = []
        for _ in range(REPEATS):
            began = time.perf_counter()
            hits = step_search(query=query, **chosen).hits  # type: ignore[arg-type]
            times.append((time.perf_counter() - began) * 1000)
        label = text + "".join(f" {k}={v}" for k, v in filters.items())
        rows.append((label, statistics.median(times), len(hits)))
    return rows


def _bench(database: str) -> None:
    """Generate and measure on ``database`` (this process's only one); print a JSON line."""
    with contextlib.ExitStack() as stack:
        data = stack.enter_context(tempfile.TemporaryDirectory(prefix="mirrorbench-search-"))
        os.environ.update(
            MIRRORBENCH_DATA_DIR=data, DJANGO_SETTINGS_MODULE="mirrorbench_site.settings"
        )
        os.environ.pop("DATABASE_URL", None)
        if database == "postgresql":
            from tests.leaderboard.postgres import postgres_server

            os.environ["DATABASE_URL"] = stack.enter_context(postgres_server())
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=os.environ, check=True
        )
        import django

        django.setup()
        began = time.perf_counter()
        steps = _generate()
        generated = time.perf_counter() - began
        print(f"Generated {RUNS} runs, {steps:,} steps in {generated:.0f} s", flush=True)
        rows = _measure()
        from django.db import connection

        connection.close()
    print(
        json.dumps({"database": database, "steps": steps, "generated_s": generated, "rows": rows})
    )


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--database":
        _bench(sys.argv[2])
        return
    results = []
    for database in DATABASES:
        print(f"{database}:", flush=True)
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.search", "--database", database],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        )
        lines = done.stdout.rstrip().splitlines()
        print(*lines[:-1], sep="\n", flush=True)
        results.append(json.loads(lines[-1]))
    steps = results[0]["steps"]
    print(f"Search: {steps:,} steps of {RUNS} runs, median of {REPEATS} per query, server time")
    print("| query | " + " | ".join(r["database"] for r in results) + " | hits |")
    print("|---|" + "---:|" * (len(results) + 1))
    for n, (label, _, hits) in enumerate(results[0]["rows"]):
        times = " | ".join(f"{r['rows'][n][1]:.1f} ms" for r in results)
        print(f"| `{label}` | {times} | {hits} |")
    for r in results:
        worst = max(r["rows"], key=lambda row: row[1])
        median = statistics.median(row[1] for row in r["rows"])
        print(
            f"{r['database']}: median {median:.1f} ms, slowest {worst[1]:.1f} ms (`{worst[0]}`)"
            f" (target < {TARGET_MS} ms on PostgreSQL)"
        )


if __name__ == "__main__":
    main()
