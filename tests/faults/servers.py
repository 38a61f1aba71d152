"""Servers that a fault test stops and starts again on the same port: Redis."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, *, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing listens on port {port}"
            time.sleep(0.05)


class RedisServer:
    """Debian's redis-server on a loopback port, its data in ``folder``.

    ``stop()`` is a clean shutdown (SIGTERM: Redis saves its data set, as ``systemctl stop``
    does) or a crash (``kill=True``), ``start()`` brings it back on the same port with what
    was saved.
    """

    def __init__(self, folder: Path) -> None:
        if shutil.which("redis-server") is None:
            pytest.skip("redis-server is not installed (scripts/test-deps.sh installs it)")
        self.folder = folder
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> RedisServer:
        self.process = subprocess.Popen(
            [
                *("redis-server", "--bind", "127.0.0.1", "--port", str(self.port)),
                *("--save", "3600 1", "--appendonly", "no", "--dir", str(self.folder)),
            ],
            stdout=subprocess.DEVNULL,
        )
        wait_for_port(self.port)
        return self

    def stop(self, *, kill: bool = False) -> None:
        """Shut Redis down cleanly, or kill it (SIGKILL: whatever it held since its last save,
        the queued messages among them, is lost)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill() if kill else self.process.terminate()
            self.process.wait(timeout=30)
        self.process = None
