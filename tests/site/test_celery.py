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


def _retrying_task(root: Path):
    """A task that raises and retries itself, of a Celery app of its own with the site's task
    class, on an embedded broker under ``root``."""
    from celery import Celery

    from mirrorbench_site.celery import PatientTask

    names = ("queue", "incoming", "claimed", "corrupt", "processed", "control")
    for name in names:
        (root / name).mkdir(parents=True, exist_ok=True)
    app = Celery(f"retrying-{root.name}", task_cls=PatientTask, broker="filesystem://")
    app.conf.broker_transport_options = {
        **{f"{name}_folder": str(root / name) for name in names[1:]},
        "data_folder_in": str(root / "queue"),
        "data_folder_out": str(root / "queue"),
    }

    @app.task(bind=True, max_retries=3)
    def flaky(self, n: int) -> int:  # the name of the queue its copies go to: "celery"
        raise self.retry(exc=RuntimeError("not yet"), countdown=0)

    return flaky


def test_a_retry_the_broker_cannot_take_waits_for_it_instead_of_dropping_the_task(
    tmp_path, monkeypatch, caplog
):
    """The queue folder is gone for a second (a full disk, a broker restarting): the retry's
    copy is queued once it is back, where Celery's own retry would reject the task for good."""
    import threading

    from celery.exceptions import Retry

    from mirrorbench_site import celery as site_celery

    monkeypatch.setattr(site_celery, "RETRY_PUBLISH_WAIT_S", 30.0)
    flaky = _retrying_task(tmp_path)
    queue, away = tmp_path / "queue", tmp_path / "queue-away"
    queue.rename(away)
    back = threading.Timer(1.2, away.rename, args=(queue,))
    back.start()
    flaky.push_request(
        id="t-1", args=(7,), kwargs={}, retries=0, delivery_info={}, called_directly=False
    )
    try:
        with pytest.raises(Retry):
            flaky.run(7)
    finally:
        flaky.pop_request()
        back.join()
    (copy,) = queue.iterdir()  # the retry's copy, queued once the folder was back
    assert copy.name.endswith(".celery.msg")
    assert "cannot take the retry" in caplog.text


def test_a_retry_the_broker_never_takes_hands_the_task_back_rather_than_dropping_it(
    tmp_path, monkeypatch
):
    from celery.exceptions import Reject

    from mirrorbench_site import celery as site_celery

    monkeypatch.setattr(site_celery, "RETRY_PUBLISH_WAIT_S", 1.0)
    flaky = _retrying_task(tmp_path)
    (tmp_path / "queue").rename(tmp_path / "queue-away")
    flaky.push_request(
        id="t-2", args=(7,), kwargs={}, retries=0, delivery_info={}, called_directly=False
    )
    try:
        with pytest.raises(Reject) as rejected:
            flaky.run(7)
    finally:
        flaky.pop_request()
    assert rejected.value.requeue is True
