"""HTTPS deployments: the variables docs/deploy.md lists pass Django's deployment checks."""

from __future__ import annotations

import os
import subprocess
import sys
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
    from leaderboard.models import ModelEntry, Run, RunSecret
    from leaderboard.services.errors import FieldError
    from leaderboard.services.runs import hosted_run_create

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
