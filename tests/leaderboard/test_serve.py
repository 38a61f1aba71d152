"""``manage.py serve`` (what ``make run`` starts): site and worker together, stopped together."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_serve_runs_the_site_and_a_worker_and_ctrl_c_stops_both(tmp_path):
    env = {
        **os.environ,
        "MIRRORBENCH_DATA_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "mirrorbench_site.settings",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run(
        [sys.executable, "manage.py", "load_reference_results"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    port = free_port()
    serve = subprocess.Popen(
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
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                    page = response.read().decode()
                break
            except OSError:
                assert time.monotonic() < deadline, "the site did not come up"
                time.sleep(0.5)
        assert "Gemini-2.5-Pro-API" in page
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/static/css/site.css", timeout=5
        ) as css:
            assert css.status == 200
        os.kill(serve.pid, signal.SIGINT)
        serve.wait(timeout=60)
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
    output = serve.stdout.read().decode() if serve.stdout else ""
    assert "Queued run" in output and "started" in output
    # Nothing is left running on the port.
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
