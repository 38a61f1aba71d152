"""The settings read the environment and the data directory, and write nothing."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def manage(data_dir: Path, *args: str, check: bool = True, **env: str):
    """Run ``manage.py`` with a data directory of its own and no secret key in the environment."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DJANGO_SECRET_KEY", "DATABASE_URL", "MIRRORBENCH_SQLITE_PATH")
    }
    environment.update(
        MIRRORBENCH_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="mirrorbench_site.settings"
    )
    environment.update(env)
    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


def shell(data_dir: Path, code: str, **env: str) -> str:
    """Return the last line that ``code`` printed in ``manage.py shell``."""
    return manage(data_dir, "shell", "-c", code, **env).stdout.strip().splitlines()[-1]


def test_reading_the_settings_creates_nothing(tmp_path):
    data = tmp_path / "nonexistent"
    manage(data, "check")
    assert not data.exists()


def test_prepare_data_dir_readies_a_fresh_data_directory_for_migrate(tmp_path):
    data = tmp_path / "fresh"
    first = manage(data, "prepare_data_dir")
    assert "Wrote a new secret key" in first.stdout
    key_file = data / "secret_key"
    key = key_file.read_text()
    assert len(key) > 50 and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert (data / "staticfiles").is_dir()
    # Again: nothing changes, the key is kept.
    assert "Wrote" not in manage(data, "prepare_data_dir").stdout
    assert key_file.read_text() == key
    manage(data, "migrate", "--noinput")
    assert (data / "db.sqlite3").is_file()
    assert shell(data, "from django.conf import settings; print(settings.SECRET_KEY)") == key


def test_the_environment_key_wins_over_the_key_file(tmp_path):
    manage(tmp_path, "prepare_data_dir")
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    assert shell(tmp_path, code, DJANGO_SECRET_KEY="from-the-environment") == (
        "from-the-environment"
    )


def test_without_a_key_a_throwaway_one_is_shared_with_the_processes_it_starts(tmp_path):
    code = (
        "import subprocess, sys; from django.conf import settings; "
        "child = subprocess.run([sys.executable, '-c', "
        "'import os; print(os.environ[\"DJANGO_SECRET_KEY\"])'], capture_output=True, text=True); "
        "print(len(settings.SECRET_KEY) > 50 and child.stdout.strip() == settings.SECRET_KEY)"
    )
    assert shell(tmp_path, code) == "True"
    assert not (tmp_path / "secret_key").exists()


def test_an_empty_key_file_stops_the_settings_naming_the_way_out(tmp_path):
    (tmp_path / "secret_key").write_text("\n")
    result = manage(tmp_path, "check", check=False)
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr and "prepare_data_dir" in result.stderr


def test_the_database_is_sqlite_in_the_data_directory_or_the_database_url(tmp_path):
    code = (
        "import json; from django.conf import settings; "
        "d = settings.DATABASES['default']; print(json.dumps([d['ENGINE'], d['NAME']]))"
    )
    assert json.loads(shell(tmp_path, code)) == [
        "django.db.backends.sqlite3",
        str(tmp_path.resolve() / "db.sqlite3"),
    ]
    url = "postgresql://bench@127.0.0.1:5432/mirrorbench"
    assert json.loads(shell(tmp_path, code, DATABASE_URL=url)) == [
        "django.db.backends.postgresql",
        "mirrorbench",
    ]


def test_a_bad_database_url_stops_the_settings_naming_the_variable(tmp_path):
    result = manage(tmp_path, "check", check=False, DATABASE_URL="mysql://bench@db/mirrorbench")
    assert result.returncode != 0
    assert "DATABASE_URL: expected postgres://user:password@host:port/name" in result.stderr


@pytest.mark.parametrize(
    ("task", "limit"),
    [
        ("leaderboard.tasks.run_start", "MIRRORBENCH_EPISODE_TIME_LIMIT_S"),
        ("leaderboard.tasks.episode_evaluate", "MIRRORBENCH_EPISODE_TIME_LIMIT_S"),
        ("leaderboard.tasks.episodes_requeue_stale", "MIRRORBENCH_EPISODE_TIME_LIMIT_S"),
        ("leaderboard.tasks.run_render_frames", "MIRRORBENCH_RENDER_TIME_LIMIT_S"),
        ("leaderboard.tasks.episode_render_frames", "MIRRORBENCH_RENDER_TIME_LIMIT_S"),
        ("leaderboard.tasks.frames_render_keys", "MIRRORBENCH_RENDER_TIME_LIMIT_S"),
    ],
)
def test_every_task_has_its_queues_time_limits(task, limit):
    import leaderboard.tasks  # noqa: F401  (registers the tasks)
    from mirrorbench_site.celery import app

    soft = getattr(settings, limit)
    assert soft > 0
    assert (app.tasks[task].soft_time_limit, app.tasks[task].time_limit) == (soft, soft + 60)


def test_time_limits_default_to_an_hour_for_episodes_and_half_an_hour_for_frames(tmp_path):
    code = (
        "import json; from django.conf import settings; "
        "a = settings.CELERY_TASK_ANNOTATIONS; print(json.dumps(["
        "a['leaderboard.tasks.episode_evaluate'], a['leaderboard.tasks.frames_render_keys']]))"
    )
    defaults = {"MIRRORBENCH_EPISODE_TIME_LIMIT_S": "", "MIRRORBENCH_RENDER_TIME_LIMIT_S": ""}
    assert json.loads(shell(tmp_path, code, **defaults)) == [
        {"soft_time_limit": 3600, "time_limit": 3660},
        {"soft_time_limit": 1800, "time_limit": 1860},
    ]
    code = "from django.conf import settings; print(sorted(settings.CELERY_TASK_ANNOTATIONS))"
    render_only = shell(tmp_path, code, MIRRORBENCH_EPISODE_TIME_LIMIT_S="0")
    assert render_only == str(
        [
            "leaderboard.tasks.episode_render_frames",
            "leaderboard.tasks.frames_render_keys",
            "leaderboard.tasks.frames_sweep",
            "leaderboard.tasks.run_render_frames",
        ]
    )
