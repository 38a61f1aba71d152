"""The Celery application. Broker and queues are configured from Django settings."""

from __future__ import annotations

import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mirrorbench_site.settings")

app = Celery("mirrorbench")
app.config_from_object("django.conf:settings", namespace="CELERY")


@app.on_configure.connect
def _embedded_broker_folders(sender: Celery, **kwargs: object) -> None:
    """Point the filesystem transport at folders in the data directory and create them.

    Runs when the app is first configured (a worker starting, a task queued), never on
    reading the settings. Beat's schedule file goes to the data directory too.
    """
    from django.conf import settings

    Path(settings.CELERY_BEAT_SCHEDULE_FILENAME).parent.mkdir(parents=True, exist_ok=True)
    if not str(settings.CELERY_BROKER_URL).startswith("filesystem://"):
        return
    folder = Path(settings.CELERY_BROKER_DIR)
    for sub in ("queue", "processed", "control"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    sender.conf.broker_transport_options = {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "processed_folder": str(folder / "processed"),
        # The exchange-to-queue bindings; kombu's default is control/ in the current directory.
        "control_folder": str(folder / "control"),
        "store_processed": False,
        # The default polls once a second: a worker would then take at most one task a second.
        "polling_interval": 0.05,
    }


app.autodiscover_tasks()


QUEUES = ("models", "render")


def worker_command(
    *,
    concurrency: int,
    beat: bool = True,
    queues: tuple[str, ...] = QUEUES,
    loglevel: str | None = None,
    extra: tuple[str, ...] = (),
) -> list[str]:
    """Return the command line of one worker on ``queues`` (both by default), with threads.

    Threads suit both queues here: model calls wait on the network, and each rendering thread
    keeps its own OpenGL context. ``beat`` embeds the periodic stale-episode check, for a worker
    that runs alone: exactly one process of a deployment should run beat (``manage.py serve``
    runs it apart, as ``beat_command``). A worker on one queue is named after it
    (``render@host``), so two workers of one machine never share a node name. ``loglevel``
    defaults to ``MIRRORBENCH_LOG_LEVEL``.
    """
    import sys

    from django.conf import settings

    unknown = sorted(set(queues) - set(QUEUES))
    if unknown or not queues:
        raise ValueError(f"queues: expected some of {', '.join(QUEUES)}, got {list(queues)}")
    level = loglevel or settings.MIRRORBENCH_LOG_LEVEL
    command = [sys.executable, "-m", "celery", "-A", "mirrorbench_site", "worker"]
    command += ["-Q", ",".join(queues), "-P", "threads", "-c", str(concurrency), "-l", level]
    if len(queues) == 1:
        command += ["-n", f"{queues[0]}@%h"]
    return command + (["-B"] if beat else []) + list(extra)


def beat_command(*, loglevel: str | None = None, extra: tuple[str, ...] = ()) -> list[str]:
    """Return the command line of beat alone, its schedule file under the data directory.

    ``loglevel`` defaults to ``MIRRORBENCH_LOG_LEVEL``.
    """
    import sys

    from django.conf import settings

    level = loglevel or settings.MIRRORBENCH_LOG_LEVEL
    command = [sys.executable, "-m", "celery", "-A", "mirrorbench_site", "beat", "-l", level]
    return [*command, "-s", str(settings.CELERY_BEAT_SCHEDULE_FILENAME), *extra]
