"""Python processes started as the site's and the engine's are, for the tests of what each
kind of process sets up when it starts (tests/test_garbage_collector.py,
tests/test_blas_threads.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def site_commands(code: str) -> dict[str, list[str]]:
    """The ways a process of the site starts, each running ``code`` once it has: ``manage.py``
    (which imports the package before Django loads), the web (gunicorn loads the WSGI module)
    and Celery (``-A mirrorbench_site`` imports the package before anything of the site)."""
    return {
        "manage.py": ["manage.py", "shell", "-c", code],
        "wsgi": ["-c", f"import mirrorbench_site.wsgi; {code}"],
        "package": ["-c", f"import mirrorbench_site; {code}"],
    }


def python_run(
    args: list[str],
    data_dir: Path,
    *,
    drop: tuple[str, ...] = (),
    extra: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``python args`` in the project's root with the suite's environment, less the
    variables ``drop`` names, plus ``extra`` and a data directory of its own; it must
    succeed."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra or {}, MIRRORBENCH_DATA_DIR=str(data_dir))
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )


def last_line(
    args: list[str],
    data_dir: Path,
    *,
    drop: tuple[str, ...] = (),
    extra: Mapping[str, str] | None = None,
) -> str:
    """The last line that ``python_run`` printed on its standard output."""
    return python_run(args, data_dir, drop=drop, extra=extra).stdout.strip().splitlines()[-1]
