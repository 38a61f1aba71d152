"""Static files: WhiteNoise, quiet about a static root that ``collectstatic`` has not made, and
the start-up styles of the chart pages' plotly.js as a file."""

from __future__ import annotations

import json
import re
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


# plotly.js under a Content-Security-Policy without inline styles (mirrorbench_site.csp). At
# start-up plotly.js puts its own rules into a <style> element it creates, unless an element of
# id plotly.js-style-global with class no-inline-styles exists: static/css/plotly.css holds those
# rules, made from static/vendor/plotly.min.js by `python -m mirrorbench_site.static`, and
# _chart_assets.html links it with that id. A bundle with map traces would also inject
# maplibre's styles unless an element of their id existed; ours has none.
# tests/site/test_static.py checks plotly.css against the bundle, and fails if a rebuilt bundle
# would make a style element of its own without an empty <template> of that id in
# _chart_assets.html.

STATIC = Path(__file__).resolve().parent.parent / "static"
PLOTLY_JS = STATIC / "vendor" / "plotly.min.js"
"""The chart pages' plotly.js: the core and the traces the charts draw, built from a locked npm
install by ``make plotly-bundle`` (scripts/plotly), a quarter of the full bundle's size."""
PLOTLY_CSS = STATIC / "css" / "plotly.css"
_STRING = r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'"""
_RULE = re.compile(rf"({_STRING})\s*:\s*({_STRING})")


def plotly_source() -> str:
    return PLOTLY_JS.read_text()


def plotly_bundle(source: str) -> tuple[str, list[str]]:
    """The plotly.js version and the trace types of a bundle that ``make plotly-bundle`` made,
    read from its first line."""
    found = re.match(r"/\*! plotly\.js v([\w.-]+) .*?bundle of traces (\[[^\]]*\])", source)
    if found is None:
        raise ValueError("not a bundle of scripts/plotly: its first line names no traces")
    return found.group(1), json.loads(found.group(2))


def _unquote(literal: str) -> str:
    return re.sub(r"\\(.)", r"\1", literal[1:-1])


def plotly_css(source: str) -> str:
    """The stylesheet plotly.js would build at start-up, rule for rule, in the order it ends up.

    plotly.js keeps the rules in one object literal, ``{"X,X div": "...", ...}``, and inserts
    each at the top of its sheet, with X and Y standing for its plot and notifier classes.
    """
    version, _ = plotly_bundle(source)
    start = source.index('{"X,X div":')
    end = source.index("};for(", start)
    rules = []
    for selector, body in _RULE.findall(source[start : end + 1]):
        full = re.sub("^,", " ,", _unquote(selector))
        full = full.replace("X", ".js-plotly-plot .plotly").replace("Y", ".plotly-notifier")
        rules.append(f"{full} {{{_unquote(body)}}}")
    header = (
        f"/* plotly.js {version}: its start-up styles, made from the\n"
        "   site's static/vendor/plotly.min.js by `python -m mirrorbench_site.static`. The\n"
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
