"""The suite's own processes collect garbage less often (tests/conftest.py), and the processes
a test starts as Python starts them."""

import gc
import subprocess
import sys


def test_collection_is_frozen_and_the_youngest_generation_waits_for_100000_objects():
    assert gc.get_threshold() == (100_000, 50, 100)
    # What collection made (this module among it) is left out of every later collection.
    assert gc.get_freeze_count() > 10_000


def test_a_process_a_test_starts_keeps_pythons_defaults():
    shown = subprocess.run(
        [sys.executable, "-c", "import gc; print(gc.get_threshold(), gc.get_freeze_count())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout.split("\n")[0] == f"{(700, 10, 10)} 0"
