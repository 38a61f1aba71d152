"""A throwaway PostgreSQL server on loopback (Debian's postgresql package), for the tests."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from tests.parts import TEST_DEPS, missing_part


def _bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def _as_postgres(args: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root; CI runs as root.
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a fresh cluster on a free loopback port; yield a DATABASE_URL; remove it after."""
    initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise FileNotFoundError("PostgreSQL is not installed (scripts/test-deps.sh installs it)")
    folder = tempfile.mkdtemp(prefix="mirrorbench-pg-")
    os.chmod(folder, 0o777)
    data = os.path.join(folder, "data")
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    subprocess.run(
        _as_postgres([initdb, "-D", data, "-U", "bench", "--auth=trust", "-E", "UTF8"]),
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        _as_postgres(
            [pg_ctl, "-D", data, "-o", options, "-l", os.path.join(folder, "log"), "-w", "start"]
        ),
        check=True,
        capture_output=True,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        subprocess.run(
            _as_postgres(
                [
                    _bin("createdb") or "createdb",
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(port),
                    "-U",
                    "bench",
                    "mirrorbench",
                ]
            ),
            check=True,
            capture_output=True,
        )
        yield f"postgres://bench@127.0.0.1:{port}/mirrorbench"
    finally:
        subprocess.run(
            _as_postgres([pg_ctl, "-D", data, "-m", "immediate", "stop"]), capture_output=True
        )
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def postgres_or_missing() -> Iterator[str]:
    """``postgres_server()`` for a test: when none can be started, the test is failed under
    ``CI=true`` or skipped otherwise (``missing_part``), saying why. Only the start is judged so:
    what fails in the test's own block fails the test."""
    with ExitStack() as stack:
        try:
            url = stack.enter_context(postgres_server())
        except (FileNotFoundError, subprocess.CalledProcessError) as exc:
            missing_part("a PostgreSQL server", f"none could be started ({exc}); {TEST_DEPS}")
        yield url
