"""HTTPS deployments: the variables docs/deploy.md lists pass Django's deployment checks."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = {
    "MIRRORBENCH_HTTPS": "1",
    "DJANGO_SECRET_KEY": "k" * 20 + "-Zx9!qW3#eR5tY7uI1oP0aS2dF4gH6jK8lM",
    "DJANGO_ALLOWED_HOSTS": "mirrorbench.example.org",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://mirrorbench.example.org",
    "MIRRORBENCH_KEY_ENCRYPTION_KEY": Fernet.generate_key().decode(),
    "MIRRORBENCH_TRUSTED_PROXIES": "1",
    "DJANGO_EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
    "DJANGO_EMAIL_HOST": "smtp.example.org",
}


def check(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MIRRORBENCH_"))}
    environ.update(MIRRORBENCH_DATA_DIR=str(tmp_path / "data"), **env)
    return subprocess.run(
        [sys.executable, "manage.py", "check", *args],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_documented_variables_pass_check_deploy(tmp_path):
    result = check(tmp_path, DEPLOY, "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    docs = (ROOT / "docs" / "deploy.md").read_text()
    for name in DEPLOY:
        assert f"export {name}=" in docs, f"docs/deploy.md does not list {name}"


def test_the_embedded_defaults_do_not_pass_check_deploy(tmp_path):
    result = check(tmp_path, {}, "--deploy", "--fail-level", "WARNING")
    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr


def test_https_without_trusted_proxies_does_not_pass_check_deploy(tmp_path):
    result = check(tmp_path, {**DEPLOY, "MIRRORBENCH_TRUSTED_PROXIES": ""}, "--deploy")
    assert "mirrorbench.W001" in result.stderr + result.stdout


@pytest.mark.parametrize(
    ("env", "error"),
    [
        ({"MIRRORBENCH_KEY_ENCRYPTION_KEY": ""}, "mirrorbench.E002"),
        ({"MIRRORBENCH_KEY_ENCRYPTION_KEY": "not-a-key"}, "mirrorbench.E001"),
    ],
)
def test_https_without_a_proper_key_encryption_key_fails_the_check(tmp_path, env, error):
    result = check(tmp_path, {**DEPLOY, **env})
    assert result.returncode != 0
    assert error in result.stderr


UNSENT = [
    "django.core.mail.backends.console.EmailBackend",
    "django.core.mail.backends.filebased.EmailBackend",
    "django.core.mail.backends.locmem.EmailBackend",
]


@pytest.mark.parametrize("backend", UNSENT)
def test_https_with_mail_that_is_never_sent_fails_the_deploy_check(tmp_path, backend):
    result = check(tmp_path, {**DEPLOY, "DJANGO_EMAIL_BACKEND": backend}, "--deploy")
    assert result.returncode != 0
    assert "mirrorbench.E003" in result.stderr and backend in result.stderr


def test_the_console_mail_backend_is_fine_without_https(tmp_path):
    """The embedded default (a local site): reset links go to the terminal of `make run`."""
    result = check(tmp_path, {"DJANGO_EMAIL_BACKEND": UNSENT[0]}, "--deploy")
    assert "mirrorbench.E003" not in result.stderr


def test_serve_refuses_to_start_an_https_site_whose_mail_goes_to_its_log(tmp_path):
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MIRRORBENCH_"))}
    environ.update(DEPLOY, MIRRORBENCH_DATA_DIR=str(tmp_path / "data"))
    environ["DJANGO_EMAIL_BACKEND"] = UNSENT[0]
    result = subprocess.run(
        [sys.executable, "manage.py", "serve", "--no-baselines", "--port", "1"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "mirrorbench.E003" in result.stderr
    assert "Started" not in result.stdout  # refused before a web server, worker or beat


@pytest.mark.django_db
def test_https_mode_redirects_and_sets_hsts(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    plain = client.get("/about/")
    assert plain.status_code == 301 and plain["Location"].startswith("https://")
    secure = client.get("/about/", HTTP_X_FORWARDED_PROTO="https")
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"].startswith("max-age=31536000")


@pytest.mark.django_db
def test_without_the_key_an_https_server_refuses_api_keys_and_writes_nothing(
    django_user_model, settings
):
    from leaderboard.errors import FieldError
    from leaderboard.models import ModelEntry, Run, RunSecret
    from leaderboard.runs.services import hosted_run_create

    alice = django_user_model.objects.create_user("alice")
    settings.MIRRORBENCH_HTTPS = True
    settings.MIRRORBENCH_KEY_ENCRYPTION_KEY = ""
    data = {
        "provider": "openai",
        "model": "gpt-4o",
        "kind": "proprietary",
        "api_key": "sk-test",
        "levels": [0],
        "scenes": "robot",
    }
    with pytest.raises(FieldError) as refused:
        hosted_run_create(user=alice, data=data)
    assert refused.value.field == "api_key"
    assert "MIRRORBENCH_KEY_ENCRYPTION_KEY" in refused.value.message
    assert (ModelEntry.objects.count(), Run.objects.count(), RunSecret.objects.count()) == (0, 0, 0)


def test_the_access_log_of_serve_never_shows_a_password_reset_token():
    from types import SimpleNamespace

    from gunicorn.config import Config

    from leaderboard.management.commands.serve import web_command
    from mirrorbench_site.access_log import AccessLogger

    command = web_command(bind="127.0.0.1:8000", workers=1, loglevel="INFO", access_log=True)
    assert (
        command[command.index("--logger-class") + 1] == "mirrorbench_site.access_log.AccessLogger"
    )
    link = "/accounts/reset/MQ/cz9k1a-0f4e5d6c7b8a9f0e1d2c3b4a59687766/"
    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": link,
        "PATH_INFO": link,
        "QUERY_STRING": "",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_REFERER": f"https://mirrorbench.example.org{link}",
    }
    response = SimpleNamespace(status="302 Found", headers=[], sent=0)
    request = SimpleNamespace(headers=[("REFERER", f"https://mirrorbench.example.org{link}")])
    atoms = AccessLogger(Config()).atoms(response, request, environ, timedelta(seconds=1))
    logged = " ".join(str(value) for value in atoms.values())
    assert "cz9k1a" not in logged and "/accounts/reset/MQ/[token]/" in atoms["r"]
    assert (
        AccessLogger(Config()).atoms(
            response,
            SimpleNamespace(headers=[]),
            {**environ, "RAW_URI": "/accounts/reset/MQ/set-password/"},
            timedelta(seconds=1),
        )["r"]
        == "GET /accounts/reset/MQ/set-password/ HTTP/1.1"
    )
