"""Static files: a static root that collectstatic has not made is no reason to warn."""

import warnings

import pytest
from django.http import HttpResponse

from mirrorbench_site.static import StaticFilesMiddleware


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
