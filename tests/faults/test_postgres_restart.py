"""PostgreSQL stopped (``pg_ctl stop -m fast``: every connection cut) for 5 s in the middle of
a model's run, then started again: the episodes in flight wait for it and go on, no step is
lost or stored twice, and the run completes without waiting for the stale-episode check
(set here to 120 s, longer than the test waits)."""

from __future__ import annotations

import time
from functools import partial

import psycopg
import pytest

from tests.evaluation.fake_providers import FakeOpenAI, Scripted
from tests.faults.processes import (
    FAKE_RUN_EPISODES,
    RunRows,
    assert_played_once,
    duplicated,
    fake_run_queue,
    manage,
    start_beat,
    start_celery_worker,
    wait_for_recovery,
    wait_until,
)
from tests.faults.servers import PostgresServer
from tests.leaderboard.workers import stop_worker

pytestmark = [pytest.mark.slow, pytest.mark.waits]

DOWN_S = 5


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

    worker = beat = None
    try:
        manage(env, "migrate", "--noinput")
        with FakeOpenAI() as fake:
            fake.enqueue(*[Scripted(200, delay_s=0.3)] * 400)
            worker = start_celery_worker(env=env, queues=("models",))
            beat = start_beat(env=env)
            run = RunRows(partial(query, server.url), fake_run_queue(env, fake.base_url), "%s")
            wait_until(lambda: run.steps() >= 5, timeout=90, what="no step was stored")
            server.stop("fast")
            time.sleep(DOWN_S)
            server.start()
            in_outage = run.steps()
            recovered = wait_for_recovery(
                run.steps, run.status, before=in_outage, part="PostgreSQL"
            )
            requests = len(fake.requests)
        episodes = run.episodes()
        indices = run.step_rows()
    finally:
        for process in (beat, worker):
            if process is not None:
                stop_worker(process)
        server.remove()
    fault_row(
        f"PostgreSQL stopped {DOWN_S} s, restarted",
        len(episodes),
        sum(1 for e in episodes if e[1] == "completed"),
        duplicated(episodes, indices),
        recovered,
    )
    assert_played_once(episodes, indices, FAKE_RUN_EPISODES)
    # One request per stored step, except the ones answered while the database was down and
    # asked again by the episode's next attempt.
    assert len(indices) <= requests
