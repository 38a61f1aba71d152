from django.db import migrations, models


def fill_cognitive_stability(apps, schema_editor):
    """Give the runs stored before this migration their cognitive stability and its interval."""
    from evaluation.metrics import EpisodeResult, cognitive_stability, cognitive_stability_ci

    Run = apps.get_model("leaderboard", "Run")
    Episode = apps.get_model("leaderboard", "Episode")
    for run_id in Run.objects.exclude(source="reported").values_list("pk", flat=True):
        rows = Episode.objects.filter(run_id=run_id, status="completed").values_list(
            "scene__scene_id", "scene__track", "level", "distances"
        )
        results = [EpisodeResult(s, t, level, tuple(d)) for s, t, level, d in rows]
        if not results:
            continue
        interval = cognitive_stability_ci(results)
        Run.objects.filter(pk=run_id).update(
            cognitive_stability=cognitive_stability(results),
            cognitive_stability_ci=list(interval) if interval else None,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0008_frames_and_behaviour"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="cognitive_stability",
            field=models.FloatField(
                blank=True,
                help_text="Cognitive stability (the paper's appendix A-A) over the run's scenes, computed with the scores; empty for reported runs, which have no per-scene results.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="cognitive_stability_ci",
            field=models.JSONField(
                blank=True,
                help_text="Its 95% bootstrap interval over scenes: [low, high].",
                null=True,
            ),
        ),
        migrations.RunPython(fill_cognitive_stability, migrations.RunPython.noop),
    ]
