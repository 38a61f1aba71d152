"""The data directory is private to the service's account: database, write-ahead log, media,
bundles, broker messages (only the collected static files may be read by others)."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from leaderboard.management.commands.prepare_data_dir import PRIVATE_UMASK

ROOT = Path(__file__).resolve().parents[2]


def environment(data: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MIRRORBENCH_"))}
    environ.pop("CELERY_BROKER_URL", None)
    environ.pop("DATABASE_URL", None)
    return {**environ, "MIRRORBENCH_DATA_DIR": str(data)}


def manage(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``manage.py`` as an administrator's shell runs it: umask 022."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment(data),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        preexec_fn=lambda: os.umask(0o022),
    )


def open_to_others(data: Path) -> list[str]:
    """Everything under ``data`` (the collected static files aside, and the log a test writes
    there) that the group or other accounts may read, write or enter, with its mode."""
    found = []
    for path in [data, *data.rglob("*")]:
        if path.is_symlink() or (data / "staticfiles") in (path, *path.parents):
            continue
        if path == data / "serve.log":
            continue
        try:
            mode = stat.S_IMODE(path.lstat().st_mode)
        except FileNotFoundError:  # a broker message claimed (renamed) since the listing
            continue
        if mode & 0o077:
            found.append(f"{path.relative_to(data.parent)} {mode:o}")
    return found


def write(path: Path, mode: int, text: str = "x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def test_prepare_data_dir_makes_what_the_data_directory_holds_private(tmp_path):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    for name in (
        "media/frames/ab/ab12.png",
        "broker/queue/1.msg",
        "db.sqlite3-wal",
        "bundle.jsonl",
    ):
        write(data / name, 0o644)
    for folder in ("media", "media/frames", "media/frames/ab", "broker", "broker/queue"):
        (data / folder).chmod(0o755)
    write(data / "staticfiles" / "css" / "site.css", 0o644)
    (data / "passwd").symlink_to("/etc/passwd")
    passwd_mode = stat.S_IMODE(Path("/etc/passwd").stat().st_mode)

    output = manage(data, "prepare_data_dir").stdout
    assert "private" in output
    assert open_to_others(data) == []
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE((data / "bundle.jsonl").stat().st_mode) == 0o600
    assert stat.S_IMODE((data / "media" / "frames").stat().st_mode) == 0o700
    # The collected static files may stay readable, and a link's target is not touched.
    assert stat.S_IMODE((data / "staticfiles" / "css" / "site.css").stat().st_mode) == 0o644
    assert stat.S_IMODE(Path("/etc/passwd").stat().st_mode) == passwd_mode


def test_a_new_data_directory_stays_private_through_migrate(tmp_path):
    data = tmp_path / "new"
    manage(data, "prepare_data_dir")
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE((data / "db.sqlite3").stat().st_mode) == 0o600
    manage(data, "migrate", "--noinput", "-v0")  # umask 022: SQLite keeps the file's mode
    assert (data / "db.sqlite3").stat().st_size > 0
    assert open_to_others(data) == []


def test_the_worker_command_starts_celery_with_a_private_umask(monkeypatch):
    from django.core.management import call_command

    seen = {}

    def execv(path: str, argv: list[str]) -> None:
        seen["umask"] = os.umask(0o022)
        os.umask(seen["umask"])

    monkeypatch.setattr(os, "execv", execv)
    before = os.umask(0o022)
    try:
        call_command("worker", "--no-beat")
    finally:
        os.umask(before)
    assert seen["umask"] == PRIVATE_UMASK


def _umask(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    return None


def _stored_by_every_part(data: Path) -> bool:
    """Whether the site has cached a page, queued messages, and the worker has written to the
    database through its write-ahead log (a baseline run started: its episodes queued)."""
    if not (data / "db.sqlite3-wal").exists():
        return False
    if not any(p.is_file() for p in (data / "cache").rglob("*")):
        return False
    if not any(p.is_file() for p in (data / "broker").rglob("*")):
        return False
    with sqlite3.connect(f"file:{data / 'db.sqlite3'}?mode=ro", uri=True, timeout=30) as db:
        started = db.execute(
            "SELECT COUNT(*) FROM leaderboard_run WHERE status = 'running'"
        ).fetchone()
    return bool(started[0])


@pytest.mark.slow
def test_serve_and_everything_it_stores_are_private(tmp_path):
    from tests.leaderboard.test_serve import (
        free_port,
        get,
        kill_processes_of,
        processes_of,
        start_serve,
        stop_serve,
    )

    data = tmp_path / "data"
    manage(data, "prepare_data_dir")
    manage(data, "migrate", "--noinput", "-v0")
    env = {**environment(data), "DJANGO_SETTINGS_MODULE": "mirrorbench_site.settings"}
    # The service account's home: serve keeps what it stores in the data directory, not there
    # (gunicorn's control socket went to ~/.gunicorn, shared by every site of the account).
    home = tmp_path / "home"
    home.mkdir()
    env["HOME"] = str(home)
    env.pop("XDG_RUNTIME_DIR", None)
    port = free_port()
    old = os.umask(0o022)  # an administrator's shell
    try:
        serve = start_serve(env, port)
    finally:
        os.umask(old)
    try:
        deadline = time.monotonic() + 90
        while get(port) != 200:
            assert time.monotonic() < deadline, "the site did not come up"
            time.sleep(0.5)
        # Pages cached (cache files), the baseline runs queued (broker messages) and being
        # started by the worker (database and its write-ahead log): once each is there, not
        # after a fixed wait with the worker playing all along.
        for path in ("/", "/charts/", "/api/runs/"):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as page:
                page.read()
        deadline = time.monotonic() + 90
        while not _stored_by_every_part(data):
            assert time.monotonic() < deadline, "the worker started no run in 90 s"
            time.sleep(0.5)
        umasks = {pid: _umask(pid) for pid in processes_of(data)}
        assert len(umasks) >= 4  # serve, the web server, the worker, the render worker, beat
        assert set(umasks.values()) <= {PRIVATE_UMASK, None}, umasks
        stored = [p for p in data.rglob("*") if p.is_file() and "staticfiles" not in p.parts]
        assert any("broker" in p.parts for p in stored) and any("cache" in p.parts for p in stored)
        assert open_to_others(data) == []
        assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == []
    finally:
        stop_serve(serve)
        kill_processes_of(data)
