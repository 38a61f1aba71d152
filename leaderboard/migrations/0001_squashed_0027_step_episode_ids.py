"""The 26 migrations 0001_initial to 0027_step_episode_ids in one (Django's squashed migration).

A database with none of them applied (every new one: a fresh data directory, each test
database) applies this one instead, and Django records all 26 as applied; a database with
some of them applied goes on with the old files (they stay until every deployment has
migrated past 0027, then ``replaces`` and the old files go; docs/architecture.md). The
operations are the old chain's final state written out model by model, with each table's
columns in the order the chain gave them, and tests/leaderboard/test_squashed_migration.py
checks that both ways give the same schema.

The chain's data migrations, and what became of each on a database that has no leaderboard
table yet:

- 0005 ``name_existing_versions`` (names the benchmark versions stored): left out, there are none.
- 0007 ``summarise_errors`` (the errored episodes' public summary): left out, no episodes.
- 0008 ``backfill_behaviour`` (episodes' behaviour counts): left out, no episodes.
- 0009 ``fill_cognitive_stability`` (runs' stability and its interval): left out, no runs.
- 0011 ``first_token`` (inserts the data version's row): kept, ``data_version_first_token``.
- 0016 ``fill_names``: its model entries' half is left out (none); its accounts' half is kept
  (``account_names_fill``): users are another app's rows and may exist before this app's
  tables do (``migrate auth``, then ``createsuperuser``, then ``migrate``).
- 0021 ``totals_fill`` (completed runs' token totals): left out, no runs.
- 0023 ``index_create`` (the full-text index of step responses, FTS5 and triggers on SQLite, a
  generated column and a GIN index on PostgreSQL): kept, ``step_search_create``, with its SQL
  written out here as it stood at 0023 (leaderboard.search.index may change; this may not).

One name differs by the way a constraint was made, on PostgreSQL only: ``postgresql_names``
gives it the chain's.
"""

import uuid

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

FTS_TABLE = "leaderboard_step_fts"
STEP_TABLE = "leaderboard_step"

SQLITE_CREATE = [
    f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(response, "
    f"content='{STEP_TABLE}', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 0')",
    f"""
        CREATE TRIGGER {FTS_TABLE}_insert AFTER INSERT ON {STEP_TABLE} BEGIN
            INSERT INTO {FTS_TABLE}(rowid, response) VALUES (new.id, new.response);
        END""",
    f"""
        CREATE TRIGGER {FTS_TABLE}_delete AFTER DELETE ON {STEP_TABLE} BEGIN
            INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, response)
            VALUES ('delete', old.id, old.response);
        END""",
    f"""
        CREATE TRIGGER {FTS_TABLE}_update AFTER UPDATE OF response ON {STEP_TABLE}
        BEGIN
            INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, response)
            VALUES ('delete', old.id, old.response);
            INSERT INTO {FTS_TABLE}(rowid, response) VALUES (new.id, new.response);
        END""",
]
SQLITE_DROP = [
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_insert",
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_delete",
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_update",
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
]
POSTGRESQL_CREATE = [
    # Everything but letters and digits becomes a space, as FTS5's tokenizer treats it.
    f"ALTER TABLE {STEP_TABLE} ADD COLUMN search_document tsvector GENERATED ALWAYS AS "
    "(to_tsvector('simple'::regconfig, regexp_replace(response, '[^[:alnum:]]+', ' ', 'g'))) "
    "STORED",
    f"ALTER TABLE {STEP_TABLE} ALTER COLUMN search_document SET STATISTICS 10000",
    f"CREATE INDEX leaderboard_step_response_fts ON {STEP_TABLE} USING GIN (search_document)",
]
POSTGRESQL_DROP = [
    "DROP INDEX IF EXISTS leaderboard_step_response_fts",
    f"ALTER TABLE {STEP_TABLE} DROP COLUMN IF EXISTS search_document",
]


def step_search_create(apps, schema_editor):
    """0023: the response index, on a step table that holds no step yet."""
    vendor = schema_editor.connection.vendor
    for sql in {"sqlite": SQLITE_CREATE, "postgresql": POSTGRESQL_CREATE}.get(vendor, []):
        schema_editor.execute(sql, params=None)


def step_search_drop(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for sql in {"sqlite": SQLITE_DROP, "postgresql": POSTGRESQL_DROP}.get(vendor, []):
        schema_editor.execute(sql, params=None)


def data_version_first_token(apps, schema_editor):
    """0011: the row exists from the start: cached copies are keyed on its token."""
    DataVersion = apps.get_model("leaderboard", "DataVersion")
    DataVersion.objects.using(schema_editor.connection.alias).get_or_create(
        pk=1, defaults={"token": uuid.uuid4().hex}
    )


def account_names_fill(apps, schema_editor):
    """0016, for the accounts stored before this app's tables: their names' key and skeletons,
    the oldest account first; a later look-alike gets None where an older one has the value."""
    alias = schema_editor.connection.alias
    User = apps.get_model(settings.AUTH_USER_MODEL)
    users = User.objects.using(alias).order_by("pk").only("pk", "username")
    if not users.exists():
        return
    from leaderboard.accounts.names import name_key, name_skeletons

    AccountName = apps.get_model("leaderboard", "AccountName")
    taken: tuple[set[str], set[str], set[str]] = (set(), set(), set())
    rows = []
    for user in users:
        key: str | None = name_key(user.username)
        if key is not None and len(key) > 800:  # the column's length (NFKC can grow a name)
            key = None
        values = [
            None if value is None or value in seen else value
            for value, seen in zip((key, *name_skeletons(user.username)), taken, strict=True)
        ]
        for value, seen in zip(values, taken, strict=True):
            if value is not None:
                seen.add(value)
        rows.append(
            AccountName(
                user_id=user.pk, key=values[0], skeleton=values[1], skeleton_folded=values[2]
            )
        )
    AccountName.objects.using(alias).bulk_create(rows)


def postgresql_names(apps, schema_editor):
    """0005_benchmark_version_name made the name unique with AlterField, which names the
    constraint (and its index) as Django names an added one; CreateModel leaves the naming to
    PostgreSQL (``..._key``). The chain's name, so that every database has the same schema."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "ALTER TABLE leaderboard_benchmarkversion RENAME CONSTRAINT "
            "leaderboard_benchmarkversion_name_key "
            "TO leaderboard_benchmarkversion_name_ca54e264_uniq",
            params=None,
        )


def fresh_database_fill(apps, schema_editor):
    postgresql_names(apps, schema_editor)
    step_search_create(apps, schema_editor)  # 0023_step_search
    data_version_first_token(apps, schema_editor)  # 0011_data_version
    account_names_fill(apps, schema_editor)  # 0016_look_alike_names, the accounts' half


def fresh_database_empty(apps, schema_editor):
    """The reverse: the search index goes; the rows go with their tables."""
    step_search_drop(apps, schema_editor)


class Migration(migrations.Migration):
    replaces = [
        ("leaderboard", "0001_initial"),
        ("leaderboard", "0002_server_runs"),
        ("leaderboard", "0003_run_secrets"),
        ("leaderboard", "0004_provider_windows"),
        ("leaderboard", "0005_benchmark_version_name"),
        ("leaderboard", "0006_model_entry_owner"),
        ("leaderboard", "0007_episode_error_summary"),
        ("leaderboard", "0008_frames_and_behaviour"),
        ("leaderboard", "0009_cognitive_stability"),
        ("leaderboard", "0010_submissions_and_api_tokens"),
        ("leaderboard", "0011_data_version"),
        ("leaderboard", "0012_play"),
        ("leaderboard", "0013_submission_reproduction"),
        ("leaderboard", "0014_step_cached"),
        ("leaderboard", "0015_step_request"),
        ("leaderboard", "0016_look_alike_names"),
        ("leaderboard", "0017_frame_used"),
        ("leaderboard", "0018_email_confirmation"),
        ("leaderboard", "0019_frame_renderer_help"),
        ("leaderboard", "0020_run_and_frame_condition"),
        ("leaderboard", "0021_run_cost_model_price"),
        ("leaderboard", "0023_step_search"),
        ("leaderboard", "0024_model_entry_metadata"),
        ("leaderboard", "0025_episode_repeat_score_spread"),
        ("leaderboard", "0026_animation"),
        ("leaderboard", "0027_step_episode_ids"),
    ]

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        # 0018_email_confirmation's.
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.CreateModel(
            name="ModelEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=200, unique=True)),
                ("slug", models.SlugField(max_length=200, unique=True)),
                ("organisation", models.CharField(blank=True, max_length=200)),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("proprietary", "Proprietary"),
                            ("open-weights", "Open weights"),
                            ("baseline", "Baseline"),
                            ("human", "Human"),
                        ],
                        max_length=20,
                    ),
                ),
                (
                    "params_b",
                    models.FloatField(
                        blank=True, help_text="Parameter count in billions, where known.", null=True
                    ),
                ),
                (
                    "links",
                    models.JSONField(
                        blank=True, default=list, help_text='[{"label": ..., "url": ...}]'
                    ),
                ),
                ("description", models.TextField(blank=True)),
                ("created", models.DateTimeField(auto_now_add=True)),
                (
                    "owner",
                    models.ForeignKey(
                        blank=True,
                        help_text="The user who created it for their runs; empty for entries the site manages (the paper's rows, baselines, the human reference).",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="model_entries",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "name_key",
                    models.CharField(
                        editable=False,
                        help_text="The name case-folded (leaderboard.accounts.names.name_key): equal keys are one name. Empty on an entry stored before the check whose name an older entry already had.",
                        max_length=800,
                        null=True,
                        unique=True,
                    ),
                ),
                (
                    "name_skeleton",
                    models.CharField(
                        editable=False,
                        help_text="What the name looks like (leaderboard.accounts.names.name_skeleton): no two entries share one. Empty as name_key is.",
                        max_length=2000,
                        null=True,
                        unique=True,
                    ),
                ),
                (
                    "name_skeleton_folded",
                    models.CharField(
                        editable=False,
                        help_text="What the name case-folded looks like (name_skeleton(folded=True)): no two entries share one. Empty as name_key is.",
                        max_length=2000,
                        null=True,
                        unique=True,
                    ),
                ),
                (
                    "release_date",
                    models.DateField(
                        blank=True,
                        help_text="When the model (or this version of it) was released.",
                        null=True,
                    ),
                ),
                (
                    "reasoning",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("off", "No reasoning"),
                            ("on", "Reasoning on"),
                            ("minimal", "Minimal effort"),
                            ("low", "Low effort"),
                            ("medium", "Medium effort"),
                            ("high", "High effort"),
                        ],
                        help_text="Reasoning mode or effort the results were measured with: off, on (a thinking mode without levels), minimal, low, medium, high; empty where not known.",
                        max_length=10,
                    ),
                ),
                (
                    "licence",
                    models.CharField(
                        blank=True,
                        help_text="The weights' licence (an SPDX id such as Apache-2.0, or a name such as 'Llama 3 Community'); 'proprietary' for a closed model; empty where not known.",
                        max_length=100,
                    ),
                ),
                (
                    "scaffold",
                    models.CharField(
                        blank=True,
                        choices=[("model", "Plain model"), ("agent", "Agent scaffold")],
                        help_text="model: the model answered the benchmark's prompts itself; agent: an agent scaffold (tools, memory, planning) around a model answered; empty where not known.",
                        max_length=10,
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "model entries",
                "ordering": ["name"],
            },
        ),
        migrations.CreateModel(
            name="BenchmarkVersion",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("scene_set", models.CharField(max_length=20)),
                ("prompt_version", models.CharField(max_length=20)),
                ("dynamics_version", models.CharField(max_length=20)),
                ("created", models.DateTimeField(auto_now_add=True)),
                ("name", models.CharField(max_length=20, unique=True)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("scene_set", "prompt_version", "dynamics_version"),
                        name="unique_benchmark_version",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Run",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "source",
                    models.CharField(
                        choices=[
                            ("reported", "Reported in the paper"),
                            ("evaluated", "Evaluated here"),
                            ("verified", "Uploaded and verified"),
                        ],
                        max_length=20,
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "Pending"),
                            ("running", "Running"),
                            ("completed", "Completed"),
                            ("failed", "Failed"),
                            ("cancelled", "Cancelled"),
                        ],
                        default="pending",
                        max_length=20,
                    ),
                ),
                (
                    "visibility",
                    models.CharField(
                        choices=[("public", "Public"), ("private", "Private")],
                        default="public",
                        max_length=20,
                    ),
                ),
                (
                    "listed",
                    models.BooleanField(
                        default=False,
                        help_text="Shown on the leaderboard: the newest complete public run of its model and source.",
                    ),
                ),
                ("agent", models.CharField(blank=True, max_length=300)),
                (
                    "citation",
                    models.TextField(blank=True, help_text="Where reported results come from."),
                ),
                (
                    "metadata",
                    models.JSONField(
                        blank=True, default=dict, help_text="The results bundle's header."
                    ),
                ),
                ("episodes_expected", models.PositiveIntegerField(default=0)),
                ("created", models.DateTimeField(auto_now_add=True)),
                ("finished", models.DateTimeField(blank=True, null=True)),
                (
                    "benchmark",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="runs",
                        to="leaderboard.benchmarkversion",
                    ),
                ),
                (
                    "model_entry",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="runs",
                        to="leaderboard.modelentry",
                    ),
                ),
                (
                    "owner",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                ("error", models.TextField(blank=True, help_text="Why a run failed.")),
                (
                    "spec",
                    models.JSONField(
                        blank=True,
                        default=dict,
                        help_text="For runs evaluated here: agent, base URL, levels, scenes, seed, image size.",
                    ),
                ),
                ("started", models.DateTimeField(blank=True, null=True)),
                (
                    "behaviour",
                    models.JSONField(
                        blank=True,
                        help_text="Mirror-self confusion, bad-response and collision rates per level and track (evaluation.confusion.behaviour_json), computed with the scores.",
                        null=True,
                    ),
                ),
                (
                    "cognitive_stability",
                    models.FloatField(
                        blank=True,
                        help_text="Cognitive stability (the paper's appendix A-A) over the run's scenes, computed with the scores; empty for reported runs, which have no per-scene results.",
                        null=True,
                    ),
                ),
                (
                    "cognitive_stability_ci",
                    models.JSONField(
                        blank=True,
                        help_text="Its 95% bootstrap interval over scenes: [low, high].",
                        null=True,
                    ),
                ),
                (
                    "condition",
                    models.CharField(
                        choices=[
                            ("main", "Main"),
                            ("no-mirror", "No mirror"),
                            ("mark-unseen", "Mark unseen"),
                            ("moved-mark", "Moved mark"),
                        ],
                        default="main",
                        help_text="The condition its episodes were played under: main (the paper's protocol, the only one the main tables rank) or a control (evaluation.vocabulary.CONDITIONS).",
                        max_length=40,
                    ),
                ),
                (
                    "cached_input_tokens",
                    models.BigIntegerField(
                        blank=True,
                        help_text="Of the input tokens, those the provider reports served from its prompt cache; empty where it reports none.",
                        null=True,
                    ),
                ),
                (
                    "input_tokens",
                    models.BigIntegerField(
                        blank=True,
                        help_text="Input tokens its steps spent, as the provider measured them (answers served from the response cache left out); empty before the run ends or without a report.",
                        null=True,
                    ),
                ),
                (
                    "output_tokens",
                    models.BigIntegerField(
                        blank=True, help_text="Output tokens, alike.", null=True
                    ),
                ),
                (
                    "price",
                    models.JSONField(
                        blank=True,
                        help_text='Prices given for this run at evaluation, US dollars per million tokens: {"input_per_mtok": 2.5, "output_per_mtok": 10, "cached_input_per_mtok": 1.25}; they come before the price table\'s.',
                        null=True,
                    ),
                ),
            ],
            options={
                "ordering": ["-created"],
                "indexes": [
                    models.Index(fields=["listed", "source"], name="leaderboard_listed_cae29b_idx")
                ],
            },
        ),
        migrations.CreateModel(
            name="RunScore",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("table", models.CharField(max_length=10)),
                ("track", models.CharField(max_length=10)),
                ("tsr", models.FloatField()),
                ("sir", models.FloatField()),
                ("fcr", models.FloatField()),
                ("pcr", models.FloatField()),
                ("avg", models.FloatField()),
                (
                    "ci",
                    models.JSONField(
                        blank=True,
                        help_text='95% bootstrap intervals: {"tsr": [lo, hi], ...}',
                        null=True,
                    ),
                ),
                ("episodes", models.PositiveIntegerField(blank=True, null=True)),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="scores",
                        to="leaderboard.run",
                    ),
                ),
                (
                    "spread",
                    models.JSONField(
                        blank=True,
                        help_text='A run of several repeats, its Overall column only: how its repeats differ (evaluation.metrics.RepeatSpread.as_dict: {"repeats": K, "low": {...}, "high": {...}, "sd": {...}, "paired": n, "flipped": n, "flip_rate": x}); null with one repeat.',
                        null=True,
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["table"], name="leaderboard_table_f04524_idx")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("run", "table", "track"), name="unique_run_score"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Scene",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("scene_id", models.CharField(max_length=100)),
                ("track", models.CharField(max_length=10)),
                ("body", models.CharField(max_length=40)),
                ("hand", models.CharField(max_length=40)),
                ("mark", models.CharField(max_length=40)),
                ("d0_steps", models.PositiveSmallIntegerField()),
                ("max_steps", models.PositiveSmallIntegerField()),
                (
                    "benchmark",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="scenes",
                        to="leaderboard.benchmarkversion",
                    ),
                ),
            ],
            options={
                "ordering": ["id"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("benchmark", "scene_id"), name="unique_scene_id"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Episode",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("level", models.PositiveSmallIntegerField()),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "Pending"),
                            ("running", "Running"),
                            ("completed", "Completed"),
                            ("error", "Error (excluded)"),
                        ],
                        max_length=20,
                    ),
                ),
                (
                    "error",
                    models.TextField(
                        blank=True,
                        help_text="Why the episode ended in error, in full (the provider's own words): shown to the run's owner only.",
                    ),
                ),
                ("success", models.BooleanField(default=False)),
                ("distances", models.JSONField(default=list)),
                ("steps_taken", models.PositiveSmallIntegerField(default=0)),
                ("tsr", models.FloatField(null=True)),
                ("sir", models.FloatField(null=True)),
                ("fcr", models.FloatField(null=True)),
                ("pcr", models.FloatField(null=True)),
                ("avg", models.FloatField(null=True)),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="episodes",
                        to="leaderboard.run",
                    ),
                ),
                (
                    "scene",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="episodes",
                        to="leaderboard.scene",
                    ),
                ),
                ("attempts", models.PositiveSmallIntegerField(default=0)),
                (
                    "claim",
                    models.CharField(
                        blank=True,
                        help_text="Token of the task that holds this episode.",
                        max_length=40,
                    ),
                ),
                (
                    "heartbeat",
                    models.DateTimeField(
                        blank=True,
                        help_text="Last sign of life of the task holding the episode.",
                        null=True,
                    ),
                ),
                (
                    "error_category",
                    models.CharField(
                        blank=True,
                        help_text="What kind of failure (public): rate_limited, auth, redirect_refused, ...",
                        max_length=32,
                    ),
                ),
                (
                    "error_status",
                    models.PositiveSmallIntegerField(
                        blank=True,
                        help_text="The HTTP status of the failed request (public).",
                        null=True,
                    ),
                ),
                ("bad_responses", models.PositiveSmallIntegerField(default=0)),
                ("collisions", models.PositiveSmallIntegerField(default=0)),
                (
                    "confusion_rate",
                    models.FloatField(
                        blank=True,
                        help_text="Share of executed moves towards the mark's mirror image and away from the mark.",
                        null=True,
                    ),
                ),
                (
                    "mirror_confused",
                    models.BooleanField(
                        default=False,
                        help_text="The episode is dominated by mirror-self confusion.",
                    ),
                ),
                (
                    "repeat",
                    models.PositiveSmallIntegerField(
                        default=0,
                        help_text="Which repeat of its (scene, level) episode, 0 the first.",
                    ),
                ),
            ],
            options={
                "ordering": ["level", "scene_id", "repeat"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("run", "scene", "level", "repeat"), name="unique_run_episode_repeat"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Step",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("index", models.PositiveSmallIntegerField()),
                ("response", models.TextField(blank=True)),
                ("option", models.PositiveSmallIntegerField(null=True)),
                ("parse_error", models.TextField(blank=True)),
                ("executed", models.BooleanField()),
                ("distance_steps", models.PositiveSmallIntegerField()),
                ("hand_cell", models.JSONField(default=list)),
                ("frame_key", models.CharField(blank=True, max_length=64)),
                ("input_tokens", models.PositiveIntegerField(null=True)),
                ("output_tokens", models.PositiveIntegerField(null=True)),
                ("latency_s", models.FloatField(null=True)),
                (
                    "episode",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="steps",
                        to="leaderboard.episode",
                    ),
                ),
                ("cached", models.BooleanField(default=False)),
                ("request", models.JSONField(blank=True, default=dict)),
                (
                    "cached_input_tokens",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="Of the input tokens, those the provider served from its prompt cache; empty where it reports none.",
                        null=True,
                    ),
                ),
            ],
            options={
                "ordering": ["index"],
                "indexes": [
                    models.Index(fields=["episode", "id"], name="leaderboard_step_episode_ids")
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("episode", "index"), name="unique_episode_step")
                ],
            },
        ),
        migrations.CreateModel(
            name="RunSecret",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("api_key", models.BinaryField()),
                ("created", models.DateTimeField(auto_now_add=True)),
                (
                    "run",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="secret",
                        to="leaderboard.run",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="ProviderWindow",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("provider", models.CharField(max_length=300)),
                (
                    "window",
                    models.BigIntegerField(
                        help_text="Start of the window, in windows since the epoch."
                    ),
                ),
                ("count", models.PositiveIntegerField(default=0)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("provider", "window"), name="unique_provider_window"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Frame",
            fields=[
                ("key", models.CharField(max_length=40, primary_key=True, serialize=False)),
                (
                    "cell",
                    models.JSONField(help_text="The hand's grid offset from its start: [x, y, z]."),
                ),
                ("size", models.PositiveSmallIntegerField()),
                (
                    "mirror",
                    models.BooleanField(default=True, help_text="False for the no-mirror control."),
                ),
                (
                    "renderer",
                    models.CharField(
                        help_text="simulation.backends.renderer_version()", max_length=100
                    ),
                ),
                ("png_bytes", models.PositiveIntegerField(blank=True, null=True)),
                ("webp_bytes", models.PositiveIntegerField(blank=True, null=True)),
                ("thumb_bytes", models.PositiveIntegerField(blank=True, null=True)),
                ("created", models.DateTimeField(auto_now_add=True)),
                ("stored", models.DateTimeField(blank=True, null=True)),
                (
                    "scene",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="frames",
                        to="leaderboard.scene",
                    ),
                ),
                (
                    "used",
                    models.DateTimeField(
                        blank=True,
                        help_text="When it was last stored or served (at most hourly): the eviction order.",
                        null=True,
                    ),
                ),
                (
                    "condition",
                    models.CharField(
                        default="main",
                        help_text="The condition the scene is drawn under (part of the key unless main).",
                        max_length=40,
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["stored"], name="leaderboard_stored_475bdc_idx"),
                    models.Index(fields=["used"], name="leaderboard_used_ca9c53_idx"),
                ],
            },
        ),
        migrations.CreateModel(
            name="ApiToken",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "name",
                    models.CharField(help_text="What the token is for, e.g. 'CI'.", max_length=100),
                ),
                (
                    "prefix",
                    models.CharField(
                        help_text="The key's first characters, to tell it.", max_length=12
                    ),
                ),
                ("key_hash", models.CharField(max_length=64, unique=True)),
                ("created", models.DateTimeField(auto_now_add=True)),
                ("last_used", models.DateTimeField(blank=True, null=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="api_tokens",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-created"],
            },
        ),
        migrations.CreateModel(
            name="Submission",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("sha256", models.CharField(help_text="Of the bundle's bytes.", max_length=64)),
                (
                    "bundle_path",
                    models.CharField(help_text="Where the bundle is in storage.", max_length=200),
                ),
                ("bundle_bytes", models.PositiveBigIntegerField()),
                ("model_name", models.CharField(max_length=200)),
                ("organisation", models.CharField(blank=True, max_length=200)),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("proprietary", "Proprietary"),
                            ("open-weights", "Open weights"),
                            ("baseline", "Baseline"),
                            ("human", "Human"),
                        ],
                        max_length=20,
                    ),
                ),
                ("params_b", models.FloatField(blank=True, null=True)),
                (
                    "link",
                    models.URLField(
                        blank=True, help_text="Code, model card or paper.", max_length=500
                    ),
                ),
                (
                    "review",
                    models.CharField(
                        choices=[
                            ("draft", "Private (not submitted for review)"),
                            ("pending", "Waiting for a moderator"),
                            ("approved", "Approved: on the board"),
                            ("refused", "Refused by a moderator"),
                            ("flagged", "Flagged: hidden from the board"),
                        ],
                        default="draft",
                        max_length=20,
                    ),
                ),
                (
                    "review_note",
                    models.TextField(
                        blank=True,
                        help_text="A moderator's reason, shown to the owner (and on a flagged entry).",
                    ),
                ),
                (
                    "allow_partial",
                    models.BooleanField(
                        default=False,
                        help_text="A moderator lets an incomplete bundle onto the board.",
                    ),
                ),
                ("episodes", models.PositiveIntegerField(default=0)),
                (
                    "partial",
                    models.BooleanField(default=False, help_text="Fewer than all 264 episodes."),
                ),
                (
                    "report",
                    models.JSONField(
                        blank=True,
                        default=dict,
                        help_text="Verification: what was checked, counts, seconds.",
                    ),
                ),
                ("created", models.DateTimeField(auto_now_add=True)),
                ("reviewed", models.DateTimeField(blank=True, null=True)),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="submissions",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "reviewed_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="reviewed_submissions",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "run",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="submission",
                        to="leaderboard.run",
                    ),
                ),
                (
                    "reproduce_agent",
                    models.CharField(
                        blank=True,
                        help_text="The model the submitter says produced the bundle, as an agent spec (openai:MODEL, anthropic:MODEL): the server re-runs a sample of episodes with it.",
                        max_length=300,
                    ),
                ),
                ("reproduce_base_url", models.URLField(blank=True, max_length=500)),
                (
                    "reproduction",
                    models.JSONField(
                        blank=True,
                        default=dict,
                        help_text="How the re-run agrees with the bundle: per episode and overall.",
                    ),
                ),
                (
                    "reproduction_run",
                    models.OneToOneField(
                        blank=True,
                        help_text="The server's re-run of a random sample of the submission's episodes.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="reproduces",
                        to="leaderboard.run",
                    ),
                ),
            ],
            options={
                "ordering": ["-created"],
                "indexes": [models.Index(fields=["review"], name="leaderboard_review_0a8c56_idx")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("owner", "sha256"), name="unique_submission_bundle"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="DataVersion",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("token", models.CharField(max_length=32)),
            ],
        ),
        migrations.CreateModel(
            name="Play",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                (
                    "session",
                    models.CharField(
                        blank=True,
                        help_text="SHA-256 of the anonymous visitor's session key.",
                        max_length=64,
                    ),
                ),
                ("level", models.PositiveSmallIntegerField()),
                (
                    "options",
                    models.JSONField(default=list, help_text="The options answered, in order."),
                ),
                ("steps_taken", models.PositiveSmallIntegerField(default=0)),
                ("done", models.BooleanField(default=False)),
                ("created", models.DateTimeField(auto_now_add=True)),
                ("updated", models.DateTimeField(help_text="When the current step was shown.")),
                (
                    "owner",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "scene",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="plays",
                        to="leaderboard.scene",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["updated"], name="leaderboard_updated_a86aff_idx")
                ],
            },
        ),
        migrations.CreateModel(
            name="AccountName",
            fields=[
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="account_name",
                        serialize=False,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                ("key", models.CharField(max_length=800, null=True, unique=True)),
                ("skeleton", models.CharField(max_length=2000, null=True, unique=True)),
                ("skeleton_folded", models.CharField(max_length=2000, null=True, unique=True)),
            ],
        ),
        migrations.CreateModel(
            name="EmailConfirmation",
            fields=[
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="email_confirmation",
                        serialize=False,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "email",
                    models.EmailField(
                        help_text="The address the confirmation link was sent to.", max_length=254
                    ),
                ),
                ("confirmed", models.DateTimeField(blank=True, null=True)),
                ("created", models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.CreateModel(
            name="ModelPrice",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "agent",
                    models.CharField(
                        help_text="The agent spec the price is for, as runs name it: openai:gpt-4o, anthropic:claude-sonnet-4-5, ...",
                        max_length=300,
                        unique=True,
                    ),
                ),
                (
                    "input_per_mtok",
                    models.FloatField(validators=[django.core.validators.MinValueValidator(0)]),
                ),
                (
                    "output_per_mtok",
                    models.FloatField(validators=[django.core.validators.MinValueValidator(0)]),
                ),
                (
                    "cached_input_per_mtok",
                    models.FloatField(
                        blank=True,
                        help_text="For input tokens the provider served from its cache; empty: the input price.",
                        null=True,
                        validators=[django.core.validators.MinValueValidator(0)],
                    ),
                ),
                (
                    "source",
                    models.CharField(
                        blank=True,
                        help_text="Where the price comes from (a pricing page).",
                        max_length=300,
                    ),
                ),
                ("updated", models.DateTimeField(auto_now=True)),
            ],
            options={
                "ordering": ["agent"],
            },
        ),
        migrations.CreateModel(
            name="Animation",
            fields=[
                ("path", models.CharField(max_length=200, primary_key=True, serialize=False)),
                ("size_bytes", models.PositiveIntegerField()),
                ("stored", models.DateTimeField(auto_now_add=True)),
                (
                    "used",
                    models.DateTimeField(
                        help_text="When it was last made or served (at most hourly)."
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["used"], name="leaderboard_used_945248_idx")],
            },
        ),
        # What the chain's RunPython operations do on a fresh database, in one operation (each
        # RunPython costs a copy of the rendered models, about 20 ms).
        migrations.RunPython(fresh_database_fill, fresh_database_empty),
    ]
