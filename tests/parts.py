"""The real parts tests run against, and the one rule for a part that is missing.

A part is something installed beside the code: Debian's Chromium, redis-server and PostgreSQL
(``make test-deps``), npm's axe-core (``make test-deps``), and the dev extra's packages that
drive or check them (Playwright, NVIDIA's asset validator: ``make install``). On a developer's
machine a test whose part is missing skips, saying how to install it. Under CI (``CI`` set to
``true`` or ``1``, as ``.ci/run`` does) it fails instead, so a missing install step cannot hide
behind a green run.

Skips that are not about a missing part stay plain skips everywhere, CI included:

- Isaac Sim's checks (``tests/simulation/test_backends.py``): an NVIDIA RTX GPU and Python 3.12;
- glibc's malloc settings (``tests/evaluation/test_memory.py``) on another C library;
- the full-disk test's tmpfs (``tests/faults/test_disk_full.py``) where mounting is refused;
- the embedded broker's checks (``tests/site``) while another broker is configured.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest

TEST_DEPS = "make test-deps installs it (scripts/test-deps.sh: as root, or with sudo)"
"""How to install the system's parts: Chromium, redis-server, PostgreSQL, axe-core."""
DEV_EXTRA = "make install installs it (the dev extra, from requirements.lock)"
"""How to install the Python packages that drive or check a part."""


def under_ci() -> bool:
    """Return whether the suite runs under CI, where a missing part fails its test."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1"}


def require_part(name: str, available: bool, install_hint: str) -> None:
    """Return when the part is here; otherwise skip the test, or fail it under CI.

    Args:
        name: the part, as a person would install it ("redis-server", "Chromium").
        available: whether it is here.
        install_hint: how to install it, or what went wrong with it.

    Raises:
        pytest.fail.Exception: under CI, when the part is missing.
        pytest.skip.Exception: elsewhere, when the part is missing (at a module's top level
            too, where it skips the whole module).
    """
    if not available:
        missing_part(name, install_hint)


def missing_part(name: str, install_hint: str) -> NoReturn:
    """Skip the test whose part is missing, or fail it under CI (see :func:`require_part`)."""
    message = f"{name} is missing: {install_hint}"
    if under_ci():
        pytest.fail(f"{message} (CI: a test's real part must be installed)", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def import_part(module: str, name: str, install_hint: str) -> ModuleType:
    """Return the imported module; when it cannot be imported, the part is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing_part(name, f"{install_hint} ({exc})")
