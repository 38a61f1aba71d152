"""Fault injection with the real parts: each test starts a real server (worker, beat, Redis,
PostgreSQL, an S3-compatible server, the web server), breaks it in the middle of a run or an
upload, and checks that nothing is lost or duplicated and that the work resumes by itself once
the part is back. Each prints one row of the fault table (``fault_row``); ``pytest -s`` or
``-rA`` shows them."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.outbound import ALLOW_PRIVATE_ENV
from tests.leaderboard.conftest import s3_server  # noqa: F401  (the fixture: moto on loopback)
from tests.leaderboard.workers import Results

HERE = Path(__file__).resolve().parent

LINES = {
    "test_redis_outage.py": "faults-a",
    "test_two_hosts.py": "faults-a",
    "test_disk_full.py": "faults-a",
}
"""The two lines the fault tests run in under ``make test`` (pytest-xdist groups): these
modules in one, the others in the other, about 190 s each on 2 cores. A fault test mostly waits
(an outage held for 10 s, a stale episode taken over, back-offs): spread over every worker,
three or four of them waited at once now and then and left the cores idle; in two lines, at most
two wait while the other workers compute."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put each fault test in its line (``LINES``, else ``faults-b``), before the hook that
    turns a group into its node-id suffix (``tests/conftest.py``)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.path.parent == HERE and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(LINES.get(item.path.name, "faults-b")))


HEADER = f"{'fault':<48} {'expected':>8} {'stored':>6} {'duplicated':>10} {'recovered in':>12}"


@pytest.fixture(autouse=True)
def local_models(settings, monkeypatch):
    """The fake providers listen on loopback: the site and the processes it starts may call
    private endpoints, as for a local vLLM server."""
    settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS = True
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")


@pytest.fixture
def results(tmp_path):
    """What the tasks of a worker started with ``results.env`` returned."""
    return Results(tmp_path / "results")


@pytest.fixture
def fault_row(capsys):
    """Print one row of the fault table, outside pytest's capture."""

    def row(fault: str, expected: int, stored: int, duplicated: int, recover_s: float) -> None:
        with capsys.disabled():
            print(
                f"\n{HEADER}\n{fault:<48} {expected:>8} {stored:>6} {duplicated:>10} "
                f"{recover_s:>11.1f}s"
            )

    return row
