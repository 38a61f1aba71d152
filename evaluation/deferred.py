"""``Deferred``: a library module imported on its first use, not when the module naming it is.

Each web process, Celery worker and ``manage.py`` command imports the site's views and so the
modules behind them, and most of those processes never build a board (pandas), write a parquet
file (pyarrow), score a bootstrap or encode a frame (numpy) or draw an image (Pillow)
(``tests/site/test_startup.py`` says which stay unloaded). A module that needs one of them names
it so::

    if TYPE_CHECKING:
        import pandas as pd  # what type checkers see
    else:
        pd = Deferred("pandas")

and ``pd.DataFrame(...)`` imports pandas the first time it runs.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class Deferred:
    """Stands for the module ``name`` and imports it when one of its names is first used."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attribute)
