"""The Celery app: the embedded broker keeps every folder under the data directory."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def test_the_embedded_broker_folders_are_in_the_data_directory():
    from mirrorbench_site.celery import app

    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        pytest.skip("another broker is configured for this run")
    options = app.conf.broker_transport_options
    broker = Path(settings.CELERY_BROKER_DIR)
    assert broker.is_relative_to(settings.DATA_DIR)
    assert Path(options["control_folder"]) == broker / "control"
    assert Path(options["data_folder_in"]) == Path(options["data_folder_out"]) == broker / "queue"
    assert Path(options["processed_folder"]) == broker / "processed"
    assert all(Path(options[f"{name}_folder"]).is_dir() for name in ("control", "processed"))


def test_queueing_a_task_writes_its_bindings_under_the_data_dir_not_the_current_one(tmp_path):
    data, cwd = tmp_path / "data", tmp_path / "cwd"
    cwd.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"},
        "MIRRORBENCH_DATA_DIR": str(data),
        "DJANGO_SETTINGS_MODULE": "mirrorbench_site.settings",
    }
    code = "from leaderboard.tasks import episodes_requeue_stale; episodes_requeue_stale.delay()"
    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "shell", "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert list(cwd.iterdir()) == []
    assert (data / "broker" / "control" / "models.exchange").is_file()
    assert len(list((data / "broker" / "queue").iterdir())) == 1
