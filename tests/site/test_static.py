"""Static files: a static root that collectstatic has not made is no reason to warn."""

import warnings
from pathlib import Path

import pytest
from django.http import HttpResponse

from mirrorbench_site.static import (
    PLOTLY_CSS,
    StaticFilesMiddleware,
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


def test_plotly_css_holds_the_installed_plotly_js_start_up_styles():
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
