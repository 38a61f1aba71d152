"""``python manage.py serve``: the site and a worker on one machine (what ``make run`` starts).

Queues the baseline runs that are missing, starts one Celery worker (embedded broker unless
``CELERY_BROKER_URL`` says otherwise) and serves the site with gunicorn (WhiteNoise serves the
static files); Ctrl-C stops both.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from leaderboard.services.runs import baseline_runs_ensure
from mirrorbench_site.celery import worker_command


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
        parser.add_argument("--web-workers", type=int, default=2, help="gunicorn processes")
        parser.add_argument("--no-baselines", action="store_true", help="do not queue baselines")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["no_baselines"]:
            for run in baseline_runs_ensure():
                self.stdout.write(
                    f"Queued run {run.pk}: {run.agent} on {run.episodes_expected} episodes"
                )
        worker = subprocess.Popen(
            worker_command(concurrency=options["concurrency"], loglevel="warning"),
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        # A plain kill (SIGTERM) stops the worker too, like Ctrl-C does.
        signal.signal(signal.SIGTERM, _interrupt)
        url = f"http://{options['host']}:{options['port']}/"
        web = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "mirrorbench_site.wsgi:application",
                "--bind",
                f"{options['host']}:{options['port']}",
                "--workers",
                str(options["web_workers"]),
                "--threads",
                "4",
                "--access-logfile",
                "-",
            ],
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        self.stdout.write(
            f"Worker (pid {worker.pid}) and web server (pid {web.pid}) started. "
            f"MirrorBench at {url} (Ctrl-C stops both)"
        )
        try:
            while worker.poll() is None and web.poll() is None:
                time.sleep(0.5)
            self.stderr.write("The worker or the web server stopped; stopping the other.")
        except KeyboardInterrupt:
            pass
        finally:
            self._stop(web)
            self._stop(worker)

    def _stop(self, process: subprocess.Popen[bytes]) -> None:
        if process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)  # warm shutdown: finishes the work in flight
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
