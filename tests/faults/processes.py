"""Real processes of a deployment for the fault tests: workers (optionally with a slowed
function, ``tests.faults.celery_faults``), beat, and how to wait for them and report.

Built on ``tests.leaderboard.workers``: the same data directory, test database and broker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection

from mirrorbench_site.celery import QUEUES, beat_command, worker_command


def site_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a site process sharing this test's data directory and database."""
    env = {
        **os.environ,
        "MIRRORBENCH_DATA_DIR": str(settings.DATA_DIR),
        "DJANGO_SETTINGS_MODULE": "mirrorbench_site.settings",
    }
    if connection.vendor == "sqlite":
        env["MIRRORBENCH_SQLITE_PATH"] = str(connection.settings_dict["NAME"])
    return {**env, **(extra or {})}


def _log(name: str) -> Any:
    return open(Path(settings.DATA_DIR) / f"{name}-{time.time_ns()}.log", "wb")


def empty_queues() -> None:
    """Remove the embedded broker's queued messages (left by earlier tests or set-up)."""
    queue = Path(settings.CELERY_BROKER_DIR) / "queue"
    if queue.is_dir():
        for message in queue.iterdir():
            message.unlink(missing_ok=True)


def start_celery_worker(
    *,
    env: dict[str, str] | None = None,
    concurrency: int = 2,
    queues: tuple[str, ...] = QUEUES,
    slow: dict[str, float] | None = None,
    markers: Path | None = None,
    name: str = "worker",
) -> subprocess.Popen[bytes]:
    """Start a Celery worker without beat; ``slow`` maps ``module:function`` to seconds to wait
    on entering it (``tests.faults.slowed``), each entry touching ``markers/function``."""
    extra_env = dict(env or {})
    command = worker_command(
        concurrency=concurrency,
        beat=False,
        queues=queues,
        extra=("--without-mingle", "--without-gossip", "-n", f"{name}{time.time_ns()}@%h"),
    )
    if slow:
        assert markers is not None
        extra_env.update(slow_env(slow, markers))
        assert command[1:3] == ["-m", "celery"]
        command[1:3] = ["-m", "tests.faults.slowed", "celery"]
    log = _log(name)
    process = subprocess.Popen(
        command,
        env=site_env(extra_env),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=settings.BASE_DIR,
    )
    process.log_path = Path(log.name)  # type: ignore[attr-defined]
    return process


def slow_env(slow: dict[str, float], markers: Path) -> dict[str, str]:
    """The environment that makes ``tests.faults.slowed`` slow down the functions of ``slow``."""
    markers.mkdir(parents=True, exist_ok=True)
    return {
        "MIRRORBENCH_FAULT_SLOW": ",".join(f"{k}={v}" for k, v in slow.items()),
        "MIRRORBENCH_FAULT_MARKERS": str(markers),
    }


def start_web(
    port: int,
    *,
    env: dict[str, str] | None = None,
    slow: dict[str, float] | None = None,
    markers: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start gunicorn (one worker process) serving the site on ``127.0.0.1:port``."""
    extra_env = dict(env or {})
    if slow:
        assert markers is not None
        extra_env.update(slow_env(slow, markers))
    process = subprocess.Popen(
        [
            *python("-m", "tests.faults.slowed", "gunicorn", "mirrorbench_site.wsgi:application"),
            *("--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "4"),
            "--no-control-socket",  # as manage.py serve runs it
        ],
        env=site_env(extra_env),
        stdout=_log("web"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=settings.BASE_DIR,
    )
    return process


def start_beat(*, env: dict[str, str] | None = None, name: str = "beat") -> subprocess.Popen[bytes]:
    """Start ``celery beat`` alone, with a schedule file of its own."""
    schedule = Path(settings.DATA_DIR) / f"{name}-schedule-{time.time_ns()}"
    log = _log(name)
    process = subprocess.Popen(
        beat_command(loglevel="INFO", extra=("-s", str(schedule))),
        env=site_env(env),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=settings.BASE_DIR,
    )
    process.log_path = Path(log.name)  # type: ignore[attr-defined]
    return process


def log_of(process: subprocess.Popen[bytes]) -> str:
    """What a worker or beat started here has written so far."""
    log: Path = process.log_path  # type: ignore[attr-defined]
    return log.read_text(errors="replace")


def beat_sent(process: subprocess.Popen[bytes]) -> int:
    """How many periodic tasks a beat started by ``start_beat`` has sent so far."""
    return log_of(process).count("Sending due task")


def wait_until(
    condition: Callable[[], Any], *, timeout: float, what: str, every: float = 0.2
) -> Any:
    """Poll ``condition`` until it returns something true; return it, or fail saying ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} (waited {timeout} s)"
        time.sleep(every)


def python(*args: str) -> list[str]:
    return [sys.executable, *args]


def manage(env: dict[str, str], *args: str) -> str:
    """Run ``manage.py args`` as a site process with ``env``; return its output, or fail with
    its errors."""
    done = subprocess.run(
        python("manage.py", *args),
        env=site_env(env),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=settings.BASE_DIR,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


FAKE_RUN_SCENE = "tienkung-allegro-logo_0"
FAKE_RUN_EPISODES = 4


def fake_run_queue(env: dict[str, str], base_url: str) -> int:
    """Queue, with ``manage.py evaluate``, a run of the fake OpenAI model at ``base_url``: one
    scene (its set-up is paid once), ``FAKE_RUN_EPISODES`` levels, 32 px; return its id."""
    out = manage(
        env,
        *("evaluate", "--agent", "openai:fake-vl", "--base-url", base_url),
        *("--scenes", FAKE_RUN_SCENE, "--levels", "0,1,2,3", "--image-size", "32"),
        *("--kind", "open-weights", "--json"),
    )
    return int(json.loads(out.strip().splitlines()[-1])["run"])


class RunRows:
    """A run's rows read with plain SQL, beside the site's processes: ``query(sql, *params)``
    returns the rows ([] while the database is down), ``mark`` is its parameter mark."""

    def __init__(self, query: Callable[..., list[tuple]], run_id: int, mark: str) -> None:
        self.query, self.run_id, self.mark = query, run_id, mark

    def steps(self) -> int:
        """How many steps the run has stored; -1 while the database cannot be read."""
        rows = self.query(
            "SELECT count(*) FROM leaderboard_step s JOIN leaderboard_episode e "
            f"ON s.episode_id = e.id WHERE e.run_id = {self.mark}",
            self.run_id,
        )
        return int(rows[0][0]) if rows else -1

    def status(self) -> str:
        """The run's status; "?" while the database cannot be read."""
        rows = self.query(f"SELECT status FROM leaderboard_run WHERE id = {self.mark}", self.run_id)
        return str(rows[0][0]) if rows else "?"

    def episodes(self) -> list[tuple]:
        """(id, status, attempts, steps_taken) of each episode."""
        return self.query(
            "SELECT id, status, attempts, steps_taken FROM leaderboard_episode "
            f"WHERE run_id = {self.mark}",
            self.run_id,
        )

    def step_rows(self) -> list[tuple]:
        """(episode, index, frame_key) of each stored step, in order."""
        return self.query(
            'SELECT s.episode_id, s."index", s.frame_key FROM leaderboard_step s '
            f"JOIN leaderboard_episode e ON s.episode_id = e.id WHERE e.run_id = {self.mark} "
            "ORDER BY 1, 2",
            self.run_id,
        )


def wait_for_recovery(
    steps: Callable[[], int],
    status: Callable[[], str],
    *,
    before: int,
    part: str,
    complete_s: float = 90,
) -> float:
    """Once ``part`` is back: wait for a step beyond the ``before`` stored during the outage
    (or for the run to end), then for the run to complete; return the seconds until the first."""
    back = time.monotonic()
    wait_until(
        lambda: steps() > before or status() != "running",
        timeout=60,
        what=f"no step was stored after {part} came back",
    )
    recovered = time.monotonic() - back
    wait_until(
        lambda: status() == "completed",
        timeout=complete_s,
        what=f"the run did not complete after {part} came back",
    )
    return recovered


def duplicated(episodes: list[tuple], step_rows: list[tuple]) -> int:
    """Episodes played again plus steps stored twice (``RunRows`` rows)."""
    again = sum(attempts - 1 for _, _, attempts, _ in episodes)
    return again + len(step_rows) - len({(e, i) for e, i, *_ in step_rows})


def assert_played_once(episodes: list[tuple], step_rows: list[tuple], expected: int) -> None:
    """Every episode completed in one attempt, each step stored once, in order (``RunRows``)."""
    assert [e[1] for e in episodes] == ["completed"] * expected
    for episode_id, _, _, taken in episodes:
        assert [i for e, i, *_ in step_rows if e == episode_id] == list(range(taken))
    assert [e[2] for e in episodes] == [1] * expected
