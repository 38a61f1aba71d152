"""The full-text index of step responses (``leaderboard.search.index``), filled from the steps
already stored: FTS5 with triggers on SQLite, a GIN index on PostgreSQL."""

from typing import Any

from django.db import migrations

from leaderboard.search.index import step_search_index_drop, step_search_index_ensure


def index_create(apps: Any, schema_editor: Any) -> None:
    step_search_index_ensure(connection=schema_editor.connection)


def index_drop(apps: Any, schema_editor: Any) -> None:
    step_search_index_drop(connection=schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0021_run_cost_model_price")]

    operations = [migrations.RunPython(index_create, index_drop, elidable=False)]
