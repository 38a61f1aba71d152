"""Where the engine keeps its files when run outside the site."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """Return the data directory: ``MIRRORBENCH_DATA_DIR``, else ``var/`` in the repository root
    (the site's default too), else ``var/`` in the current directory for an installed package.
    """
    configured = os.environ.get("MIRRORBENCH_DATA_DIR")
    if configured:
        return Path(configured).expanduser()
    root = Path(__file__).resolve().parent.parent
    return (root if (root / "manage.py").exists() else Path.cwd()) / "var"
