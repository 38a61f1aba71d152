"""The evaluation engine: prompts, agents, the episode runner, metrics and results bundles.

Plain Python: importable without Django settings.

Importing the engine gives numpy's OpenBLAS one thread (``OPENBLAS_NUM_THREADS=1`` unless the
environment already names a number), which holds if numpy loads after it: every process of
the engine and of the site imports this package first (``mirrorbench_site`` imports it before
anything else). The engine's matrix products are small (the bootstrap's resample counts times
66 scenes' values: a tenth of a millisecond), and after each one OpenBLAS's helper threads
spin on the other cores for about 0.1 s before they sleep, burning CPU that the web's and the
workers' other processes need: a process that did a product every 50 ms kept a second core
100% busy (1.0 s of CPU a second instead of 0.01), and the suite's API and ranking tests spent
a third of their CPU spinning (test_api's evaluated-run class 12.3 s, 8.2-8.6 s with one thread).
"""

import os

BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"

os.environ.setdefault(BLAS_THREADS_ENV, "1")
