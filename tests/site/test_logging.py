"""Logging: a request's 500 and a task's failure reach stderr with their tracebacks.

Each check runs the real thing in a subprocess (Django set up from the settings, a Celery
worker), so that what is read back is the process's own stderr, configured by the settings
alone. This module is also the URLconf of the failing view and the home of the failing task.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery import shared_task
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from mirrorbench_site.celery import worker_command

ROOT = Path(__file__).resolve().parents[2]


def view_that_fails(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("the view broke")


def view_that_refuses(request: HttpRequest) -> HttpResponse:
    raise PermissionDenied("not yours")


urlpatterns = [
    path("fails/", view_that_fails),
    path("refuses/", view_that_refuses),
    path("", include("mirrorbench_site.urls")),  # the site's pages: its 404 page links them
]
NEWS = re.compile(r" (django\.request|axes\.|OpenGL)")
"""The records the console should keep quiet about, and a 500's."""


@shared_task(name="tests.task_that_fails")
def task_that_fails() -> None:
    raise RuntimeError("the task broke")


REQUEST = """
import django
django.setup()
from django.test import Client, override_settings
with override_settings(ROOT_URLCONF="tests.site.test_logging", ALLOWED_HOSTS=["testserver"]):
    response = Client(raise_request_exception=False).get("/fails/")
print(response.status_code)
"""


def env_for(tmp_path: Path, **variables: str) -> dict[str, str]:
    unset = ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "DATABASE_URL", "MIRRORBENCH_LOG_LEVEL")
    return {
        **{k: v for k, v in os.environ.items() if k not in unset},
        "MIRRORBENCH_DATA_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "mirrorbench_site.settings",
        **variables,
    }


def request_failing_view(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", REQUEST],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_500_is_logged_to_stderr_with_its_traceback(tmp_path):
    result = request_failing_view(env_for(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "500"
    assert "ERROR django.request" in result.stderr
    assert "Internal Server Error: /fails/" in result.stderr
    assert "Traceback (most recent call last):" in result.stderr
    assert 'in view_that_fails\n    raise RuntimeError("the view broke")' in result.stderr
    assert "RuntimeError: the view broke" in result.stderr
    # Once: Django's own handlers do not write it a second time.
    assert result.stderr.count("RuntimeError: the view broke") == 1


ROUTINE = """
import django
django.setup()
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client, override_settings

import OpenGL.GL  # says at INFO that it found no OpenGL_accelerate

call_command("migrate", verbosity=0)
User.objects.create_user("alice", password="a-long-password-42")
with override_settings(ROOT_URLCONF="tests.site.test_logging", ALLOWED_HOSTS=["testserver"]):
    client = Client(raise_request_exception=False)
    statuses = [client.get("/no/such/page/").status_code, client.get("/refuses/").status_code]
    password = {"username": "alice", "password": "a-long-password-42"}
    statuses.append(client.post("/accounts/login/", password).status_code)
    statuses.append(client.get("/fails/").status_code)
print(statuses)
"""


def run_routine(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ROUTINE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_console_keeps_errors_not_routine_news(tmp_path):
    """A 404, a 403, a sign-in (django-axes) and PyOpenGL's import write nothing at the
    default level, as the README promises of `make run`'s console; a 500 still does. At
    MIRRORBENCH_LOG_LEVEL=DEBUG all of them are written."""
    result = run_routine(env_for(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[404, 403, 302, 500]"
    logged = [line for line in result.stderr.splitlines() if NEWS.search(line)]
    assert len(logged) == 1 and "ERROR django.request" in logged[0], result.stderr[-3000:]
    assert "Internal Server Error: /fails/" in logged[0]
    (tmp_path / "debug").mkdir()
    result = run_routine(env_for(tmp_path / "debug", MIRRORBENCH_LOG_LEVEL="DEBUG"))
    assert result.returncode == 0, result.stderr[-3000:]
    for said in ("Not Found: /no/such/page/", "Forbidden (Permission denied): /refuses/"):
        assert said in result.stderr, said
    assert "INFO axes" in result.stderr and "OpenGL_accelerate" in result.stderr


def test_the_log_level_comes_from_the_environment(tmp_path):
    result = request_failing_view(env_for(tmp_path, MIRRORBENCH_LOG_LEVEL="critical"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "500"
    assert "the view broke" not in result.stderr


def test_a_log_level_that_does_not_exist_stops_the_process(tmp_path):
    result = request_failing_view(env_for(tmp_path, MIRRORBENCH_LOG_LEVEL="loud"))
    assert result.returncode != 0
    assert "MIRRORBENCH_LOG_LEVEL='loud': expected one of DEBUG, INFO" in result.stderr


@pytest.mark.slow
def test_a_failing_task_logs_its_traceback_in_the_worker(tmp_path):
    env = env_for(tmp_path)
    call = [sys.executable, "-m", "celery", "-A", "mirrorbench_site", "call"]
    queued = subprocess.run(
        [*call, "tests.task_that_fails"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert queued.returncode == 0, queued.stderr[-3000:]
    stderr = tmp_path / "worker.stderr"
    command = worker_command(
        concurrency=1,
        beat=False,
        extra=("-I", "tests.site.test_logging", "--without-mingle", "--without-gossip"),
    )
    with stderr.open("wb") as log:
        worker = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 90
        while "RuntimeError: the task broke" not in stderr.read_text(errors="replace"):
            assert worker.poll() is None, stderr.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the worker did not run the task in 90 s"
            time.sleep(0.2)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    logged = stderr.read_text(errors="replace")
    assert f"Task tests.task_that_fails[{queued.stdout.strip()}] raised unexpected" in logged
    assert "Traceback (most recent call last):" in logged
    assert 'in task_that_fails\n    raise RuntimeError("the task broke")' in logged
