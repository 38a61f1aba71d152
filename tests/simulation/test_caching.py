"""single_flight: a cached value several threads ask for at once is computed once."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from simulation.caching import computing, single_flight


def test_threads_asking_for_the_same_key_at_once_compute_it_once():
    calls: list[int] = []

    @single_flight
    @lru_cache(maxsize=4)
    def slow(key: int) -> int:
        calls.append(key)
        time.sleep(0.2)
        return key * 10

    with ThreadPoolExecutor(8) as threads:
        results = list(threads.map(slow, [1] * 8))
    assert results == [10] * 8 and calls == [1]


def test_different_keys_are_computed_in_parallel():
    inside = threading.Barrier(2, timeout=5)

    @single_flight
    @lru_cache(maxsize=4)
    def meets(key: int) -> int:
        inside.wait()  # both keys must be inside at once, or this times out
        return key

    with ThreadPoolExecutor(2) as threads:
        assert sorted(threads.map(meets, [1, 2])) == [1, 2]


def test_computing_says_which_key_a_thread_is_computing_now():
    inside, release = threading.Event(), threading.Event()

    @single_flight
    @lru_cache(maxsize=4)
    def held(key: int) -> int:
        inside.set()
        assert release.wait(5)
        return key

    assert not computing(held, 1)
    with ThreadPoolExecutor(1) as thread:
        answer = thread.submit(held, 1)
        assert inside.wait(5)
        assert computing(held, 1) and not computing(held, 2)
        release.set()
        assert answer.result(5) == 1
    assert not computing(held, 1)  # done: read from the cache from now on
