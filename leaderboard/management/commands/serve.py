"""``python manage.py serve``: the site and a worker on one machine (what ``make run`` starts).

Queues the baseline runs that are missing, starts one Celery worker (embedded broker unless
``CELERY_BROKER_URL`` says otherwise) and serves the site; Ctrl-C stops both.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from leaderboard.evaluations import baseline_runs_ensure


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _die_with_parent() -> None:
    """In the worker: get SIGTERM if this command dies without stopping it (Linux only)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Command(BaseCommand):
    help = "Serve the site with one worker; queue the baseline runs that are missing."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")
        parser.add_argument("--concurrency", type=int, default=4, help="worker threads")
        parser.add_argument("--no-baselines", action="store_true", help="do not queue baselines")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["no_baselines"]:
            for run in baseline_runs_ensure():
                self.stdout.write(
                    f"Queued run {run.pk}: {run.agent} on {run.episodes_expected} episodes"
                )
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "mirrorbench_site",
                "worker",
                "-Q",
                "models,render",
                "-P",
                "threads",
                "-c",
                str(options["concurrency"]),
                "-B",
                "-l",
                "warning",
            ],
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        # A plain kill (SIGTERM) stops the worker too, like Ctrl-C does.
        signal.signal(signal.SIGTERM, _interrupt)
        url = f"http://{options['host']}:{options['port']}/"
        self.stdout.write(f"Worker started (pid {worker.pid}). MirrorBench at {url} (Ctrl-C stops)")
        try:
            call_command("runserver", f"{options['host']}:{options['port']}", use_reloader=False)
        except KeyboardInterrupt:
            pass
        finally:
            self._stop(worker)

    def _stop(self, worker: subprocess.Popen[bytes]) -> None:
        if worker.poll() is not None:
            return
        os.killpg(worker.pid, signal.SIGTERM)  # warm shutdown: finishes the steps in flight
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        self.stdout.write("Worker stopped.")
