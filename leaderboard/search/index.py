"""The full-text index of step responses, in the database's own engine.

SQLite (the embedded default): an FTS5 table over ``leaderboard_step.response`` (external
content, so the text is stored once) that triggers keep in step with every insert, update and
delete of a step, whatever stores it. PostgreSQL: a GIN index on a generated column, the
response's ``tsvector`` (the ``simple`` configuration: no stemming, no stop words, over the
response's letters and digits alone, so it holds the same words FTS5's ``unicode61`` tokenizer
keeps), which PostgreSQL maintains itself.

``step_search_index_ensure`` creates what is missing and fills the FTS5 table from the steps
already stored; the migration calls it, and so does every ``migrate`` afterwards: SQLite's
schema editor rebuilds a table to alter it, which drops its triggers.
"""

from __future__ import annotations

from typing import Any

from django.db import connections

FTS_TABLE = "leaderboard_step_fts"
STEP_TABLE = "leaderboard_step"
PG_INDEX = "leaderboard_step_response_fts"
PG_COLUMN = "search_document"
"""PostgreSQL: a generated column holding each response's ``tsvector``, computed once as the
step is stored (so neither the index's build nor a query's recheck recomputes it); the Django
model does not list it, and no insert names it."""
PG_STATISTICS = 10000
"""The column's statistics target: ANALYZE keeps the most common words of a large sample."""
PG_DOCUMENT = (
    "to_tsvector('simple'::regconfig, regexp_replace(response, '[^[:alnum:]]+', ' ', 'g'))"
)
"""What the column holds. Everything but letters and digits becomes a space first, as FTS5's
tokenizer treats it: PostgreSQL's parser would otherwise drop ``<b>`` as an XML tag and keep
``1.5`` or ``www.example.org`` as one word."""

_SQLITE_TRIGGERS = {
    f"{FTS_TABLE}_insert": f"""
        CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_insert AFTER INSERT ON {STEP_TABLE} BEGIN
            INSERT INTO {FTS_TABLE}(rowid, response) VALUES (new.id, new.response);
        END""",
    f"{FTS_TABLE}_delete": f"""
        CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_delete AFTER DELETE ON {STEP_TABLE} BEGIN
            INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, response)
            VALUES ('delete', old.id, old.response);
        END""",
    f"{FTS_TABLE}_update": f"""
        CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_update AFTER UPDATE OF response ON {STEP_TABLE}
        BEGIN
            INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, response)
            VALUES ('delete', old.id, old.response);
            INSERT INTO {FTS_TABLE}(rowid, response) VALUES (new.id, new.response);
        END""",
}


def step_search_index_ensure(*, connection: Any) -> bool:
    """Create the response index on ``connection`` where it is missing (and, on SQLite, fill it
    from the stored steps); return True if anything was created."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT name FROM sqlite_master "
                "WHERE type IN ('table', 'trigger') AND name LIKE %s",
                [f"{FTS_TABLE}%"],
            )
            present = {row[0] for row in cursor.fetchall()}
            if FTS_TABLE in present and present >= set(_SQLITE_TRIGGERS):
                return False
            cursor.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(response, "
                f"content='{STEP_TABLE}', content_rowid='id', "
                "tokenize='unicode61 remove_diacritics 0')"
            )
            for sql in _SQLITE_TRIGGERS.values():
                cursor.execute(sql)
            # Steps stored while a trigger was missing are in the table, not yet in the index.
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")
            return True
        if connection.vendor == "postgresql":
            cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [PG_INDEX])
            indexed = cursor.fetchone() is not None
            cursor.execute(
                "SELECT 1 FROM information_schema.columns WHERE table_name = %s "
                "AND column_name = %s",
                [STEP_TABLE, PG_COLUMN],
            )
            if indexed and cursor.fetchone() is not None:
                return False
            # An index without its column is an earlier expression index: build both afresh.
            cursor.execute(f"DROP INDEX IF EXISTS {PG_INDEX}")
            cursor.execute(
                f"ALTER TABLE {STEP_TABLE} ADD COLUMN IF NOT EXISTS {PG_COLUMN} tsvector "
                f"GENERATED ALWAYS AS ({PG_DOCUMENT}) STORED"
            )
            # A larger sample of words: with the default, a word outside the most common 1,000
            # is taken to match 0.5% of the steps, and a rare word's newest-first query walks
            # the whole table instead of asking the index.
            cursor.execute(
                f"ALTER TABLE {STEP_TABLE} ALTER COLUMN {PG_COLUMN} SET STATISTICS {PG_STATISTICS}"
            )
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS {PG_INDEX} ON {STEP_TABLE} USING GIN ({PG_COLUMN})"
            )
            return True
    return False


def step_search_index_drop(*, connection: Any) -> None:
    """Remove the response index (the migration's reverse)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            for name in _SQLITE_TRIGGERS:
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
            cursor.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}")
        elif connection.vendor == "postgresql":
            cursor.execute(f"DROP INDEX IF EXISTS {PG_INDEX}")
            cursor.execute(f"ALTER TABLE {STEP_TABLE} DROP COLUMN IF EXISTS {PG_COLUMN}")


def search_index_after_migrate(*, using: str = "default", plan: Any = None, **_: Any) -> None:
    """post_migrate receiver: make sure the index is whole once the step table exists."""
    connection = connections[using]
    if STEP_TABLE in connection.introspection.table_names():
        step_search_index_ensure(connection=connection)
