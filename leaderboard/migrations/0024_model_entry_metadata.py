# What a model entry says about the model (issue 33's filters): release date, reasoning mode or
# effort, licence, and plain model or agent scaffold, each empty where not known.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0023_step_search"),
    ]

    operations = [
        migrations.AddField(
            model_name="modelentry",
            name="release_date",
            field=models.DateField(
                blank=True,
                help_text="When the model (or this version of it) was released.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="modelentry",
            name="reasoning",
            field=models.CharField(
                blank=True,
                choices=[
                    ("off", "No reasoning"),
                    ("on", "Reasoning on"),
                    ("minimal", "Minimal effort"),
                    ("low", "Low effort"),
                    ("medium", "Medium effort"),
                    ("high", "High effort"),
                ],
                help_text="Reasoning mode or effort the results were measured with: off, on (a "
                "thinking mode without levels), minimal, low, medium, high; empty where not known.",
                max_length=10,
            ),
        ),
        migrations.AddField(
            model_name="modelentry",
            name="licence",
            field=models.CharField(
                blank=True,
                help_text="The weights' licence (an SPDX id such as Apache-2.0, or a name such as "
                "'Llama 3 Community'); 'proprietary' for a closed model; empty where not known.",
                max_length=100,
            ),
        ),
        migrations.AddField(
            model_name="modelentry",
            name="scaffold",
            field=models.CharField(
                blank=True,
                choices=[("model", "Plain model"), ("agent", "Agent scaffold")],
                help_text="model: the model answered the benchmark's prompts itself; agent: an "
                "agent scaffold (tools, memory, planning) around a model answered; empty where "
                "not known.",
                max_length=10,
            ),
        ),
    ]
