"""The static files' table that test clients share is the one WhiteNoise's own scan builds."""

import pytest
from django.test import Client
from whitenoise.middleware import WhiteNoiseMiddleware

from tests.static_index import scan_afresh


def _table(middleware: WhiteNoiseMiddleware) -> dict[str, list[tuple[str, list[object]]]]:
    """Each URL's files (the file and its compressed variants) with their headers."""
    return {
        url: [(path, sorted(headers)) for _, path, headers in entry.alternatives]
        for url, entry in middleware.files.items()
    }


@pytest.fixture(autouse=True)
def _no_collected_files(settings):
    settings.STATIC_ROOT = None  # no collectstatic here: the finders' files alone


def test_a_shared_table_is_the_one_a_fresh_scan_builds():
    first = WhiteNoiseMiddleware(lambda request: None)  # the process's first: it scans
    shared = WhiteNoiseMiddleware(lambda request: None)
    plotly = "/static/vendor/plotly.min.js"
    assert shared.files[plotly] is first.files[plotly]  # not scanned again
    fresh = WhiteNoiseMiddleware(lambda request: None)
    fresh.files.clear()
    scan_afresh(fresh)
    assert plotly in fresh.files and fresh.files[plotly] is not shared.files[plotly]
    assert _table(shared) == _table(fresh)


def test_a_table_follows_the_settings_its_headers_come_from(settings):
    WhiteNoiseMiddleware(lambda request: None)
    settings.WHITENOISE_MAX_AGE = 123
    middleware = WhiteNoiseMiddleware(lambda request: None)
    headers = dict(middleware.files["/static/vendor/plotly.min.js"].alternatives[0][2])
    assert headers["Cache-Control"] == "max-age=123, public"


def test_clients_serve_static_files_from_the_table():
    response = Client().get("/static/vendor/plotly.min.js")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/javascript")
