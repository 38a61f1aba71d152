"""Browser fixtures (a plugin of the suite): one headless Debian chromium per module, a page.

Playwright drives the system's chromium; nothing is downloaded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.parts import TEST_DEPS, require_part

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One headless chromium for the module; nothing is downloaded.

    Playwright's sync API keeps an event loop running in this thread, which Django's guard
    takes for async code; the ORM calls made here (loading the fixture, flushing the database)
    are plain synchronous ones, so the guard is lifted while the browser is open.
    """
    require_part(f"Debian's chromium ({CHROMIUM})", CHROMIUM.exists(), TEST_DEPS)
    unsafe = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        yield from _chromium()
    finally:
        if unsafe is None:
            del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = unsafe


def _chromium() -> Iterator[object]:
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()
