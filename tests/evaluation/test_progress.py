"""The run progress bar: counts beside a tqdm bar, plain lines in a log."""

from __future__ import annotations

import io
import threading

from evaluation.progress import RunProgress


def test_a_log_gets_whole_lines_and_the_last_line_has_every_count() -> None:
    log = io.StringIO()
    with RunProgress(3, log) as bar:
        bar.step(bad=False)
        bar.step(bad=True)
        bar.episode(error=False)
        bar.episode(error=True)
        bar.episode(error=False)
    text = log.getvalue()
    assert "\r" not in text
    last = text.splitlines()[-1]
    assert "3/3" in last
    assert "2 steps, 1 bad responses, 1 errors" in last


def test_counts_from_many_threads_add_up() -> None:
    bar = RunProgress(100, None)

    def work() -> None:
        for _ in range(25):
            bar.step(bad=False)
            bar.episode(error=False)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    bar.close()
    assert (bar.done, bar.steps, bar.errors) == (100, 100, 0)


def test_absolute_counts_from_the_database_move_the_bar() -> None:
    log = io.StringIO()
    bar = RunProgress(10, log)
    bar.set(done=4, steps=40, bad=2, errors=1)
    bar.set(done=10, steps=90, bad=3, errors=1)
    bar.close()
    assert bar.done == 10
    assert "10/10" in log.getvalue().splitlines()[-1]
    assert "90 steps, 3 bad responses, 1 errors" in log.getvalue().splitlines()[-1]
