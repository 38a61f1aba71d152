"""The garbage collector's thresholds: the site's processes and the suite's own collect the
youngest generation after 100,000 new objects (``mirrorbench_site``, tests/conftest.py); a
process of the site ends without the interpreter's final collections walking its objects."""

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


# Each collection of the interpreter's last ones reports how many objects it had to walk.
WALKED = (
    "import gc, sys\n"
    "def walked(phase, info):\n"
    "    if phase == 'start':\n"
    "        print('walked', len(gc.get_objects()), file=sys.stderr, flush=True)\n"
    "import atexit\n"
    "atexit.register(lambda: gc.callbacks.append(walked))\n"
)


@pytest.mark.parametrize(
    ("first", "left"),
    [("import mirrorbench_site\n", "nothing"), ("", "everything")],
    ids=["site", "engine"],
)
def test_a_process_of_the_site_ends_without_walking_its_objects_again(first, left, tmp_path):
    """The package's exit handler freezes what is alive, so the interpreter's final
    collections walk nothing; a process without the package walks all it made."""
    # The callback is registered at exit, after the package's handler ran (handlers run
    # last registered first), so that only the interpreter's final collections report.
    code = f"{first}{WALKED}import django, evaluation.cli\n"
    env = {**os.environ, "MIRRORBENCH_DATA_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    walked = [int(line.split()[1]) for line in out.stderr.splitlines() if line.startswith("walked")]
    assert walked, out.stderr
    if left == "nothing":
        assert max(walked) < 100, walked
    else:
        assert max(walked) > 10_000, walked
