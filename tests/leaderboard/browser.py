"""Browser fixtures (a plugin of the suite): one Debian chromium headless shell for the browser
tests that run one after another (one xdist group), a page, and axe-core's accessibility check.

Playwright drives the system's chromium; nothing is downloaded.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.parts import TEST_DEPS, require_part

ROOT = Path(__file__).resolve().parents[2]

CHROMIUM = Path("/usr/lib/chromium/chromium-headless-shell")
"""Debian's build of Chromium's headless shell (package ``chromium-headless-shell``; started
itself, not through ``/usr/bin``'s script, which would wait beside it as a shell): the same
Blink and V8 as ``/usr/bin/chromium`` without the browser's own user interface, and what
Playwright itself runs for headless tests (``chromium-headless-shell`` is what its installer
fetches for them). The full browser, run headless, still drew its interface's web pages (the
address bar's suggestion popup, in a renderer of its own for every window, unless told not
to) and its browser process did the work of windows no one sees: the 61 browser tests took
153.6 s of the machine's CPU with it, 129.7 s with the shell."""
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic"]
"""Besides Playwright's own switches (no background networking, component updates or sync)."""
AXE = ROOT / ".venv" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
"""npm's axe-core (``make test-deps``), the accessibility checker the page tests run."""
SERIOUS = ("serious", "critical")
"""The impacts of axe's violations that fail a page."""


class _Shared:
    """The chromium of this process, open while consecutive tests use it."""

    playwright: Any = None
    chromium: Any = None
    unsafe: str | None = None


_shared = _Shared()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that uses the browser goes to one pytest-xdist group (``--dist loadgroup``):
    one worker runs them one after another with one chromium, which starting for each module
    instead cost about 1.5 s of CPU 28 times. Before the hook that turns a group into its
    node-id suffix (``tests/conftest.py``)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if _uses_browser(item) and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group("browser"))


def _uses_browser(item: pytest.Item | None) -> bool:
    return item is not None and "browser" in getattr(item, "fixturenames", ())


@pytest.fixture(scope="module")
def browser() -> object:
    """A headless chromium, shared by the tests that run one after another with it (all of
    them, under ``make test``: ``pytest_collection_modifyitems``); nothing is downloaded. It
    closes when the next test does not use it (``pytest_runtest_teardown``).

    Module-scoped, so that it opens before a test's database fixtures: Playwright's sync API
    switches this thread to a greenlet of its own, whose context would hold other database
    connections than the transaction a test's ``db`` fixture had already opened. It keeps an
    event loop running, which Django's guard takes for async code; the ORM calls made
    meanwhile (loading the fixture, flushing the database) are plain synchronous ones, so the
    guard is lifted while the browser is open.
    """
    require_part(f"Debian's chromium headless shell ({CHROMIUM})", CHROMIUM.exists(), TEST_DEPS)
    if _shared.chromium is None:
        _open()
    return _shared.chromium


def _open() -> None:
    from playwright import sync_api

    _shared.unsafe = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    _shared.playwright = sync_api.sync_playwright().start()
    _shared.chromium = _shared.playwright.chromium.launch(
        executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
    )


def _close() -> None:
    try:
        _shared.chromium.close()
        _shared.playwright.stop()
    finally:
        _shared.chromium = _shared.playwright = None
        if _shared.unsafe is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = _shared.unsafe


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Once a test's fixtures are undone, close the browser unless the next test uses it."""
    try:
        return (yield)
    finally:
        if _shared.chromium is not None and not _uses_browser(nextitem):
            _close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A browser still open (the run stopped early) is closed with the session."""
    if _shared.chromium is not None:
        _close()


def axe_in(context: Any) -> None:
    """Give every document that ``context`` (a browser context or a page) opens from now on
    axe-core, run before the document's own scripts.

    Added once as an init script, not as a script tag on each page: a page's policy never sees
    it (pages are checked under the Content-Security-Policy they are served with), and the
    browser compiles its 0.5 MB once instead of receiving and compiling it again on every page
    (the 36 pages of the site's check took 38.7 s of the machine's CPU with a tag each, 28.8 s
    so).
    """
    require_part(f"npm's axe-core ({AXE})", AXE.exists(), "make test-deps installs it with npm")
    context.add_init_script(path=str(AXE))


def serious_violations(page: Any) -> list[str]:
    """Run axe-core on ``page`` (given it by :func:`axe_in`); return its serious and critical
    violations, each as its rule, impact, help and first three elements."""
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:3]]}"
        for v in result["violations"]
        if v["impact"] in SERIOUS
    ]
