"""PostgreSQL stopped (``pg_ctl stop -m fast``: every connection cut) for 5 s in the middle of
a model's run, then started again: the episodes in flight wait for it and go on, no step is
lost or stored twice, and the run completes without waiting for the stale-episode check
(set here to 120 s, longer than the test waits)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import psycopg
import pytest

from tests.evaluation.fake_providers import FakeOpenAI, Scripted
from tests.faults.processes import site_env, start_beat, start_celery_worker, wait_until
from tests.faults.servers import PostgresServer
from tests.leaderboard.workers import stop_worker

pytestmark = pytest.mark.slow

DOWN_S = 5
SCENE = "tienkung-allegro-logo_0"


def query(url: str, sql: str, *params: object) -> list[tuple]:
    """Run ``sql`` on a fresh connection; [] while the server is down."""
    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            return conn.execute(sql, params).fetchall()
    except psycopg.OperationalError:
        return []


def test_a_run_goes_on_through_a_postgresql_restart(tmp_path, results, fault_row):
    server = PostgresServer().start()
    server.create_database()
    env = {
        **results.env,
        "DATABASE_URL": server.url,
        "MIRRORBENCH_DATA_DIR": str(tmp_path / "data"),
        "MIRRORBENCH_EPISODE_STALE_S": "120",
        "MIRRORBENCH_STALE_CHECK_S": "1",
    }

    def manage(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            env=site_env(env),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    worker = beat = None
    try:
        manage("migrate", "--noinput")
        with FakeOpenAI() as fake:
            fake.enqueue(*[Scripted(200, delay_s=0.3)] * 400)
            worker = start_celery_worker(env=env, queues=("models",))
            beat = start_beat(env=env)
            out = manage(
                *("evaluate", "--agent", "openai:fake-vl", "--base-url", fake.base_url),
                *("--scenes", SCENE, "--levels", "0,1,2,3", "--image-size", "32"),
                *("--kind", "open-weights", "--json"),
            )
            run_id = json.loads(out.strip().splitlines()[-1])["run"]
            steps_sql = (
                "SELECT count(*) FROM leaderboard_step s JOIN leaderboard_episode e "
                "ON s.episode_id = e.id WHERE e.run_id = %s"
            )

            def steps() -> int:
                rows = query(server.url, steps_sql, run_id)
                return int(rows[0][0]) if rows else -1

            def status() -> str:
                rows = query(server.url, "SELECT status FROM leaderboard_run WHERE id = %s", run_id)
                return str(rows[0][0]) if rows else "?"

            wait_until(lambda: steps() >= 5, timeout=90, what="no step was stored")
            server.stop("fast")
            time.sleep(DOWN_S)
            server.start()
            back = time.monotonic()
            in_outage = steps()
            wait_until(
                lambda: steps() > in_outage or status() != "running",
                timeout=60,
                what="no step was stored after PostgreSQL came back",
            )
            recovered = time.monotonic() - back
            wait_until(
                lambda: status() == "completed",
                timeout=90,
                what="the run did not complete after PostgreSQL came back",
            )
            requests = len(fake.requests)
        episodes = query(
            server.url,
            "SELECT id, status, attempts, steps_taken FROM leaderboard_episode WHERE run_id = %s",
            run_id,
        )
        indices = query(
            server.url,
            "SELECT s.episode_id, s.index FROM leaderboard_step s JOIN leaderboard_episode e "
            "ON s.episode_id = e.id WHERE e.run_id = %s ORDER BY 1, 2",
            run_id,
        )
    finally:
        for process in (beat, worker):
            if process is not None:
                stop_worker(process)
        server.remove()
    fault_row(
        f"PostgreSQL stopped {DOWN_S} s, restarted",
        len(episodes),
        sum(1 for e in episodes if e[1] == "completed"),
        sum(e[2] - 1 for e in episodes) + len(indices) - len(set(indices)),
        recovered,
    )
    assert [e[1] for e in episodes] == ["completed"] * 4
    for episode_id, _, _, taken in episodes:
        assert [i for e, i in indices if e == episode_id] == list(range(taken))
    # One request per stored step, except the ones answered while the database was down and
    # asked again by the episode's next attempt.
    assert len(indices) <= requests
    assert [e[2] for e in episodes] == [1] * 4
