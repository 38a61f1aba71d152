"""A real Celery worker in a subprocess, sharing the test database and broker, and what its
tasks returned."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from celery.backends.filesystem import FilesystemBackend
from celery.exceptions import TimeoutError as CeleryTimeoutError
from celery.result import AsyncResult
from django.conf import settings
from django.db import connection
from kombu.exceptions import DecodeError

from mirrorbench_site.celery import app, worker_command
from tests.proc import group_alive

TASK_META = "celery-task-meta-"


class Results:
    """Celery's file result backend in a folder: a worker started with ``env`` stores there
    what each of its tasks returned, and the test reads it back.

    The site runs without a result backend; this one is how a test learns that a task has
    run, and with what outcome, instead of waiting and hoping it has.
    """

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.env = {"CELERY_RESULT_BACKEND": f"file://{folder}"}
        self.backend = FilesystemBackend(app=app, url=self.env["CELERY_RESULT_BACKEND"])

    def of(self, task: AsyncResult, *, timeout: float = 120) -> Any:
        """Wait until the worker has run ``task``; return what it returned."""
        try:
            return self._stored(task).get(timeout=timeout)
        except CeleryTimeoutError:
            raise AssertionError(f"the worker did not run {task.id} in {timeout} s") from None

    def done(self, task: AsyncResult) -> bool:
        """Whether the worker has run ``task`` to its end."""
        return self._stored(task).ready()

    def _stored(self, task: AsyncResult) -> AsyncResult:
        return AsyncResult(task.id, backend=self.backend, app=app)

    def returned(self) -> list[Any]:
        """What every task finished so far returned (a result being written is left out)."""
        values = []
        for path in self.folder.iterdir():
            if not path.name.startswith(TASK_META):
                continue
            try:
                meta = self.backend.get_task_meta(path.name.removeprefix(TASK_META), cache=False)
            except DecodeError:
                continue  # caught half-written: read again on the next look
            if meta["status"] == "SUCCESS":
                values.append(meta["result"])
        return values


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
    """Stop the worker and every process it started: warm shutdown, or SIGKILL to simulate a
    crash. Returns once none of them is left alive, so that the ports and files they held are
    free: a killed gunicorn's worker process outlives its master by a moment, and its socket
    still accepts connections meanwhile."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if not wait_group_gone(process.pid, timeout=30):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        assert wait_group_gone(process.pid, timeout=30), f"process group {process.pid} lives on"


def wait_group_gone(pgid: int, *, timeout: float) -> bool:
    """Wait until no process of group ``pgid`` is alive; say whether that happened in time."""
    deadline = time.monotonic() + timeout
    while group_alive(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
