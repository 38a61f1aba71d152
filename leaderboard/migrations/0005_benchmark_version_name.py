"""Benchmark versions get the name every bundle, run and score carries ("v1", "v2")."""

from django.db import migrations, models


def name_existing_versions(apps, schema_editor):
    BenchmarkVersion = apps.get_model("leaderboard", "BenchmarkVersion")
    for version in BenchmarkVersion.objects.all():
        parts = {version.scene_set, version.prompt_version, version.dynamics_version}
        version.name = parts.pop() if len(parts) == 1 else f"custom-{version.pk}"
        version.save(update_fields=["name"])


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0004_provider_windows")]

    operations = [
        migrations.AddField(
            model_name="benchmarkversion",
            name="name",
            field=models.CharField(default="", max_length=20),
            preserve_default=False,
        ),
        migrations.RunPython(name_existing_versions, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="benchmarkversion",
            name="name",
            field=models.CharField(max_length=20, unique=True),
        ),
    ]
