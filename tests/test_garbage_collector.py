"""The suite's own processes collect garbage less often (tests/conftest.py)."""

import gc


def test_collection_is_frozen_and_the_youngest_generation_waits_for_100000_objects():
    assert gc.get_threshold() == (100_000, 50, 100)
    # What collection made (this module among it) is left out of every later collection.
    assert gc.get_freeze_count() > 10_000
