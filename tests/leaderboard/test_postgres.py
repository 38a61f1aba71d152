"""The production database path: a real PostgreSQL server, the site's commands and a worker."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mirrorbench_site.celery import worker_command
from tests.leaderboard.postgres import postgres_or_missing

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def manage(env, *args, timeout=300):
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_a_run_completes_on_postgresql_with_a_worker(tmp_path):
    with postgres_or_missing() as url:
        env = {
            **os.environ,
            # Query parameters reach psycopg as connection options (dj-database-url).
            "DATABASE_URL": f"{url}?application_name=mirrorbench-tests",
            "MIRRORBENCH_DATA_DIR": str(tmp_path),
            "DJANGO_SETTINGS_MODULE": "mirrorbench_site.settings",
        }
        worker = None
        try:
            manage(env, "migrate", "--noinput")
            assert "20 models" in manage(env, "load_reference_results")
            worker = subprocess.Popen(
                worker_command(
                    concurrency=2,
                    beat=False,
                    loglevel="warning",
                    extra=("--without-mingle", "--without-gossip"),
                ),
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            out = manage(
                env,
                "evaluate",
                "--agent",
                "oracle",
                "--scenes",
                "robot",
                "--levels",
                "1",
                "--image-size",
                "32",
                "--wait",
                "--json",
                "--timeout",
                "200",
            )
            result = json.loads(out.strip().splitlines()[-1])
            assert result["status"] == "completed" and result["episodes"] == 18
            assert result["metrics"]["levels"]["1"]["robot"]["avg"] == 1.0
            vendor = manage(
                env,
                "shell",
                "-c",
                "from django.db import connection; cursor = connection.cursor(); "
                "cursor.execute('SHOW application_name'); "
                "print(connection.vendor, cursor.fetchone()[0])",
            )
            assert vendor.strip().splitlines()[-1] == "postgresql mirrorbench-tests"
        finally:
            if worker is not None:
                worker.terminate()
                worker.wait(timeout=30)
