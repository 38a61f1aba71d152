"""The data directory's disk full for 10 s while a model's run stores its episodes (SQLite),
its frames (files) and its messages (the embedded broker), all on one small tmpfs: the errors
say the disk is full, no row or file is left half-written, and the run goes on by itself once
space is back, without waiting for the stale-episode check (set to 120 s here)."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from tests.evaluation.fake_providers import FakeOpenAI, Scripted
from tests.faults.processes import (
    log_of,
    site_env,
    start_beat,
    start_celery_worker,
    wait_until,
)
from tests.leaderboard.workers import stop_worker

pytestmark = pytest.mark.slow

FULL_S = 10
SCENE = "tienkung-allegro-logo_0"
DISK = "64m"
SUFFIXES = {"png": "png", "webp": "webp", "thumb": "thumb.webp"}


@pytest.fixture
def small_disk(tmp_path):
    """A 64 MB tmpfs for the data directory (root may mount one; else the test is skipped)."""
    mount = tmp_path / "data"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}): run as root")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(disk: Path) -> Path:
    """Write a file until the disk is full; return it."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:
        for size in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    out.write(b"\0" * size)
    return filler


def rows(db: Path, sql: str, *params: object) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(db, timeout=30)) as conn:
        return conn.execute(sql, params).fetchall()


def test_a_run_goes_on_once_the_full_disk_has_space_again(small_disk, tmp_path, fault_row):
    db = small_disk / "db.sqlite3"
    env = {
        "MIRRORBENCH_DATA_DIR": str(small_disk),
        "MIRRORBENCH_SQLITE_PATH": str(db),
        "MIRRORBENCH_EPISODE_STALE_S": "120",
        "MIRRORBENCH_STALE_CHECK_S": "1",
    }

    def manage(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            env=site_env(env),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    manage("migrate", "--noinput")
    worker = beat = None
    try:
        with FakeOpenAI() as fake:
            fake.enqueue(*[Scripted(200, delay_s=0.3)] * 400)
            worker = start_celery_worker(env=env, queues=("models",))
            beat = start_beat(env=env)
            out = manage(
                *("evaluate", "--agent", "openai:fake-vl", "--base-url", fake.base_url),
                *("--scenes", SCENE, "--levels", "0,1,2,3", "--image-size", "32"),
                *("--kind", "open-weights", "--json"),
            )
            run_id = json.loads(out.strip().splitlines()[-1])["run"]
            steps_sql = (
                "SELECT count(*) FROM leaderboard_step s JOIN leaderboard_episode e "
                "ON s.episode_id = e.id WHERE e.run_id = ?"
            )

            def steps() -> int:
                return int(rows(db, steps_sql, run_id)[0][0])

            def status() -> str:
                return str(
                    rows(db, "SELECT status FROM leaderboard_run WHERE id = ?", run_id)[0][0]
                )

            wait_until(lambda: steps() >= 5, timeout=90, what="no step was stored")
            filler = fill(small_disk)
            time.sleep(FULL_S)
            in_full = steps()
            filler.unlink()
            back = time.monotonic()
            wait_until(
                lambda: steps() > in_full or status() != "running",
                timeout=60,
                what="no step was stored after space came back",
            )
            recovered = time.monotonic() - back
            wait_until(
                lambda: status() == "completed",
                timeout=90,
                what="the run did not complete after space came back",
            )
    finally:
        for process in (beat, worker):
            if process is not None:
                stop_worker(process)
    logs = "".join(log_of(p) for p in (worker, beat) if p is not None)
    episodes = rows(
        db,
        "SELECT id, status, attempts, steps_taken FROM leaderboard_episode WHERE run_id = ?",
        run_id,
    )
    indices = rows(
        db,
        'SELECT s.episode_id, s."index", s.frame_key FROM leaderboard_step s '
        "JOIN leaderboard_episode e ON s.episode_id = e.id WHERE e.run_id = ? ORDER BY 1, 2",
        run_id,
    )
    fault_row(
        f"data disk full {FULL_S} s (tmpfs {DISK})",
        len(episodes),
        sum(1 for e in episodes if e[1] == "completed"),
        sum(e[2] - 1 for e in episodes) + len(indices) - len({(e, i) for e, i, _ in indices}),
        recovered,
    )
    # The errors said what happened.
    assert "No space left on device" in logs or "database or disk is full" in logs
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    assert [e[1] for e in episodes] == ["completed"] * 4
    for episode_id, _, _, taken in episodes:
        assert [i for e, i, _ in indices if e == episode_id] == list(range(taken))
    # Every frame a step names is stored whole, each file once.
    frames = small_disk / "media" / "frames"
    keys = {key for _, _, key in indices}
    for key in keys:
        for suffix in SUFFIXES.values():
            with Image.open(frames / key[:2] / f"{key}.{suffix}") as image:
                image.verify()
    names = [p.name for p in frames.rglob("*") if p.is_file()]
    stray = [n for n in names if not re.fullmatch(r"[0-9a-f]{40}\.(png|webp|thumb\.webp)", n)]
    assert not stray, f"files stored under other names: {stray}"
    assert [e[2] for e in episodes] == [1] * 4
