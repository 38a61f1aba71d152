"""Static files: a static root that collectstatic has not made is no reason to warn."""

import json
import warnings
from pathlib import Path

import pytest
from django.http import HttpResponse

from mirrorbench_site.static import (
    PLOTLY_CSS,
    PLOTLY_JS,
    StaticFilesMiddleware,
    plotly_bundle,
    plotly_css,
    plotly_injected_style_ids,
    plotly_source,
)

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_static_root_is_expected_while_the_finders_serve(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "staticfiles"
    settings.MIRRORBENCH_MANIFEST_STATIC = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        StaticFilesMiddleware(lambda request: HttpResponse())
    assert not settings.STATIC_ROOT.exists()


def test_with_manifest_storage_a_missing_static_root_still_warns(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "staticfiles"
    settings.MIRRORBENCH_MANIFEST_STATIC = True
    with pytest.warns(UserWarning, match="No directory at"):
        StaticFilesMiddleware(lambda request: HttpResponse())


def test_the_bundle_is_the_plotly_js_of_the_plotly_package_with_the_traces_of_scripts_plotly():
    """static/vendor/plotly.min.js draws the figures the plotly package validates (the tests
    check every chart against it): the same plotly.js version, and the traces traces.json
    names. Upgrading plotly without `make plotly-bundle` fails here."""
    import plotly.offline

    version, traces = plotly_bundle(PLOTLY_JS.read_text())
    assert version == plotly.offline.get_plotlyjs_version(), "run make plotly-bundle"
    assert traces == json.loads((ROOT / "scripts" / "plotly" / "traces.json").read_text())
    lock = json.loads((ROOT / "scripts" / "plotly" / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/plotly.js"]["version"] == version
    assert all(p.get("integrity") for name, p in lock["packages"].items() if name)
    # A quarter of the full bundle: no maps, 3D or WebGL traces.
    assert PLOTLY_JS.stat().st_size < 1_500_000


def test_a_file_without_the_bundle_line_is_refused():
    with pytest.raises(ValueError, match="names no traces"):
        plotly_bundle("/**\n* plotly.js v4.1.1\n*/ var Plotly;")


def test_plotly_css_holds_the_bundled_plotly_js_start_up_styles():
    """Under the Content-Security-Policy plotly.js may make no style element of its own: the
    rules it would put there come from static/css/plotly.css, and the styles it injects unless
    an element of their id exists find one in the chart template."""
    source = plotly_source()
    css = plotly_css(source)
    assert css.count("{") > 50 and ".js-plotly-plot .plotly .modebar" in css
    assert PLOTLY_CSS.read_text() == css, "plotly changed: run python -m mirrorbench_site.static"
    assets = (ROOT / "templates" / "leaderboard" / "_chart_assets.html").read_text()
    assert 'id="plotly.js-style-global" class="no-inline-styles"' in assets
    for style_id in plotly_injected_style_ids(source):
        assert f'<template id="{style_id}"></template>' in assets
