"""``python manage.py serve``: site, worker and beat on one machine (what ``make run`` starts).

Queues the baseline runs that are missing, then supervises four children, each in its own
process group: gunicorn for the site (WhiteNoise serves the static files), a Celery worker for
the ``models`` queue (episodes), a render worker for the ``render`` queue (frames nobody is
waiting for: thumbnails, the gallery, the rest of a replay) and Celery beat, the one process of
the deployment that schedules the stale-episode check. The broker is embedded unless
``CELERY_BROKER_URL`` says otherwise.

Rendering never delays a model's episodes: the render worker has its own small concurrency
(``--render-concurrency``, 1 by default) and runs at a lower CPU priority (``nice`` 10), so the
episodes' own work, and the site, come first whenever both want the cores.

A child that dies is restarted after a backoff (1 s, doubled after each quick death up to
60 s, back to 1 s once it has stayed up a minute); what is left of its process group is killed
first, so that nothing it started outlives it. The worker never embeds beat here: restarting it
can never make a second beat. The web server is restarted the same way, except when its first
start fails (it exits with a status within seconds: a port in use, an address that cannot be
bound, an application that does not load): starting it again would fail the same way, so
``serve`` stops everything and exits with status 1.

Ctrl-C or SIGTERM stops all three: SIGTERM to each group (a warm shutdown: the worker finishes
the work in flight), SIGKILL to what is still running 20 s later, or at once on a second Ctrl-C.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.checks import Tags
from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.vocabulary import MAIN_CONDITION
from leaderboard.management.commands.prepare_data_dir import PRIVATE_UMASK
from leaderboard.runs.services import baseline_control_runs_ensure, baseline_runs_ensure
from mirrorbench_site.celery import beat_command, privileges_options, worker_command

logger = logging.getLogger(__name__)

# A web server that exits (rather than being killed) this soon after its first start could not
# start at all.
WEB_START_S = 15.0
STOP_TIMEOUT_S = 20.0
POLL_S = 0.2


RENDER_NICENESS = 10


def _die_with_parent() -> None:
    """In a child: get SIGTERM if this command dies without stopping it (Linux only)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def describe_exit(returncode: int) -> str:
    """Return how a process ended, from its ``Popen.returncode``."""
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


@dataclass
class Backoff:
    """Delays before restarting a child that keeps dying.

    ``first`` after a death, doubled after each death that follows quickly, at most ``most``;
    back to ``first`` when the child had stayed up ``stable`` seconds.
    """

    first: float = 1.0
    most: float = 60.0
    stable: float = 60.0
    _next: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        self._next = self.first

    def delay(self, *, uptime: float) -> float:
        """Return how long to wait before restarting a child that died after ``uptime`` s."""
        if uptime >= self.stable:
            self._next = self.first
        delay = self._next
        self._next = min(delay * 2, self.most)
        return delay


@dataclass
class Child:
    """One supervised command, run in a process group of its own."""

    name: str
    argv: list[str]
    niceness: int = 0
    """Added to the child's CPU niceness: a higher value yields the cores to the others."""
    backoff: Backoff = field(default_factory=Backoff)
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    starts: int = 0
    restart_at: float = 0.0

    @property
    def running(self) -> bool:
        """Whether the child was started and has not been reaped."""
        return self.process is not None and self.process.returncode is None

    def start(self) -> None:
        """Start the command in a new session (so, a process group of its own)."""
        niceness = self.niceness

        def prepare() -> None:
            _die_with_parent()
            if niceness:
                os.nice(niceness)

        self.process = subprocess.Popen(self.argv, start_new_session=True, preexec_fn=prepare)
        self.started_at = time.monotonic()
        self.starts += 1

    def ended(self) -> bool:
        """Whether the child's main process has ended (it stays a zombie until ``reap``).

        Left unreaped, its pid stays taken, so its process group id cannot go to another
        process before ``reap`` kills the rest of the group.
        """
        assert self.process is not None
        if self.process.returncode is not None:
            return True
        flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
        return os.waitid(os.P_PID, self.process.pid, flags) is not None

    def signal_group(self, signum: int) -> None:
        """Send ``signum`` to every process of the child's group."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signum)

    def reap(self) -> int:
        """Kill what is left of the ended child's group (pool processes...); return its code."""
        assert self.process is not None
        self.signal_group(signal.SIGKILL)
        return self.process.wait()


def _at_least_warning(level: str) -> str:
    """Return ``level``, or WARNING when it is more talkative (DEBUG, INFO)."""
    return level if logging.getLevelName(level.upper()) >= logging.WARNING else "WARNING"


def web_command(*, bind: str, workers: int, loglevel: str, access_log: bool) -> list[str]:
    """Return gunicorn's command line; its access log (if any) never shows a reset token.

    No control socket: gunicorn would otherwise open one in ``$XDG_RUNTIME_DIR`` or
    ``~/.gunicorn`` (outside the data directory), at one path for every gunicorn of the account,
    so that a second site on the machine takes it from the first. ``serve`` restarts and stops
    its processes itself."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "mirrorbench_site.wsgi:application",
        "--bind",
        bind,
        "--workers",
        str(workers),
        "--threads",
        "4",
        "--log-level",
        loglevel.lower(),
        "--logger-class",
        "mirrorbench_site.access_log.AccessLogger",
        "--no-control-socket",
        *(["--access-logfile", "-"] if access_log else []),
    ]


class Command(BaseCommand):
    help = (
        "Serve the site with one worker and beat, restarting whichever dies; "
        "queue the baseline runs that are missing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")
        parser.add_argument(
            "--concurrency", type=int, default=4, help="worker threads for model episodes"
        )
        parser.add_argument(
            "--render-concurrency",
            type=int,
            default=1,
            help="render worker threads (each holds an OpenGL context)",
        )
        parser.add_argument("--web-workers", type=int, default=2, help="gunicorn processes")
        parser.add_argument("--no-baselines", action="store_true", help="do not queue baselines")
        parser.add_argument(
            "--verbose",
            action="store_true",
            help="log every request and the workers' info lines (default: the URL, runs "
            "queued, warnings and errors)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # What this command and its children create (the SQLite write-ahead log, frames,
        # bundles, the broker's messages) is private to this account.
        os.umask(PRIVATE_UMASK)
        if settings.MIRRORBENCH_HTTPS:
            # A public site starts only if its deployment checks pass: among them, mail that is
            # sent (mirrorbench.E003), never written to this command's output, the log.
            self.check(tags=[Tags.security], include_deployment_checks=True)
        if not options["no_baselines"]:
            for run in [*baseline_runs_ensure(), *baseline_control_runs_ensure()]:
                under = "" if run.condition == MAIN_CONDITION else f" under {run.condition}"
                self.stdout.write(
                    f"Queued run {run.pk}: {run.agent}{under} on {run.episodes_expected} episodes"
                )
        bind = f"{options['host']}:{options['port']}"
        level = settings.MIRRORBENCH_LOG_LEVEL
        verbose = options["verbose"]
        # The console keeps what matters: the URL, runs queued, warnings and errors. Every
        # request (gunicorn's access log) and the workers' start-up banners need --verbose.
        quiet = level if verbose else _at_least_warning(level)
        web = Child(
            "web server",
            web_command(
                bind=bind, workers=options["web_workers"], loglevel=quiet, access_log=verbose
            ),
        )
        worker = Child(
            "worker",
            worker_command(
                concurrency=options["concurrency"],
                beat=False,
                queues=("models",),
                loglevel=quiet,
                quiet=not verbose,
            ),
        )
        render = Child(
            "render worker",
            worker_command(
                concurrency=options["render_concurrency"],
                beat=False,
                queues=("render",),
                loglevel=quiet,
                quiet=not verbose,
            ),
            niceness=RENDER_NICENESS,
        )
        beat = Child("beat", beat_command(loglevel=quiet, quiet=not verbose))
        if os.geteuid() == 0 and not privileges_options():
            # Celery would print a six-line warning from each of three processes at every
            # start. Its advice (--uid) needs an account that may write the data directory;
            # there is none here, so say it once, with what to do.
            os.environ["PYTHONWARNINGS"] = "ignore:You're running the worker with superuser"
            logger.warning(
                "Running as root, and so are the workers: set MIRRORBENCH_WORKER_USER to an "
                "account that owns %s to run them without root.",
                settings.DATA_DIR,
            )
        children = [web, worker, render, beat]
        self._signals = 0
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        failure = None
        try:
            for child in children:
                child.start()
            pids = ", ".join(f"{c.name} {c.process.pid}" for c in children if c.process)
            self.stdout.write(
                f"Started ({pids}). MirrorBench at http://{bind}/ (Ctrl-C stops everything)"
            )
            self.stdout.flush()
            failure = self._supervise(children, web=web, bind=bind)
        finally:
            self._stop(children)
        if failure:
            raise CommandError(failure)

    def _on_signal(self, signum: int, frame: object) -> None:
        self._signals += 1

    def _supervise(self, children: list[Child], *, web: Child, bind: str) -> str | None:
        """Restart dead children until a signal comes; return why serve must stop, if not."""
        while not self._signals:
            now = time.monotonic()
            for child in children:
                if not child.running:
                    if now >= child.restart_at:
                        child.start()
                        assert child.process is not None
                        logger.warning("The %s restarted (pid %d).", child.name, child.process.pid)
                    continue
                if not child.ended():
                    continue
                assert child.process is not None
                pid, uptime = child.process.pid, now - child.started_at
                returncode = child.reap()
                how = describe_exit(returncode)
                first_start = child is web and child.starts == 1 and uptime < WEB_START_S
                if first_start and returncode > 0:
                    return (
                        f"The web server (pid {pid}) {how} {uptime:.1f} s after it started: "
                        f"it could not start serving {bind} (is the port in use by another "
                        "process? does the site fail to load?); see its messages above."
                    )
                delay = child.backoff.delay(uptime=uptime)
                child.restart_at = now + delay
                logger.error(
                    "The %s (pid %d) %s after %.0f s; restarting it in %.0f s.",
                    child.name,
                    pid,
                    how,
                    uptime,
                    delay,
                )
            time.sleep(POLL_S)
        return None

    def _stop(self, children: list[Child]) -> None:
        """Stop every child's process group: SIGTERM, then SIGKILL after a while."""
        running = [child for child in children if child.running]
        if running:
            logger.info("Stopping the %s.", ", ".join(child.name for child in running))
        for child in running:
            child.signal_group(signal.SIGTERM)
        signals = self._signals
        deadline = time.monotonic() + STOP_TIMEOUT_S
        killed = False
        while running:
            for child in list(running):
                if child.ended():
                    child.reap()
                    running.remove(child)
            if not running:
                break
            hurry = self._signals > signals
            if not killed and (hurry or time.monotonic() >= deadline):
                logger.warning(
                    "Killing the %s (%s).",
                    ", ".join(child.name for child in running),
                    "asked twice" if hurry else f"still running after {STOP_TIMEOUT_S:.0f} s",
                )
                for child in running:
                    child.signal_group(signal.SIGKILL)
                killed = True
            time.sleep(POLL_S / 2)
