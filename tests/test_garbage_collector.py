"""The garbage collector's thresholds: the site's processes and the suite's own collect the
youngest generation after 100,000 new objects (``mirrorbench_site``, tests/conftest.py)."""

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHOW = "import gc; print(gc.get_threshold())"


def test_collection_is_frozen_and_the_youngest_generation_waits_for_100000_objects():
    assert gc.get_threshold() == (100_000, 50, 100)
    # What collection made (this module among it) is left out of every later collection.
    assert gc.get_freeze_count() > 10_000


@pytest.mark.parametrize(
    "command",
    [
        # manage.py sets them before Django loads; the web (gunicorn loads the WSGI module) and
        # Celery (-A mirrorbench_site) import the package before anything of the site.
        ["manage.py", "shell", "-c", SHOW],
        ["-c", f"import mirrorbench_site.wsgi; {SHOW}"],
        ["-c", f"import mirrorbench_site; {SHOW}"],
    ],
    ids=["manage.py", "wsgi", "package"],
)
def test_a_process_of_the_site_collects_its_youngest_generation_after_100000_objects(
    command, tmp_path
):
    env = {**os.environ, "MIRRORBENCH_DATA_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "(100000, 50, 100)"


def test_the_engine_alone_keeps_pythons_thresholds():
    """``mirrorbench run`` is the engine without the site: the package's setting is not its."""
    code = f"import evaluation.cli, evaluation.runner, simulation; {SHOW}"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "(700, 10, 10)"
