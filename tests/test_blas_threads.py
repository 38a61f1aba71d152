"""numpy's OpenBLAS keeps to one thread in every process of the engine and the site
(``evaluation``'s docstring says why), unless the environment names a number."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation import BLAS_THREADS_ENV

ROOT = Path(__file__).resolve().parents[1]
# A matrix product, then the setting and the process's threads: OpenBLAS starts its helper
# threads when numpy loads it.
SHOW = (
    "import os, numpy as np; a = np.ones((256, 256)); a @ a; "
    f"print(os.environ.get({BLAS_THREADS_ENV!r}), len(os.listdir('/proc/self/task')))"
)


def _run(command: list[str], tmp_path: Path, **extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != BLAS_THREADS_ENV}
    env.update(MIRRORBENCH_DATA_DIR=str(tmp_path), **extra)
    out = subprocess.run(
        [sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "command",
    [
        ["manage.py", "shell", "-c", SHOW],
        ["-c", f"import mirrorbench_site.wsgi; {SHOW}"],
        ["-c", f"import mirrorbench_site; {SHOW}"],
        # The engine alone: `mirrorbench run` and the Inspect task load it before numpy.
        ["-c", f"import evaluation.cli; {SHOW}"],
        ["-c", f"import mirrorbench.task; {SHOW}"],
    ],
    ids=["manage.py", "wsgi", "package", "engine", "inspect-task"],
)
def test_a_process_of_the_site_or_the_engine_multiplies_on_one_thread(command, tmp_path):
    assert _run(command, tmp_path) == "1 1"


def test_a_number_the_environment_names_is_kept(tmp_path):
    setting, threads = _run(
        ["-c", f"import mirrorbench_site; {SHOW}"], tmp_path, **{BLAS_THREADS_ENV: "2"}
    ).split()
    assert setting == "2"
    # OpenBLAS starts as many threads as it was told, but no more than the cores.
    assert int(threads) == min(2, len(os.sched_getaffinity(0)))
