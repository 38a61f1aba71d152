"""Static files: WhiteNoise, quiet about a static root that ``collectstatic`` has not made."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
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
