"""numpy's OpenBLAS keeps to one thread in every process of the engine and the site
(``evaluation``'s docstring says why), unless the environment names a number."""

import os

import pytest

from evaluation import BLAS_THREADS_ENV
from tests.python_processes import last_line, site_commands

# A matrix product, then the setting and the process's threads: OpenBLAS starts its helper
# threads when numpy loads it.
SHOW = (
    "import os, numpy as np; a = np.ones((256, 256)); a @ a; "
    f"print(os.environ.get({BLAS_THREADS_ENV!r}), len(os.listdir('/proc/self/task')))"
)
COMMANDS = {
    **site_commands(SHOW),
    # The engine alone: `mirrorbench run` and the Inspect task load it before numpy.
    "engine": ["-c", f"import evaluation.cli; {SHOW}"],
    "inspect-task": ["-c", f"import mirrorbench.task; {SHOW}"],
}


@pytest.mark.parametrize("command", list(COMMANDS.values()), ids=list(COMMANDS))
def test_a_process_of_the_site_or_the_engine_multiplies_on_one_thread(command, tmp_path):
    assert last_line(command, tmp_path, drop=(BLAS_THREADS_ENV,)) == "1 1"


def test_a_number_the_environment_names_is_kept(tmp_path):
    setting, threads = last_line(
        site_commands(SHOW)["package"], tmp_path, extra={BLAS_THREADS_ENV: "2"}
    ).split()
    assert setting == "2"
    # OpenBLAS starts as many threads as it was told, but no more than the cores.
    assert int(threads) == min(2, len(os.sched_getaffinity(0)))
