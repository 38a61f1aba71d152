# A run's condition (the paper's protocol or a control) and the condition a frame is drawn under.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0019_frame_renderer_help"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="condition",
            field=models.CharField(
                choices=[
                    ("main", "Main"),
                    ("no-mirror", "No mirror"),
                    ("mark-unseen", "Mark unseen"),
                    ("moved-mark", "Moved mark"),
                ],
                default="main",
                help_text="The condition its episodes were played under: main (the paper's "
                "protocol, the only one the main tables rank) or a control "
                "(evaluation.vocabulary.CONDITIONS).",
                max_length=40,
            ),
        ),
        migrations.AddField(
            model_name="frame",
            name="condition",
            field=models.CharField(
                default="main",
                help_text="The condition the scene is drawn under (part of the key unless main).",
                max_length=40,
            ),
        ),
    ]
