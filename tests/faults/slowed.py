"""``python -m tests.faults.slowed celery|gunicorn <arguments>``: a Celery worker or the web
server with a slowed function.

A fault test must kill a process *while* it does one thing (scoring a finished run, rendering
a frame, verifying an upload). ``MIRRORBENCH_FAULT_SLOW="module:function=seconds[,...]"``
wraps each named function so that, on every call, it first creates
``$MIRRORBENCH_FAULT_MARKERS/<function>`` (the test waits for that file) and then sleeps that
long before doing its real work: the test kills the process inside the window. Nothing else
differs from ``python -m celery`` or ``python -m gunicorn``: the functions are wrapped before
gunicorn forks its workers, which inherit them.
"""

from __future__ import annotations

import functools
import importlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _slowed(function: Callable[..., Any], name: str, seconds: float) -> Callable[..., Any]:
    markers = Path(os.environ.get("MIRRORBENCH_FAULT_MARKERS", "."))

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        (markers / name).touch()
        time.sleep(seconds)
        return function(*args, **kwargs)

    return wrapper


def install(spec: str) -> None:
    """Wrap each ``module:function=seconds`` of ``spec`` (comma-separated)."""
    for item in filter(None, (part.strip() for part in spec.split(","))):
        target, _, seconds = item.partition("=")
        module_name, _, function_name = target.partition(":")
        module = importlib.import_module(module_name)
        original = getattr(module, function_name)
        setattr(module, function_name, _slowed(original, function_name, float(seconds)))


def main() -> None:
    import sys

    import django

    program = sys.argv.pop(1)
    django.setup()
    install(os.environ.get("MIRRORBENCH_FAULT_SLOW", ""))
    if program == "gunicorn":
        from gunicorn.app.wsgiapp import run

        run()
    else:
        from celery.__main__ import main as celery_main

        celery_main()


if __name__ == "__main__":
    main()
