"""How many workers ``-n auto`` starts, and the data directory each works in."""

import os
import subprocess
import sys
from pathlib import Path

from tests.xdist_workers import auto_workers, pytest_xdist_auto_num_workers, worker_data_dir

ROOT = Path(__file__).resolve().parents[1]


def test_auto_starts_two_workers_more_than_the_cores():
    assert auto_workers(1) == 3
    assert auto_workers(2) == 4
    assert auto_workers(16) == 18


def test_the_workers_follow_the_cores_this_process_may_use(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    assert pytest_xdist_auto_num_workers(config=None) == 5


def test_a_number_in_xdists_own_variable_wins(monkeypatch):
    # None lets xdist's own hook answer, and it reads the variable.
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    assert pytest_xdist_auto_num_workers(config=None) is None


def test_pytest_n_auto_starts_them(tmp_path):
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_AUTO_NUM_WORKERS"}
    env.pop("PYTEST_XDIST_WORKER", None)
    # Only xdist and this plugin: each worker loading every installed plugin cost 2 s of CPU.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "xdist",
            "-n",
            "auto",
            "-p",
            "tests.xdist_workers",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "-c",
            os.devnull,
            str(tmp_path / "test_one.py"),
        ],
        cwd=ROOT,
        env={**env, "MIRRORBENCH_DATA_DIR": str(tmp_path / "data")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    workers = auto_workers(len(os.sched_getaffinity(0)))
    assert f"created: {workers}/{workers} workers" in result.stdout, result.stdout[-2000:]


def test_each_worker_has_a_data_directory_of_its_own(tmp_path):
    environ = {"MIRRORBENCH_DATA_DIR": str(tmp_path), "PYTEST_XDIST_WORKER": "gw3"}
    assert worker_data_dir(environ) == tmp_path.resolve() / "xdist-gw3"
    assert worker_data_dir({"MIRRORBENCH_DATA_DIR": str(tmp_path)}) is None
