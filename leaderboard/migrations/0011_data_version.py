import uuid

from django.db import migrations, models


def first_token(apps, schema_editor):
    """The row exists from the start: cached copies are keyed on its token."""
    DataVersion = apps.get_model("leaderboard", "DataVersion")
    DataVersion.objects.get_or_create(pk=1, defaults={"token": uuid.uuid4().hex})


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0010_submissions_and_api_tokens"),
    ]

    operations = [
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
        migrations.RunPython(first_token, migrations.RunPython.noop),
    ]
