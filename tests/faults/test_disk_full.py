"""The data directory's disk full for 10 s while a model's run stores its episodes (SQLite),
its frames (files) and its messages (the embedded broker), all on one small tmpfs: the errors
say the disk is full, no row or file is left half-written, and the run goes on by itself once
space is back, without waiting for the stale-episode check (set to 120 s here)."""

from __future__ import annotations

import contextlib
import re
import sqlite3
import subprocess
import time
from functools import partial
from pathlib import Path

import pytest
from PIL import Image

from tests.evaluation.fake_providers import FakeOpenAI, Scripted
from tests.faults.processes import (
    FAKE_RUN_EPISODES,
    RunRows,
    assert_played_once,
    duplicated,
    fake_run_queue,
    log_of,
    manage,
    start_beat,
    start_celery_worker,
    wait_for_recovery,
    wait_until,
)
from tests.leaderboard.workers import stop_worker

pytestmark = [pytest.mark.slow, pytest.mark.waits]

FULL_S = 10
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
    manage(env, "migrate", "--noinput")
    worker = beat = None
    try:
        with FakeOpenAI() as fake:
            fake.enqueue(*[Scripted(200, delay_s=0.3)] * 400)
            worker = start_celery_worker(env=env, queues=("models",))
            beat = start_beat(env=env)
            run = RunRows(partial(rows, db), fake_run_queue(env, fake.base_url), "?")
            wait_until(lambda: run.steps() >= 5, timeout=90, what="no step was stored")
            filler = fill(small_disk)
            time.sleep(FULL_S)
            in_full = run.steps()
            filler.unlink()
            recovered = wait_for_recovery(run.steps, run.status, before=in_full, part="space")
    finally:
        for process in (beat, worker):
            if process is not None:
                stop_worker(process)
    logs = "".join(log_of(p) for p in (worker, beat) if p is not None)
    episodes = run.episodes()
    indices = run.step_rows()
    fault_row(
        f"data disk full {FULL_S} s (tmpfs {DISK})",
        len(episodes),
        sum(1 for e in episodes if e[1] == "completed"),
        duplicated(episodes, indices),
        recovered,
    )
    # The errors said what happened.
    assert "No space left on device" in logs or "database or disk is full" in logs
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    assert_played_once(episodes, indices, FAKE_RUN_EPISODES)
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
