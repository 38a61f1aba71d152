"""The MirrorBench Django project: settings, URLs and the Celery app (``mirrorbench_site.celery``).

The Celery app is not imported here, as Django projects often do: a process loads it when it
first queues a task (``leaderboard.queue``) or runs them (``celery -A mirrorbench_site`` finds
``mirrorbench_site.celery``; ``leaderboard.tasks`` binds its tasks to it), so that a web process
or a ``manage.py`` command that queues nothing starts without Celery and kombu.

This package does set how often the garbage collector runs, in every process of the site (web
workers, Celery workers and beat, ``manage.py`` commands), since each imports it before Django
loads the apps (``manage.py`` first of all): the youngest generation is collected after 100,000
new objects instead of Python's 700. Starting a process makes over 100,000 objects that live as
long as it does (Django, DRF, the project's modules, its URLs), and with Python's thresholds the
collections that followed walked them again and again: ``manage.py check`` took 0.92 s of CPU,
0.84 s with these (a worker's start 0.88 s, 0.79 s). Nearly all garbage here holds no reference
cycle and is freed when it is dropped; what does waits a little longer. The suite's own
processes use the same thresholds (tests/conftest.py).

A process of the site also skips the interpreter's last full collections when it ends: the
package's exit handler, registered before the site's modules load and so run after their
handlers (exit handlers run last registered first), freezes every object still alive, which
the interpreter's final collections then leave alone. Those walked every object of the
process (Django, the apps, the URLs, what its work left) a few times over, to free memory
that the operating system takes back anyway: ``manage.py check`` took 1.07 s of CPU, 0.83 s
without them. Nothing is lost: the other exit handlers (logging's flush among them) have run,
the standard streams are still flushed, files are closed as their last reference goes, and
Python never promised to finalize the objects alive at exit.

It imports the engine's package before anything else too, so that numpy's OpenBLAS keeps to
one thread in every process of the site (``evaluation``'s docstring says why).
"""

import atexit
import gc

import evaluation  # noqa: F401  (first: one BLAS thread before numpy loads)

GC_THRESHOLDS = (100_000, 50, 100)

gc.set_threshold(*GC_THRESHOLDS)
atexit.register(gc.freeze)
