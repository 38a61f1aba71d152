"""The tests' own process helper: ``stop_worker`` returns only once every process of the
group has ended, so a port or file they held is free when the next step starts."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.leaderboard.workers import stop_worker
from tests.proc import group_alive

# A leader that exits at once and a child that takes a moment to end, as gunicorn's master
# and its worker do: the child still holds what it opened while it ends.
FAMILY = """
import os, signal, sys, time
if os.fork() == 0:
    signal.signal(signal.SIGTERM, lambda *_: (time.sleep(0.5), sys.exit(0)))
    while True:
        time.sleep(0.05)
print("ready", flush=True)
time.sleep(60)
"""


def start_family() -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-c", FAMILY], stdout=subprocess.PIPE, start_new_session=True
    )
    assert process.stdout is not None and process.stdout.readline() == b"ready\n"
    deadline = time.monotonic() + 10
    while len(group_alive(process.pid)) < 2:
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.02)
    return process


def test_stopping_waits_for_every_process_of_the_group():
    process = start_family()
    stop_worker(process)
    assert group_alive(process.pid) == []


def test_killing_waits_for_every_process_of_the_group():
    process = start_family()
    stop_worker(process, kill=True)
    assert group_alive(process.pid) == []
