"""Request slots: at most ``n`` model calls in flight, the longest episode first.

A run keeps a few more episodes open than it has request slots, so that an episode waiting for
its next frame leaves its slot to another. When several episodes wait for a slot, the one with
the most steps left takes the next: the episodes finish close together and none is left to
play its last steps alone while the other slots stay empty. Equal ones go in the order they
asked.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class RequestSlots:
    """``n`` slots; ``with slots.hold(steps_left):`` around each model call. Thread-safe."""

    def __init__(self, n: int, on_idle: Callable[[], None] | None = None) -> None:
        """``on_idle`` is called (outside the lock) when a slot is given back and nobody
        waits for it."""
        if n < 1:
            raise ValueError(f"request slots must be at least 1, got {n!r}")
        self.size = n
        self._on_idle = on_idle
        self._free = n
        self._lock = threading.Lock()
        self._waiting: list[tuple[int, int, threading.Lock]] = []
        self._order = itertools.count()

    @property
    def waiting(self) -> int:
        """How many callers wait for a slot now."""
        with self._lock:
            return len(self._waiting)

    @contextmanager
    def hold(self, steps_left: int = 0) -> Iterator[None]:
        """Hold one slot for the block; ranks the wait by ``steps_left``, most first."""
        with self._lock:
            # Callers only wait while every slot is taken: a freed slot goes straight to the
            # first of them (below), so a newcomer never overtakes one who waits.
            if self._free:
                self._free -= 1
                gate = None
            else:
                gate = threading.Lock()
                gate.acquire()
                heapq.heappush(self._waiting, (-steps_left, next(self._order), gate))
        if gate is not None:
            gate.acquire()  # released by the holder that hands its slot over
        try:
            yield
        finally:
            with self._lock:
                idle = not self._waiting
                if idle:
                    self._free += 1
                else:
                    heapq.heappop(self._waiting)[2].release()
            if idle and self._on_idle is not None:
                self._on_idle()


class Closed(Exception):
    """The run stopped before this episode could open."""


class Admission:
    """Lets episodes open in their order, ``first`` at a time to begin with.

    Episode ``i`` opens once ``i`` episodes before it have been let in and fewer than the
    limit are open. Each finished episode lets the next one in; ``grow()`` lets one more in
    (up to ``most`` open at once) when request slots would otherwise sit empty, or all the
    rest of the ``total`` once they fit under ``most``: an episode not yet begun has the most
    steps left of all, and the last ones to begin are what a run waits for at its end.
    """

    def __init__(self, first: int, most: int, total: int) -> None:
        self.most = max(1, most)
        self.total = total
        self._limit = max(1, min(first, self.most))
        self._finished = 0
        self._cond = threading.Condition()
        self._closed = False

    @property
    def open_limit(self) -> int:
        """How many episodes may be open at once now."""
        with self._cond:
            return self._limit - self._finished

    def enter(self, index: int) -> None:
        """Block until episode ``index`` (0-based, in the run's order) may open; ``Closed``
        if the run stops first."""
        with self._cond:
            self._cond.wait_for(lambda: self._closed or index < self._limit)
            if self._closed:
                raise Closed

    def finished(self) -> None:
        """An episode ended (done or failed): the next one may open."""
        with self._cond:
            self._finished += 1
            self._limit += 1
            self._cond.notify_all()

    def grow(self) -> None:
        """Let one more episode open (all the rest if they fit), unless ``most`` already are."""
        with self._cond:
            if self._limit >= self.total or self._limit - self._finished >= self.most:
                return
            if self.total - self._finished <= self.most:
                self._limit = self.total
            else:
                self._limit += 1
            self._cond.notify_all()

    def close(self) -> None:
        """Open nothing more: every episode still waiting gets ``Closed``."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
