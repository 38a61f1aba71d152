"""A real Celery worker in a subprocess, sharing the test database and broker."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from django.conf import settings
from django.db import connection

from mirrorbench_site.celery import worker_command


def start_worker(
    *, extra_env: dict[str, str] | None = None, concurrency: int = 2
) -> subprocess.Popen[bytes]:
    """Start ``celery worker -B`` on both queues against the test database; return the process.

    The embedded broker's queue folder is emptied first: messages left by an earlier test
    (frames of its runs) would otherwise keep this worker busy.
    """
    queue = Path(settings.CELERY_BROKER_DIR) / "queue"
    if queue.is_dir():
        for message in queue.iterdir():
            message.unlink(missing_ok=True)
    env = {
        **os.environ,
        "MIRRORBENCH_DATA_DIR": str(settings.DATA_DIR),
        "MIRRORBENCH_SQLITE_PATH": str(connection.settings_dict["NAME"]),
        "DJANGO_SETTINGS_MODULE": "mirrorbench_site.settings",
        **(extra_env or {}),
    }
    log = open(Path(settings.DATA_DIR) / f"worker-{time.time_ns()}.log", "wb")  # noqa: SIM115
    return subprocess.Popen(
        worker_command(
            concurrency=concurrency,
            extra=(
                "--without-mingle",
                "--without-gossip",
                "-s",
                str(Path(settings.DATA_DIR) / f"beat-{time.time_ns()}"),
            ),
        ),
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop_worker(process: subprocess.Popen[bytes], *, kill: bool = False) -> None:
    """Stop the worker: warm shutdown, or SIGKILL to simulate a crash."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
