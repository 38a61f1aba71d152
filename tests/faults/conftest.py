"""Fault injection with the real parts: each test starts a real server (worker, beat, Redis,
PostgreSQL, an S3-compatible server, the web server), breaks it in the middle of a run or an
upload, and checks that nothing is lost or duplicated and that the work resumes by itself once
the part is back. Each prints one row of the fault table (``fault_row``); ``pytest -s`` or
``-rA`` shows them."""

from __future__ import annotations

import pytest

from evaluation.outbound import ALLOW_PRIVATE_ENV
from tests.leaderboard.conftest import s3_server  # noqa: F401  (the fixture: moto on loopback)
from tests.leaderboard.workers import Results

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
