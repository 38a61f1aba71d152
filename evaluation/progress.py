"""One progress bar for a run of episodes (tqdm), used by ``mirrorbench run`` and by
``manage.py evaluate --wait``.

On a terminal the bar is redrawn in place at most five times a second; in a log file (CI, a
worker's output) it becomes a plain line every ten seconds and one at the end, never a carriage
return.
"""

from __future__ import annotations

import threading
from typing import TextIO

from tqdm import tqdm

__all__ = ["RunProgress"]


class _Lines:
    """A file for tqdm that turns each redraw into a line of its own."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> None:
        text = text.strip("\r\n").rstrip()
        if text:
            self._stream.write(text + "\n")

    def flush(self) -> None:
        self._stream.flush()


class RunProgress:
    """Episodes done out of ``total``, with steps, bad responses and errors beside the bar.

    Thread-safe: the runner's worker threads report steps while the main thread reports
    finished episodes. ``stream=None`` shows nothing.
    """

    def __init__(self, total: int, stream: TextIO | None, *, desc: str | None = None) -> None:
        self.total = total
        self.done = 0
        self.steps = 0
        self.bad = 0
        self.errors = 0
        self._lock = threading.Lock()
        tty = stream is not None and stream.isatty()
        self._bar = tqdm(
            total=total,
            desc=desc,
            unit="episode",
            file=stream if tty or stream is None else _Lines(stream),
            disable=stream is None,
            mininterval=0.2 if tty else 10.0,
            # In a log the bar is not redrawn, so the line has a fixed width.
            ncols=None if tty else 110,
            dynamic_ncols=tty,
            ascii=not tty,
            leave=True,
        )
        self._postfix()

    def _postfix(self) -> None:
        self._bar.set_postfix_str(
            f"{self.steps} steps, {self.bad} bad responses, {self.errors} errors", refresh=False
        )

    def step(self, *, bad: bool) -> None:
        """One model answer; ``bad`` when it could not be parsed into an option."""
        with self._lock:
            self.steps += 1
            self.bad += bad

    def episode(self, *, error: bool) -> None:
        """One episode finished (``error`` when it ended in an error)."""
        with self._lock:
            self.done += 1
            self.errors += error
            self._postfix()
            self._bar.update(1)

    def set(self, *, done: int, steps: int, bad: int, errors: int) -> None:
        """Show absolute counts (a run followed from the database)."""
        with self._lock:
            self.steps, self.bad, self.errors = steps, bad, errors
            self._postfix()
            if done != self.done:
                self._bar.update(done - self.done)
                self.done = done

    def close(self) -> None:
        """Draw the last state and end the line."""
        with self._lock:
            self._postfix()
            self._bar.close()

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
