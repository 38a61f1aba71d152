"""The garbage collector's thresholds: the site's processes and the suite's own collect the
youngest generation after 100,000 new objects (``mirrorbench_site``, tests/conftest.py); a
process of the site ends without the interpreter's final collections walking its objects."""

import gc

import pytest

from tests.python_processes import last_line, python_run, site_commands

SHOW = "import gc; print(gc.get_threshold())"
SITE = site_commands(SHOW)


def test_collection_is_frozen_and_the_youngest_generation_waits_for_100000_objects():
    assert gc.get_threshold() == (100_000, 50, 100)
    # What collection made (this module among it) is left out of every later collection.
    assert gc.get_freeze_count() > 10_000


@pytest.mark.parametrize("command", list(SITE.values()), ids=list(SITE))
def test_a_process_of_the_site_collects_its_youngest_generation_after_100000_objects(
    command, tmp_path
):
    assert last_line(command, tmp_path) == "(100000, 50, 100)"


def test_the_engine_alone_keeps_pythons_thresholds(tmp_path):
    """``mirrorbench run`` is the engine without the site: the package's setting is not its."""
    code = f"import evaluation.cli, evaluation.runner, simulation; {SHOW}"
    assert last_line(["-c", code], tmp_path) == "(700, 10, 10)"


# Each collection of the interpreter's last ones reports how many objects it had to walk.
WALKED = (
    "import gc, sys\n"
    "def walked(phase, info):\n"
    "    if phase == 'start':\n"
    "        print('walked', len(gc.get_objects()), file=sys.stderr, flush=True)\n"
    "import atexit\n"
    "atexit.register(lambda: gc.callbacks.append(walked))\n"
)


def _walked_at_exit(first: str, data_dir) -> list[int]:
    """How many objects each of the interpreter's final collections walked, in a process that
    runs ``first``, then loads Django and the engine. The callback is registered at exit,
    after the package's handler ran (handlers run last registered first), so that only the
    final collections report."""
    code = f"{first}{WALKED}import django, evaluation.cli\n"
    err = python_run(["-c", code], data_dir).stderr
    walked = [int(line.split()[1]) for line in err.splitlines() if line.startswith("walked")]
    assert walked, err
    return walked


def test_a_process_of_the_site_ends_without_walking_its_objects_again(tmp_path):
    """The package's exit handler freezes what is alive, so the interpreter's final
    collections walk nothing; a process without the package walks all it made."""
    assert max(_walked_at_exit("import mirrorbench_site\n", tmp_path)) < 100
    assert max(_walked_at_exit("", tmp_path)) > 10_000
