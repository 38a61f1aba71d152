"""Static files: WhiteNoise, quiet about a static root that ``collectstatic`` has not made, and
the plotly.js of the installed plotly package (and its styles as a file)."""

from __future__ import annotations

import re
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


# plotly.js under a Content-Security-Policy without inline styles (mirrorbench_site.csp). At
# start-up plotly.js puts its own rules into a <style> element it creates, unless an element of
# id plotly.js-style-global with class no-inline-styles exists: static/css/plotly.css holds those
# rules, made from the installed plotly.min.js by `python -m mirrorbench_site.static`, and
# _chart_assets.html links it with that id. It also injects styles of its own (maplibre's, for
# maps the site never draws) unless an element of their id exists: _chart_assets.html holds
# empty <template> elements of those ids. tests/site/test_static.py checks both stay in step.

PLOTLY_CSS = Path(__file__).resolve().parent.parent / "static" / "css" / "plotly.css"
_STRING = r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'"""
_RULE = re.compile(rf"({_STRING})\s*:\s*({_STRING})")


def plotly_source() -> str:
    import plotly

    return (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()


def _unquote(literal: str) -> str:
    return re.sub(r"\\(.)", r"\1", literal[1:-1])


def plotly_css(source: str) -> str:
    """The stylesheet plotly.js would build at start-up, rule for rule, in the order it ends up.

    plotly.js keeps the rules in one object literal, ``{"X,X div": "...", ...}``, and inserts
    each at the top of its sheet, with X and Y standing for its plot and notifier classes.
    """
    version = re.search(r"plotly\.js v([\w.-]+)", source)
    start = source.index('{"X,X div":')
    end = source.index("};for(", start)
    rules = []
    for selector, body in _RULE.findall(source[start : end + 1]):
        full = re.sub("^,", " ,", _unquote(selector))
        full = full.replace("X", ".js-plotly-plot .plotly").replace("Y", ".plotly-notifier")
        rules.append(f"{full} {{{_unquote(body)}}}")
    header = (
        f"/* plotly.js {version.group(1) if version else '?'}: its start-up styles, made from the\n"
        "   plotly package's plotly.min.js by `python -m mirrorbench_site.static`. The\n"
        "   Content-Security-Policy allows no <style> element of plotly.js's making. */\n"
    )
    return header + "\n".join(reversed(rules)) + "\n"


def plotly_injected_style_ids(source: str) -> list[str]:
    """The ids of the <style> elements plotly.js makes unless an element of that id exists."""
    return re.findall(
        r'document\.getElementById\("([\w-]+)"\)\)\{var \w+=document\.createElement\("style"\)',
        source,
    )


if __name__ == "__main__":
    PLOTLY_CSS.write_text(plotly_css(plotly_source()))
    print(f"Wrote {PLOTLY_CSS}; <template> ids: {plotly_injected_style_ids(plotly_source())}")
