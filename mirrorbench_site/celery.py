"""The Celery application. Broker and queues are configured from Django settings."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from celery import Celery, Task
from celery.exceptions import Reject
from celery.signals import worker_init
from kombu.exceptions import OperationalError as BrokerError

from evaluation.memory import limit_malloc_arenas
from mirrorbench_site import broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mirrorbench_site.settings")
# Celery's Django fix-up runs every system check when a worker or beat starts, and drops what
# they find: nothing is reported, nothing stops. The URL checks among them import every view,
# DRF and drf-spectacular, a quarter of a worker's start-up CPU (0.96 -> 0.71 s to "ready"). The
# checks that report run where they can: every `manage.py` command, `serve` and `worker` among
# them, and `manage.py check --deploy`. CELERY_SKIP_CHECKS= (empty) runs them again.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

# filesystem:// names the site's transport (``mirrorbench_site.broker``), kombu's with atomic
# writes and claims: kombu's own loses messages and stops the worker under concurrent use.
broker.register("filesystem")

logger = logging.getLogger(__name__)

RETRY_PUBLISH_WAIT_S = 60.0
"""How long a task's retry waits for a broker that cannot take the retry's message (a full
disk under the embedded broker, Redis restarting) before handing the task back to the queue."""


class PatientTask(Task):
    """Every task of the site: a retry that cannot be queued waits for the broker.

    Celery's ``retry`` queues a copy of the task and acknowledges the one running; when the
    copy cannot be queued it rejects the running one without requeueing it, and the task is
    gone (an episode then waits for the stale-episode check). Here the copy is queued again,
    with back-off, for up to ``RETRY_PUBLISH_WAIT_S``; after that the running message is handed
    back to the broker (rejected with requeue) rather than dropped.
    """

    def retry(self, *args: Any, **kwargs: Any) -> Any:
        deadline = time.monotonic() + RETRY_PUBLISH_WAIT_S
        delay = 0.5
        while True:
            try:
                return super().retry(*args, **kwargs)
            except Reject as rejected:
                reason = rejected.reason
                if rejected.requeue or not isinstance(reason, (BrokerError, OSError)):
                    raise
                if time.monotonic() + delay > deadline:
                    raise Reject(reason, requeue=True) from reason
                logger.warning(
                    "%s: the broker cannot take the retry (%s); trying again in %.1f s",
                    self.name,
                    reason,
                    delay,
                )
                time.sleep(delay)
                delay = min(delay * 2, 5.0)


app = Celery("mirrorbench", task_cls=PatientTask)
app.config_from_object("django.conf:settings", namespace="CELERY")


@app.on_configure.connect
def _embedded_broker_folders(sender: Celery, **kwargs: object) -> None:
    """Point the filesystem transport (``mirrorbench_site.broker``) at folders in the data
    directory and create them.

    Runs when the app is first configured (a worker starting, a task queued), never on
    reading the settings. Beat's schedule file goes to the data directory too.
    """
    from django.conf import settings

    Path(settings.CELERY_BEAT_SCHEDULE_FILENAME).parent.mkdir(parents=True, exist_ok=True)
    if not str(settings.CELERY_BROKER_URL).startswith("filesystem://"):
        return
    folder = Path(settings.CELERY_BROKER_DIR)
    for sub in ("queue", "incoming", "claimed", "corrupt", "processed", "control"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    sender.conf.broker_transport_options = {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        # Written here, then renamed whole into queue/; claimed here by a rename, then read;
        # set aside here when unreadable. All on the queue folder's file system.
        "incoming_folder": str(folder / "incoming"),
        "claimed_folder": str(folder / "claimed"),
        "corrupt_folder": str(folder / "corrupt"),
        "processed_folder": str(folder / "processed"),
        # The exchange-to-queue bindings; kombu's default is control/ in the current directory.
        "control_folder": str(folder / "control"),
        "store_processed": False,
        # The default polls once a second: a worker would then take at most one task a second.
        "polling_interval": 0.05,
    }


app.autodiscover_tasks()


@worker_init.connect
def _limit_malloc_arenas(**kwargs: object) -> None:
    """A worker's task threads share few malloc arenas (``evaluation.memory``)."""

    limit_malloc_arenas()


QUEUES = ("models", "render")


def worker_command(
    *,
    concurrency: int,
    beat: bool = True,
    queues: tuple[str, ...] = QUEUES,
    loglevel: str | None = None,
    extra: tuple[str, ...] = (),
    quiet: bool = False,
) -> list[str]:
    """Return the command line of one worker on ``queues`` (both by default), with threads.

    Threads suit both queues here: model calls wait on the network, and each rendering thread
    keeps its own OpenGL context. ``beat`` embeds the periodic stale-episode check, for a worker
    that runs alone: exactly one process of a deployment should run beat (``manage.py serve``
    runs it apart, as ``beat_command``). A worker on one queue is named after it
    (``render@host``), so two workers of one machine never share a node name. ``loglevel``
    defaults to ``MIRRORBENCH_LOG_LEVEL``; ``quiet`` leaves out the start-up banner.
    """
    import sys

    from django.conf import settings

    unknown = sorted(set(queues) - set(QUEUES))
    if unknown or not queues:
        raise ValueError(f"queues: expected some of {', '.join(QUEUES)}, got {list(queues)}")
    level = loglevel or settings.MIRRORBENCH_LOG_LEVEL
    command = [sys.executable, "-m", "celery", *(["--quiet"] if quiet else [])]
    command += ["-A", "mirrorbench_site", "worker"]
    command += ["-Q", ",".join(queues), "-P", "threads", "-c", str(concurrency), "-l", level]
    if len(queues) == 1:
        command += ["-n", f"{queues[0]}@%h"]
    return command + (["-B"] if beat else []) + privileges_options() + list(extra)


def privileges_options() -> list[str]:
    """Return the ``--uid``/``--gid`` options that run a worker or beat without root.

    Celery warns at every start when it runs as root, and says what to do: give it another
    user with ``--uid``. Run as root, the workers take ``MIRRORBENCH_WORKER_USER`` if it is set,
    else the owner of the data directory when that is not root (someone who ran ``sudo make
    run`` on their own checkout): the user whose files the workers read and write. With
    neither (everything owned by root, as in a container), there is no other user who could
    write the data, and nothing is added.
    """
    import os
    import pwd

    from django.conf import settings

    if os.geteuid() != 0:
        return []
    name = settings.MIRRORBENCH_WORKER_USER
    try:
        entry = pwd.getpwnam(name) if name else pwd.getpwuid(os.stat(settings.DATA_DIR).st_uid)
    except (KeyError, FileNotFoundError):
        return []
    if entry.pw_uid == 0:
        return []
    return ["--uid", str(entry.pw_uid), "--gid", str(entry.pw_gid)]


def beat_command(
    *, loglevel: str | None = None, extra: tuple[str, ...] = (), quiet: bool = False
) -> list[str]:
    """Return the command line of beat alone, its schedule file under the data directory.

    ``loglevel`` defaults to ``MIRRORBENCH_LOG_LEVEL``.
    """
    import sys

    from django.conf import settings

    level = loglevel or settings.MIRRORBENCH_LOG_LEVEL
    command = [sys.executable, "-m", "celery", *(["--quiet"] if quiet else [])]
    command += ["-A", "mirrorbench_site", "beat", "-l", level]
    schedule = ["-s", str(settings.CELERY_BEAT_SCHEDULE_FILENAME)]
    return [*command, *schedule, *privileges_options(), *extra]
