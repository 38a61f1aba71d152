"""``{% site_url %}`` (leaderboard/templatetags/site_urls.py) gives what ``{% url %}`` gives,
whatever the script prefix or the URL configuration, reversing each name once."""

import re
from pathlib import Path

from django.http import HttpResponse
from django.template import Context, Template
from django.test import override_settings
from django.urls import clear_script_prefix, path, reverse, set_script_prefix

from leaderboard.templatetags import site_urls

NAV = Path(__file__).resolve().parents[2] / "templates" / "_site_nav.html"
urlpatterns = [path("signin/", lambda request: HttpResponse(), name="login")]
"""A URL configuration of this module's own: "login" is elsewhere here."""


def render(name: str) -> str:
    return Template("{% load site_urls %}{% site_url '" + name + "' %}").render(Context())


def test_every_name_of_the_navigation_gives_what_url_gives():
    names = re.findall(r"\{% site_url '([a-z_:]+)' %\}", NAV.read_text())
    assert len(names) >= 10
    for name in names:
        assert render(name) == reverse(name)


def test_each_name_is_reversed_once(monkeypatch):
    site_urls._reversed.cache_clear()
    asked = []
    real = site_urls.reverse
    monkeypatch.setattr(site_urls, "reverse", lambda *a, **k: asked.append(a) or real(*a, **k))
    assert render("leaderboard:about") == render("leaderboard:about") == "/about/"
    assert asked == [("leaderboard:about",)]


def test_the_script_prefix_is_followed():
    assert render("leaderboard:about") == "/about/"
    set_script_prefix("/mirrorbench/")
    try:
        assert render("leaderboard:about") == "/mirrorbench/about/"
    finally:
        clear_script_prefix()
    assert render("leaderboard:about") == "/about/"


def test_another_url_configuration_is_followed():
    assert render("login") == "/accounts/login/"
    with override_settings(ROOT_URLCONF=__name__):
        assert render("login") == "/signin/"
    assert render("login") == "/accounts/login/"
