"""Settings from environment variables: typed, and loud on bad values."""

import pytest

from mirrorbench_site.env import (
    ImproperlyConfiguredEnv,
    database_from_url,
    envbool,
    envint,
    envjson,
)


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


def test_a_database_url_becomes_a_postgresql_entry():
    entry = database_from_url(
        "postgres://bench:p%40ss@db.internal:5433/mirrorbench?sslmode=require"
    )
    assert entry["ENGINE"] == "django.db.backends.postgresql"
    assert (entry["NAME"], entry["USER"], entry["PASSWORD"]) == ("mirrorbench", "bench", "p@ss")
    assert (entry["HOST"], entry["PORT"]) == ("db.internal", "5433")
    assert entry["OPTIONS"] == {"sslmode": "require"}


@pytest.mark.parametrize("url", ["mysql://x@y/z", "postgres://user@host/"])
def test_other_database_urls_are_refused(url):
    with pytest.raises(ImproperlyConfiguredEnv, match="DATABASE_URL"):
        database_from_url(url)
