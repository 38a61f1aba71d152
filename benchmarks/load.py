"""Load benchmark: requests/s and latency of four pages under gunicorn, on loopback.

Builds a throwaway data directory (``build_data_dir``, shared with
``benchmarks/leaderboard.py``: BENCH_ENTRIES synthetic model entries, default 200, each with a
264-episode random-agent run imported through the real services, plus the paper's results),
starts ``gunicorn --workers 2 --threads 4`` on a free 127.0.0.1 port, and for each URL and each
number of concurrent clients (threads, one keep-alive connection each) sends requests for
BENCH_WARMUP_S seconds (not counted), then until BENCH_SECONDS have passed or BENCH_MAX_REQUESTS
were answered. Every response must be a 200. The clients run on the same machine as the server
and share its cores: the figures are for comparing code, not a capacity estimate.

Settings (environment): BENCH_ENTRIES, BENCH_SECONDS (10), BENCH_WARMUP_S (2),
BENCH_MAX_REQUESTS (20000), BENCH_CLIENTS (``1,8,32``), BENCH_URLS (comma-separated).
"""

from __future__ import annotations

import functools
import http.client
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENTRIES = int(os.environ.get("BENCH_ENTRIES", "200"))
BUNDLES = 10
SECONDS = float(os.environ.get("BENCH_SECONDS", "10"))
WARMUP_S = float(os.environ.get("BENCH_WARMUP_S", "2"))
MAX_REQUESTS = int(os.environ.get("BENCH_MAX_REQUESTS", "20000"))
CLIENTS = [int(c) for c in os.environ.get("BENCH_CLIENTS", "1,8,32").split(",")]
URLS = os.environ.get(
    "BENCH_URLS", "/,/leaderboard/overall.csv,/api/leaderboards/overall/,/api/runs/"
).split(",")
WORKERS = 2
THREADS = 4
SECRET_KEY = "mirrorbench-load-benchmark-not-a-secret"
START_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 30.0


def build_data_dir(data: Path) -> float:
    """Fill ``data`` with the reference results and ENTRIES synthetic runs; return seconds."""
    import django

    django.setup()
    from django.core.management import call_command, get_commands
    from django.db import connections

    import leaderboard
    from evaluation.agents import RandomAgent
    from evaluation.bundle import read_bundle
    from evaluation.config import RunConfig
    from evaluation.runner import run
    from leaderboard.boards.entries import model_entry_upsert
    from leaderboard.runs.imports import run_import_bundle

    print(f"code under test: {Path(leaderboard.__file__).parent}")
    with open(os.devnull, "w") as quiet:
        if "prepare_data_dir" in get_commands():
            call_command("prepare_data_dir", stdout=quiet)
        call_command("migrate", verbosity=0)
        call_command("load_reference_results", stdout=quiet)
    start = time.perf_counter()
    bundles = []
    for seed in range(min(BUNDLES, ENTRIES)):
        path = data / f"random-{seed}.jsonl"
        run(functools.partial(RandomAgent, seed), RunConfig(agent="random", seed=seed), path)
        bundles.append(read_bundle(path))
    kinds = ["proprietary", "open-weights"]
    for i in range(ENTRIES):
        entry = model_entry_upsert(
            name=f"Synthetic model {i:03d}", kind=kinds[i % 2], params_b=float(1 + i % 80)
        )
        run_import_bundle(
            model_entry=entry, bundle=bundles[i % BUNDLES], source="evaluated", with_steps=False
        )
    connections.close_all()
    return time.perf_counter() - start


def free_port() -> int:
    """Return a loopback port that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def server_start(data: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """Start gunicorn on ``port`` and return once it answers ``/`` (or raise)."""
    env = {
        **os.environ,
        "MIRRORBENCH_DATA_DIR": str(data),
        "DJANGO_SECRET_KEY": SECRET_KEY,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        # The server imports the code of the tree this script lives in, not an installed copy.
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "mirrorbench_site.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(WORKERS),
        "--threads",
        str(THREADS),
        "--chdir",
        str(ROOT),
    ]
    with open(log, "wb") as out:
        server = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    return server_wait(server, port, "/", log)


def server_wait(
    server: subprocess.Popen[bytes], port: int, path: str, log: Path
) -> subprocess.Popen[bytes]:
    """Wait until the started gunicorn answers ``GET path`` with 200; stop it if it never does."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {server.returncode}:\n{log.read_text()}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", path)
            if connection.getresponse().status == 200:
                connection.close()
                return server
        except OSError:
            pass
        time.sleep(0.2)
    server_stop(server)
    raise RuntimeError(
        f"gunicorn did not answer within {START_TIMEOUT_S:.0f} s:\n{log.read_text()}"
    )


def server_stop(server: subprocess.Popen[bytes]) -> None:
    """Stop gunicorn (TERM, then KILL after 10 s)."""
    if server.poll() is not None:
        return
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=10)


@dataclass
class Result:
    url: str
    clients: int
    requests: int
    seconds: float
    latencies_ms: list[float]

    def line(self) -> str:
        qs = statistics.quantiles(self.latencies_ms, n=100, method="inclusive")
        return (
            f"{self.url:30} {self.clients:>7} {self.requests / self.seconds:9.1f} "
            f"{qs[49]:8.1f} {qs[94]:8.1f} {qs[98]:8.1f} {self.requests:>9}"
        )


def load(port: int, url: str, clients: int) -> Result:
    """Send ``url`` from ``clients`` threads: a warm-up, then the measured, bounded part."""
    lock = threading.Lock()
    latencies: list[float] = []
    failures: list[str] = []
    enough = threading.Event()
    start = time.monotonic()
    measure_from = start + WARMUP_S
    stop_at = measure_from + SECONDS

    def client() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
        mine: list[float] = []
        try:
            while not enough.is_set():
                began = time.monotonic()
                if began >= stop_at:
                    break
                connection.request("GET", url)
                response = connection.getresponse()
                response.read()
                ended = time.monotonic()
                if response.status != 200:
                    failures.append(f"{url}: {response.status}")
                    enough.set()
                    break
                if began >= measure_from:
                    mine.append((ended - began) * 1000)
                    if len(mine) % 64 == 0:
                        with lock:
                            latencies.extend(mine)
                            mine.clear()
                            if len(latencies) >= MAX_REQUESTS:
                                enough.set()
        except Exception as exc:  # reported below, with the URL
            failures.append(f"{url}: {exc!r}")
            enough.set()
        finally:
            connection.close()
            with lock:
                latencies.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = min(time.monotonic(), stop_at) - measure_from
    if failures:
        raise AssertionError(f"{len(failures)} failed requests, first: {failures[0]}")
    return Result(url, clients, len(latencies), elapsed, latencies)


def _load_average() -> str:
    """Return the 1, 5 and 15 minute load averages: other work on the machine skews figures."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    data = Path(tempfile.mkdtemp(prefix="mirrorbench-load-"))
    os.environ["MIRRORBENCH_DATA_DIR"] = str(data)
    os.environ["DJANGO_SECRET_KEY"] = SECRET_KEY
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mirrorbench_site.settings")
    try:
        setup_s = build_data_dir(data)
        revision = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        print(
            f"MirrorBench load benchmark at {revision or '?'}: {ENTRIES} entries x 264 episodes "
            f"+ the paper's rows (built in {setup_s:.0f} s)"
        )
        print(
            f"gunicorn {WORKERS} workers x {THREADS} threads on 127.0.0.1; Python client threads, "
            f"keep-alive; {WARMUP_S:g} s warm-up, then {SECONDS:g} s or {MAX_REQUESTS} requests."
        )
        print(
            f"Client and server share this machine's {os.cpu_count()} cores: compare figures, "
            "do not read them as capacity."
        )
        port = free_port()
        log = data / "gunicorn.log"
        server = server_start(data, port, log)
        try:
            print(f"load average before: {_load_average()}")
            print(
                f"{'url':30} {'clients':>7} {'req/s':>9} {'p50 ms':>8} {'p95 ms':>8} "
                f"{'p99 ms':>8} {'requests':>9}"
            )
            for url in URLS:
                for clients in CLIENTS:
                    print(load(port, url, clients).line(), flush=True)
            print(f"load average after: {_load_average()}")
        except AssertionError:
            print(f"gunicorn's log ends:\n{log.read_text()[-4000:]}", file=sys.stderr)
            raise
        finally:
            server_stop(server)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
