"""Servers that a fault test stops and starts again on the same port: Redis, PostgreSQL."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.parts import TEST_DEPS, require_part


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
        require_part("redis-server", shutil.which("redis-server") is not None, TEST_DEPS)
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


class PostgresServer:
    """A throwaway PostgreSQL cluster on a loopback port (``tests.leaderboard.postgres``'s set-up)
    that can be stopped (``-m fast``: every connection is cut) and started again on that port."""

    def __init__(self) -> None:
        from tests.leaderboard.postgres import _as_postgres, _bin

        initdb, self._pg_ctl = _bin("initdb"), _bin("pg_ctl")
        require_part("PostgreSQL", initdb is not None and self._pg_ctl is not None, TEST_DEPS)
        self._as_postgres = _as_postgres
        self.folder = Path(tempfile.mkdtemp(prefix="mirrorbench-pg-"))
        self.folder.chmod(0o777)
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")
        self.data = self.folder / "data"
        self.port = free_port()
        subprocess.run(
            self._as_postgres(
                [initdb, "-D", str(self.data), "-U", "bench", "--auth=trust", "-E", "UTF8"]
            ),
            check=True,
            capture_output=True,
        )

    @property
    def url(self) -> str:
        return f"postgres://bench@127.0.0.1:{self.port}/mirrorbench"

    def _ctl(self, *args: str) -> None:
        assert self._pg_ctl is not None
        subprocess.run(
            self._as_postgres([self._pg_ctl, "-D", str(self.data), *args]),
            check=True,
            capture_output=True,
        )

    def start(self) -> PostgresServer:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._ctl("-o", options, "-l", str(self.folder / "log"), "-w", "start")
        wait_for_port(self.port)
        return self

    def create_database(self) -> None:
        from tests.leaderboard.postgres import _bin

        createdb = _bin("createdb") or "createdb"
        subprocess.run(
            self._as_postgres(
                [createdb, "-h", "127.0.0.1", "-p", str(self.port), "-U", "bench", "mirrorbench"]
            ),
            check=True,
            capture_output=True,
        )

    def stop(self, mode: str = "fast") -> None:
        self._ctl("-m", mode, "-w", "stop")

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)
