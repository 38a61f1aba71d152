"""What a process of the site loads when it starts: each web process, Celery worker and
``manage.py`` command loads the URLs and runs the checks, and most never draw a chart or write a
parquet file, so the libraries for those load on first use."""

import subprocess
import sys

LATE = ("narwhals", "pandas", "plotly.graph_objects", "pyarrow")
"""Libraries that load on first use (``evaluation.deferred.Deferred``): pyarrow
(``evaluation.details``, the boards' downloads) and pandas (the boards). Plotly's figures (with
narwhals) load not even then: the charts build their figures as plain dicts
(``leaderboard.charts.figures``)."""

ENGINE = ("gymnasium", "numpy", "PIL", "mujoco", "celery", "kombu")
"""Libraries of the engine that a site process loads only to play, score, render or draw an
image: Gymnasium (``simulation`` registers its environment when Gymnasium loads, not by loading
it), numpy (``evaluation.metrics``' bootstraps, ``evaluation.png``), Pillow (frames, cards,
animations) and MuJoCo. Together about 0.25 s of CPU at every start of a process. Celery and
kombu load when a process first queues a task (``leaderboard.queue``): ``manage.py check``
0.97 -> 0.82 s of CPU without them."""

LOADED = f"print(sorted(m for m in {LATE!r} if m in sys.modules))\n"


def test_the_urls_and_the_checks_load_no_engine_chart_table_or_parquet_library():
    code = (
        "import sys, django\n"
        "django.setup()\n"
        "from django.core.checks import run_checks\n"
        "from django.urls import get_resolver\n"
        "get_resolver().url_patterns; run_checks()\n"
        f"print(sorted(m for m in {ENGINE!r} if m in sys.modules))\n"
        + LOADED
        + "from leaderboard.charts import cost, figures\n"
        "figures.tracks_figure({}, 0); figures.trajectories_figure([]); cost.cost_figure([])\n"
        + LOADED
        + "from evaluation.details import parquet_bytes, step_schema\n"
        "parquet_bytes(step_schema().empty_table())\n" + LOADED
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    engine, at_start, after_chart, after_parquet = out.stdout.splitlines()
    assert engine == "[]"
    assert at_start == "[]"
    assert after_chart == "[]"
    assert "'pyarrow'" in after_parquet  # and pandas, which pyarrow's parquet writer loads


WORKER_START = (
    "import sys, django\n"
    "django.setup()\n"
    "from mirrorbench_site.celery import app\n"
    "app.loader.import_default_modules()\n"  # what a worker or beat does as it starts
    "print('leaderboard.tasks' in sys.modules, 'mirrorbench_site.urls' in sys.modules)\n"
)


def test_a_worker_loads_its_tasks_but_not_the_urls_that_celerys_discarded_checks_would_load(
    monkeypatch,
):
    monkeypatch.delenv("CELERY_SKIP_CHECKS", raising=False)
    out = subprocess.run(
        [sys.executable, "-c", WORKER_START], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["True", "False"]
    # An empty value asks for Celery's checks again, which load the URLs.
    monkeypatch.setenv("CELERY_SKIP_CHECKS", "")
    out = subprocess.run(
        [sys.executable, "-c", WORKER_START], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["True", "True"]
