"""Settings from environment variables: typed, and loud on bad values."""

import pytest

from mirrorbench_site.env import (
    ImproperlyConfiguredEnv,
    envbool,
    envdatabase,
    envint,
    envjson,
)

SQLITE = {"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}


def test_booleans_accept_the_usual_spellings_and_refuse_others(monkeypatch):
    for raw, value in (("1", True), ("yes", True), ("off", False), ("", False)):
        monkeypatch.setenv("X_FLAG", raw)
        assert envbool("X_FLAG", not value) is value
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfiguredEnv, match="X_FLAG='maybe'"):
        envbool("X_FLAG", False)


def test_integers_and_json_name_the_variable_when_bad(monkeypatch):
    monkeypatch.setenv("X_INT", "ten")
    with pytest.raises(ImproperlyConfiguredEnv, match="X_INT"):
        envint("X_INT", 1)
    monkeypatch.setenv("X_JSON", "[1, 2]")
    with pytest.raises(ImproperlyConfiguredEnv, match="X_JSON: expected a JSON object"):
        envjson("X_JSON", {})


def test_integers_below_the_minimum_are_refused(monkeypatch):
    monkeypatch.setenv("X_INT", "-1")
    with pytest.raises(ImproperlyConfiguredEnv, match="X_INT='-1': expected an integer >= 0"):
        envint("X_INT", 1, minimum=0)
    monkeypatch.setenv("X_INT", "0")
    assert envint("X_INT", 1, minimum=0) == 0


def test_a_database_url_becomes_a_postgresql_entry(monkeypatch):
    monkeypatch.setenv(
        "DATABASE_URL", "postgres://bench:p%40ss@db.internal:5433/mirrorbench?sslmode=require"
    )
    entry = envdatabase("DATABASE_URL", SQLITE)
    assert entry["ENGINE"] == "django.db.backends.postgresql"  # psycopg
    assert (entry["NAME"], entry["USER"], entry["PASSWORD"]) == ("mirrorbench", "bench", "p@ss")
    assert (entry["HOST"], entry["PORT"]) == ("db.internal", 5433)
    assert entry["OPTIONS"] == {"sslmode": "require"}
    assert entry["CONN_MAX_AGE"] == 60
    assert entry["CONN_HEALTH_CHECKS"] is True  # a connection dropped by a restart is replaced


def test_the_postgresql_spelling_is_accepted_too(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://bench@127.0.0.1/mirrorbench")
    entry = envdatabase("DATABASE_URL", SQLITE)
    assert (entry["ENGINE"], entry["NAME"]) == ("django.db.backends.postgresql", "mirrorbench")


@pytest.mark.parametrize("raw", [None, "", "  "])
def test_without_a_database_url_the_default_stays(monkeypatch, raw):
    if raw is None:
        monkeypatch.delenv("DATABASE_URL", raising=False)
    else:
        monkeypatch.setenv("DATABASE_URL", raw)
    assert envdatabase("DATABASE_URL", SQLITE) is SQLITE


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("mysql://x@y/z", "got scheme 'mysql'"),
        ("bench:s3cret@db.internal/mirrorbench", "got no scheme"),
        ("postgres://user@host/", "the database name is missing"),
        ("postgres://user:s3cret@host:port/name", "not a valid url"),
    ],
)
def test_other_database_urls_are_refused_without_echoing_them(monkeypatch, url, reason):
    monkeypatch.setenv("DATABASE_URL", url)
    with pytest.raises(ImproperlyConfiguredEnv) as refused:
        envdatabase("DATABASE_URL", SQLITE)
    message = str(refused.value)
    assert message.startswith("DATABASE_URL: expected postgres://user:password@host:port/name")
    assert reason in message
    assert "s3cret" not in message
