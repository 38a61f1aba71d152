"""The squashed migration (leaderboard/migrations/0001_squashed_0027_step_episode_ids.py) gives a
new database the schema and the rows that the 26 migrations it replaces give it, and a database
part-way along the chain goes on with the chain and ends with the squash recorded.

Each way runs in a process of its own, on a database of its own, which first gets the auth tables
and three accounts (0016 gives accounts stored before the app's tables their names' keys).
``squash`` then migrates: Django takes the squash, none of the replaced migrations being
applied. ``chain`` first migrates to 0026 with the replacements turned off, as a deployment did
before the squash existed, then runs ``migrate`` with the squash in place: Django goes on with
0027, the only one missing. Both report their schema from the database's own catalogue, their
rows, what ``showmigrations`` says and what a further ``migrate`` would do.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.leaderboard.postgres import postgres_or_missing

ROOT = Path(__file__).resolve().parents[2]
SQUASH = "0001_squashed_0027_step_episode_ids"
REPLACED_BEFORE_LAST = "0026_animation"
LAST = "0027_step_episode_ids"
WAYS = ("chain", "squash")
ACCOUNTS = ("alice", "ALICE", "bob")
"""Stored before the app's tables: the second has the first's key, and keeps none."""


def _sqlite_schema(cursor: Any) -> list[list[str | None]]:
    """Every table, index and trigger of the app (the search index's FTS5 table and its shadow
    tables and triggers included): type, name, table and its SQL, spaces collapsed."""
    cursor.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master "
        "WHERE name LIKE 'leaderboard%' OR tbl_name LIKE 'leaderboard%' ORDER BY type, name"
    )
    return [
        [kind, name, table, None if sql is None else " ".join(sql.split())]
        for kind, name, table, sql in cursor.fetchall()
    ]


_POSTGRESQL_QUERIES = {
    "columns": """
        SELECT table_name, column_name, ordinal_position, data_type, character_maximum_length,
               numeric_precision, is_nullable, column_default, is_identity, identity_generation,
               is_generated, generation_expression, attstattarget
        FROM information_schema.columns
        JOIN pg_attribute ON attrelid = table_name::text::regclass AND attname = column_name
        WHERE table_schema = 'public' AND table_name LIKE 'leaderboard%'
        ORDER BY table_name, ordinal_position""",
    "constraints": """
        SELECT conrelid::regclass::text, conname, contype, pg_get_constraintdef(oid),
               condeferrable, condeferred
        FROM pg_constraint WHERE conrelid::regclass::text LIKE 'leaderboard%'
        ORDER BY 1, 2""",
    "indexes": """
        SELECT tablename, indexname, indexdef FROM pg_indexes
        WHERE schemaname = 'public' AND tablename LIKE 'leaderboard%' ORDER BY 1, 2""",
    "triggers": """
        SELECT tgrelid::regclass::text, tgname FROM pg_trigger
        WHERE NOT tgisinternal AND tgrelid::regclass::text LIKE 'leaderboard%' ORDER BY 1, 2""",
    "tables": """
        SELECT table_name, table_type FROM information_schema.tables
        WHERE table_schema = 'public' AND table_name LIKE 'leaderboard%' ORDER BY 1""",
}


def _child(way: str) -> None:
    """Migrate this process's database ``way``; print what it then holds, as JSON."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor
    from django.db.migrations.loader import MigrationLoader
    from django.db.migrations.recorder import MigrationRecorder

    def recorded() -> list[str]:
        names = MigrationRecorder(connection).applied_migrations()
        return sorted(name for app, name in names if app == "leaderboard")

    report: dict[str, Any] = {}
    # bulk_create: no post_save, whose receiver writes to the app's table, not there yet.
    call_command("migrate", "auth", interactive=False, verbosity=0)
    User = get_user_model()
    User.objects.bulk_create(User(username=name) for name in ACCOUNTS)
    if way == "chain":
        executor = MigrationExecutor(connection)
        executor.loader = MigrationLoader(connection, replace_migrations=False)
        executor.migrate([("leaderboard", REPLACED_BEFORE_LAST)])
        report["recorded_before"] = recorded()
    out = io.StringIO()
    call_command("migrate", interactive=False, verbosity=1, stdout=out)
    report["applied"] = re.findall(r"Applying (leaderboard\.\w+)", out.getvalue())
    report["recorded"] = recorded()
    shown = io.StringIO()
    call_command("showmigrations", "leaderboard", stdout=shown)
    report["shown"] = shown.getvalue().split()
    executor = MigrationExecutor(connection)
    report["plan_after"] = [
        str(migration)
        for migration, _ in executor.migration_plan(executor.loader.graph.leaf_nodes())
    ]
    out = io.StringIO()
    call_command("migrate", interactive=False, verbosity=1, stdout=out)
    report["migrate_again"] = re.findall(r"Applying (\w+\.\w+)", out.getvalue())
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            report["schema"] = {"sqlite_master": _sqlite_schema(cursor)}
        else:
            report["schema"] = {}
            for part, sql in _POSTGRESQL_QUERIES.items():
                cursor.execute(sql)
                report["schema"][part] = [list(row) for row in cursor.fetchall()]
        tables = connection.introspection.table_names(cursor)
        report["rows"] = {}
        for table in sorted(t for t in tables if t.startswith("leaderboard")):
            cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
            report["rows"][table] = cursor.fetchone()[0]
        cursor.execute(
            "SELECT username, key, skeleton IS NULL, skeleton_folded IS NULL "
            "FROM leaderboard_accountname JOIN auth_user ON auth_user.id = user_id ORDER BY 1"
        )
        report["account_names"] = [list(row) for row in cursor.fetchall()]
        cursor.execute("SELECT id, token FROM leaderboard_dataversion")
        report["data_version"] = [
            [pk, bool(re.fullmatch("[0-9a-f]{32}", token))] for pk, token in cursor.fetchall()
        ]
    print(json.dumps(report))


def _migrate_both(environment: Callable[[str], dict[str, str]]) -> dict[str, dict[str, Any]]:
    """Run both ways at once, each in its own process and on its own database."""
    code = "from tests.leaderboard.test_squashed_migration import _child; _child({!r})"
    processes = {
        way: subprocess.Popen(
            [sys.executable, "-c", code.format(way)],
            cwd=ROOT,
            env=environment(way),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for way in WAYS
    }
    outputs = {way: process.communicate(timeout=300) for way, process in processes.items()}
    reports = {}
    for way, (stdout, stderr) in outputs.items():
        assert processes[way].returncode == 0, f"{way}: {stderr[-3000:]}"
        reports[way] = json.loads(stdout.strip().splitlines()[-1])
    return reports


def _base_environment() -> dict[str, str]:
    drop = ("DATABASE_URL", "MIRRORBENCH_SQLITE_PATH", "DJANGO_SETTINGS_MODULE")
    environment = {k: v for k, v in os.environ.items() if k not in drop}
    return {**environment, "DJANGO_SETTINGS_MODULE": "mirrorbench_site.settings"}


def _check_the_ways(reports: dict[str, dict[str, Any]]) -> None:
    chain, squash = reports["chain"], reports["squash"]
    replaced = sorted(
        path.stem
        for path in (ROOT / "leaderboard" / "migrations").glob("0*.py")
        if path.stem != SQUASH
    )
    assert len(replaced) == 26 and replaced[-1] == LAST
    # The chain's database stood at 0026 without the squash, then took 0027 alone.
    assert chain["recorded_before"] == [name for name in replaced if name != LAST]
    assert chain["applied"] == [f"leaderboard.{LAST}"]
    # A fresh database takes the squash alone.
    assert squash["applied"] == [f"leaderboard.{SQUASH}"]
    for report in (chain, squash):
        # Django records the 26 and the squash, shows the squash applied, and has nothing left.
        assert report["recorded"] == sorted([*replaced, SQUASH])
        assert report["shown"] == ["leaderboard", "[X]", SQUASH, "(26", "squashed", "migrations)"]
        assert report["plan_after"] == [] and report["migrate_again"] == []
    assert chain["schema"] == squash["schema"]
    assert chain["rows"] == squash["rows"]
    assert chain["data_version"] == squash["data_version"] == [[1, True]]
    assert chain["account_names"] == squash["account_names"]
    assert sorted(row[:2] for row in squash["account_names"]) == [
        ["ALICE", None],
        ["alice", "alice"],
        ["bob", "bob"],
    ]


def test_the_squash_gives_sqlite_the_chains_schema(tmp_path):
    def environment(way: str) -> dict[str, str]:
        (tmp_path / way).mkdir()
        return {**_base_environment(), "MIRRORBENCH_DATA_DIR": str(tmp_path / way)}

    reports = _migrate_both(environment)
    _check_the_ways(reports)
    kinds = {(kind, name) for kind, name, _, _ in reports["squash"]["schema"]["sqlite_master"]}
    assert ("table", "leaderboard_step_fts") in kinds
    assert {
        ("trigger", f"leaderboard_step_fts_{op}") for op in ("insert", "update", "delete")
    } <= kinds
    assert ("index", "leaderboard_step_episode_ids") in kinds


@pytest.mark.slow
def test_the_squash_gives_postgresql_the_chains_schema(tmp_path):
    import psycopg

    with postgres_or_missing() as url:
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute("CREATE DATABASE chain")

        def environment(way: str) -> dict[str, str]:
            (tmp_path / way).mkdir()
            database = url if way == "squash" else url.rsplit("/", 1)[0] + "/chain"
            return {
                **_base_environment(),
                "MIRRORBENCH_DATA_DIR": str(tmp_path / way),
                "DATABASE_URL": database,
            }

        reports = _migrate_both(environment)
    _check_the_ways(reports)
    columns = reports["squash"]["schema"]["columns"]
    assert ["leaderboard_step", "search_document"] in [row[:2] for row in columns]


def test_the_squash_states_what_the_chain_and_the_models_state():
    """What ``makemigrations --check`` compares (``make migrations-check`` runs it in CI): the
    squash's state against the models' and against the chain's, here without a database; and
    the fields in the chain's order, which is the tables' column order."""
    from django.apps import apps
    from django.db.migrations.autodetector import MigrationAutodetector
    from django.db.migrations.loader import MigrationLoader
    from django.db.migrations.state import ProjectState

    squashed = MigrationLoader(None, ignore_no_migrations=True)
    assert ("leaderboard", SQUASH) in squashed.graph.nodes
    assert ("leaderboard", LAST) not in squashed.graph.nodes
    chained = MigrationLoader(None, ignore_no_migrations=True, replace_migrations=False)
    squash_state, chain_state = squashed.project_state(), chained.project_state()
    for other in (chain_state, ProjectState.from_apps(apps)):
        assert MigrationAutodetector(squash_state, other).changes(graph=squashed.graph) == {}
    for key, model in chain_state.models.items():
        if key[0] == "leaderboard":
            assert list(squash_state.models[key].fields) == list(model.fields), key
    assert squashed.graph.nodes[("leaderboard", SQUASH)].dependencies == [
        ("auth", "__first__"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]
