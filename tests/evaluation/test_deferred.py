"""A library module imported on first use (``evaluation.deferred``)."""

import sys

import pytest

from evaluation.deferred import Deferred


def test_the_module_is_imported_when_a_name_is_first_used_not_before(monkeypatch):
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    colorsys = Deferred("colorsys")
    assert "colorsys" not in sys.modules
    assert colorsys.rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)
    assert "colorsys" in sys.modules
    assert colorsys.hsv_to_rgb is sys.modules["colorsys"].hsv_to_rgb


def test_a_name_the_module_lacks_is_an_attribute_error():
    with pytest.raises(AttributeError):
        Deferred("colorsys").no_such_name  # noqa: B018
