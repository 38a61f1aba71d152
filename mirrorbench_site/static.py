"""Static files: WhiteNoise, quiet about a static root that ``collectstatic`` has not made, and
the plotly.js of the installed plotly package."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage
from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise's middleware, minus its warning about a missing ``STATIC_ROOT`` when the
    finders serve every file (no manifest storage).

    The folder exists only once ``collectstatic`` has run, and reading the settings creates
    nothing (evansd/whitenoise#191 asks for the same).
    """

    def add_files(self, root: str | Path, prefix: str | None = None) -> None:
        if (
            not settings.MIRRORBENCH_MANIFEST_STATIC
            and Path(root) == Path(settings.STATIC_ROOT)
            and not Path(root).is_dir()
        ):
            return
        super().add_files(root, prefix=prefix)


class PlotlyFinder(BaseFinder):
    """Finds ``vendor/plotly.min.js``: the plotly.js that the installed plotly package ships.

    The charts are built with plotly's Python package; drawing them with its own copy of
    plotly.js keeps the two in step, and no copy is kept in the repository. ``collectstatic``
    and WhiteNoise (through the finders) pick it up like any other static file.
    """

    PATH = "plotly.min.js"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        import plotly

        self.storage = FileSystemStorage(location=Path(plotly.__file__).parent / "package_data")
        self.storage.prefix = "vendor"  # type: ignore[attr-defined]

    def check(self, **kwargs: Any) -> list[Any]:
        return []

    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> Any:
        if path != f"vendor/{self.PATH}":
            return [] if find_all else ""
        found = self.storage.path(self.PATH)
        return [found] if find_all else found

    def list(self, ignore_patterns: Any) -> Iterator[tuple[str, FileSystemStorage]]:
        yield self.PATH, self.storage
