"""``{% site_url 'name' %}``: the address of a page that takes no arguments, as ``{% url %}``
gives it, reversed once per process for each URL configuration and script prefix.

Every page draws the navigation twice (the wide bar and the phone's menu), the header and the
footer: about 30 reverses of 18 ``{% url %}`` tags, each a walk through the URL resolver (about
30 us), a fifth of a simple page's render (``/about/``: 2.68 ms, 2.14 ms with this tag).
"""

from __future__ import annotations

from functools import lru_cache

from django import template
from django.urls import URLResolver, get_resolver, get_script_prefix, get_urlconf, reverse

register = template.Library()


@register.simple_tag
def site_url(name: str) -> str:
    """The address of the page ``name`` (a URL name without arguments)."""
    urlconf = get_urlconf()
    # Keyed by the resolver object too: settings that change the URLconf (tests'
    # override_settings) clear Django's resolver cache, and a new resolver is a new key.
    return _reversed(name, urlconf, get_resolver(urlconf), get_script_prefix())


@lru_cache(maxsize=256)
def _reversed(name: str, urlconf: str | None, resolver: URLResolver, prefix: str) -> str:
    return reverse(name, urlconf=urlconf)
