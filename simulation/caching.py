"""Process-wide caches that several threads may fill at once."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def single_flight(function: F) -> F:
    """Make a cached function compute each key once when several threads ask for it at once.

    ``function`` is already cached (``functools.lru_cache``); a second thread asking for a key
    being computed waits for that computation and then reads the cache, instead of repeating
    work that can take seconds (compiling a scene, simplifying a robot's meshes). Different
    keys are computed in parallel.
    """
    locks: dict[Hashable, threading.Lock] = {}
    guard = threading.Lock()

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted(kwargs.items())))
        with guard:
            lock = locks.setdefault(key, threading.Lock())
        with lock:
            return function(*args, **kwargs)

    def busy(*args: Any, **kwargs: Any) -> bool:
        lock = locks.get((args, tuple(sorted(kwargs.items()))))
        return lock is not None and lock.locked()

    wrapper.busy = busy  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def computing(function: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
    """Whether a thread is computing ``function(*args, **kwargs)`` right now (``function``
    made by ``single_flight``): a caller with other work can do that first and come back."""
    busy: Callable[..., bool] = function.busy  # type: ignore[attr-defined]
    return busy(*args, **kwargs)
