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


def test_a_worker_serves_the_queues_it_is_given_and_is_named_after_a_single_one():
    from mirrorbench_site.celery import worker_command

    both = worker_command(concurrency=2, beat=False)
    assert both[both.index("-Q") + 1] == "models,render" and "-n" not in both
    render = worker_command(concurrency=1, beat=False, queues=("render",))
    assert render[render.index("-Q") + 1] == "render"
    assert render[render.index("-n") + 1] == "render@%h"
    with pytest.raises(ValueError, match="queues: expected some of models, render"):
        worker_command(concurrency=1, queues=("gpu",))


def test_the_worker_command_refuses_an_unknown_queue_by_name():
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="--queues: expected some of models, render"):
        call_command("worker", "--queues", "models,gpu")
