"""``manage.py serve`` (what ``make run`` starts): site, worker and beat, supervised together."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from leaderboard.management.commands.serve import Backoff, describe_exit

pytestmark = pytest.mark.waits  # on the site, workers and beat it starts (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def eventually(check: Callable[[], T | None], *, within: float, what: str) -> T:
    """Return the first true result of ``check``, polled until ``within`` seconds pass."""
    deadline = time.monotonic() + within
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"{what} (waited {within:.0f} s)"
        time.sleep(0.2)


def data_dir_env(tmp_path: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "DATABASE_URL")},
        "MIRRORBENCH_DATA_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "mirrorbench_site.settings",
    }


def start_serve(env: dict[str, str], port: int, *options: str) -> subprocess.Popen[bytes]:
    log = open(Path(env["MIRRORBENCH_DATA_DIR"]) / "serve.log", "wb")  # noqa: SIM115
    return subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "serve",
            "--port",
            str(port),
            "--concurrency",
            "1",
            "--web-workers",
            "1",
            *options,
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def serve_output(env: dict[str, str]) -> str:
    return (Path(env["MIRRORBENCH_DATA_DIR"]) / "serve.log").read_text(errors="replace")


def stop_serve(serve: subprocess.Popen[bytes]) -> None:
    """Kill a test's serve if it is still running (its children get SIGTERM from the kernel)."""
    if serve.poll() is None:
        os.killpg(serve.pid, signal.SIGKILL)
        serve.wait()


def kill_processes_of(data_dir: Path) -> None:
    """Kill every process a failed test left behind."""
    for pid in processes_of(data_dir):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def get(port: int, path: str = "/") -> int | None:
    """Return the status of ``GET path``, or None when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            response.read()
            return response.status
    except OSError:
        return None


def processes_of(data_dir: Path) -> dict[int, list[str]]:
    """Return the command line of every live process started with this data directory.

    Read from /proc, by environment rather than by parent: an orphan (a beat whose worker was
    killed) has a new parent but keeps its environment.
    """
    marker = f"MIRRORBENCH_DATA_DIR={data_dir}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            environ = (entry / "environ").read_bytes().split(b"\0")
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue  # ended while being read, or not ours to read
        if state != "Z" and marker in environ:
            found[int(entry.name)] = [arg for arg in argv if arg]
    return found


def celery_processes(data_dir: Path, command: str, queue: str | None = None) -> list[int]:
    """Return the pids of ``celery worker`` (on ``queue``) or ``celery beat`` of ``data_dir``."""
    return sorted(
        pid
        for pid, argv in processes_of(data_dir).items()
        if "celery" in argv and command in argv and (queue is None or queue in argv)
    )


def niceness(pid: int) -> int:
    """Return a process's nice value (field 19 of /proc/PID/stat)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def beats(data_dir: Path) -> list[int]:
    """Return the pids of every beat: ``celery beat`` or a worker embedding it (``-B``)."""
    procs = processes_of(data_dir)
    return sorted(
        pid
        for pid, argv in procs.items()
        if "celery" in argv and ("beat" in argv or ("worker" in argv and "-B" in argv))
    )


def web_servers(data_dir: Path) -> list[int]:
    """Return the pids of gunicorn's main processes (each leads its process group)."""
    return sorted(
        pid
        for pid, argv in processes_of(data_dir).items()
        if "gunicorn" in argv and leads_its_group(pid)
    )


def leads_its_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def test_the_backoff_doubles_to_a_minute_and_starts_over_after_a_stable_run():
    backoff = Backoff(first=1, most=60, stable=60)
    delays = [backoff.delay(uptime=2) for _ in range(8)]
    assert delays == [1, 2, 4, 8, 16, 32, 60, 60]
    assert backoff.delay(uptime=61) == 1
    assert backoff.delay(uptime=5) == 2


def test_a_process_end_is_described_by_signal_or_status():
    assert describe_exit(-9) == "was killed by SIGKILL"
    assert describe_exit(3) == "exited with status 3"


@pytest.mark.slow
def test_serve_runs_the_site_and_a_worker_and_ctrl_c_stops_both(tmp_path):
    env = data_dir_env(tmp_path)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run(
        [sys.executable, "manage.py", "load_reference_results"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    port = free_port()
    serve = start_serve(env, port)
    try:
        eventually(lambda: get(port) == 200, within=60, what="the site did not come up")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            assert "Gemini-2.5-Pro-API" in response.read().decode()
        assert get(port, "/static/css/site.css") == 200
        os.kill(serve.pid, signal.SIGINT)
        serve.wait(timeout=60)
    finally:
        stop_serve(serve)
        kill_processes_of(tmp_path)
    output = serve_output(env)
    assert "Queued run" in output and "Started" in output
    # Nothing is left running on the port.
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


@pytest.mark.slow
def test_serve_keeps_the_site_up_and_restarts_a_killed_worker_with_one_beat(tmp_path):
    env = data_dir_env(tmp_path)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    port = free_port()
    serve = start_serve(env, port, "--no-baselines")
    try:
        eventually(lambda: get(port) == 200, within=60, what="the site did not come up")
        [worker] = eventually(
            lambda: celery_processes(tmp_path, "worker", "models"),
            within=30,
            what="no worker started",
        )
        # Frames render apart, at a lower priority, so they never crowd out the episodes.
        [render] = eventually(
            lambda: celery_processes(tmp_path, "worker", "render"),
            within=30,
            what="no render worker started",
        )
        assert niceness(render) == niceness(worker) + 10
        [beat] = eventually(lambda: beats(tmp_path), within=30, what="no beat started")
        assert celery_processes(tmp_path, "beat") == [beat], "beat runs apart from the worker"

        os.kill(worker, signal.SIGKILL)
        assert get(port) == 200, "the site went down with the worker"
        [restarted] = eventually(
            lambda: [
                pid for pid in celery_processes(tmp_path, "worker", "models") if pid != worker
            ],
            within=30,
            what="the worker was not restarted",
        )
        assert get(port) == 200
        assert beats(tmp_path) == [beat], "a second beat, or an orphan, after the restart"
        assert restarted in processes_of(tmp_path)
        output = serve_output(env)
        assert f"The worker (pid {worker}) was killed by SIGKILL" in output
        assert f"The worker restarted (pid {restarted})" in output

        # The web server is supervised too: killed, it comes back on the same port.
        [web] = web_servers(tmp_path)
        os.kill(web, signal.SIGKILL)
        eventually(
            lambda: web_servers(tmp_path) not in ([], [web]),
            within=30,
            what="the web server was not restarted",
        )
        eventually(lambda: get(port) == 200, within=60, what="the site did not come back")
        assert "The web server restarted" in serve_output(env)

        started = time.monotonic()
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 0
        assert time.monotonic() - started < 30
        eventually(lambda: not processes_of(tmp_path), within=10, what="processes outlived serve")
    finally:
        stop_serve(serve)
        kill_processes_of(tmp_path)
    assert get(port) is None


@pytest.mark.slow
def test_serve_stops_with_a_message_when_the_web_server_cannot_start(tmp_path):
    env = data_dir_env(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        serve = start_serve(env, port, "--no-baselines")
        try:
            assert serve.wait(timeout=90) == 1
            eventually(
                lambda: not processes_of(tmp_path), within=10, what="processes outlived serve"
            )
        finally:
            stop_serve(serve)
            kill_processes_of(tmp_path)
    output = serve_output(env)
    assert "CommandError: The web server" in output
    assert f"it could not start serving 127.0.0.1:{port}" in output
