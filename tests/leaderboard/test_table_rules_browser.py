"""Tables as a reader lines them up, in chromium: a model's badges on one line on a wide
screen, and the rules of a two-row heading between its column groups."""

from __future__ import annotations

import re

import pytest

from leaderboard.models import ModelEntry
from leaderboard.runs.imports import reference_results_load
from tests.leaderboard.factories import import_run, make_bundle
from tests.parts import DEV_EXTRA, import_part

sync_api = import_part("playwright.sync_api", "Playwright", DEV_EXTRA)
pytestmark = [pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}

ROW_HEIGHTS = """() => [...document.querySelectorAll("table.board tbody tr:not(.reference)")]
  .map((row) => Math.round(row.getBoundingClientRect().height))"""
OVERFLOW = """() => [...document.querySelectorAll(".table-wrap")]
  .map((wrap) => wrap.scrollWidth - wrap.clientWidth)"""


def _page(browser, viewport):
    context = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.route(re.compile(r"/frames/"), lambda route: route.abort())
    return page


@pytest.fixture(scope="module")
def behaviour_bundle(tmp_path_factory):
    """A random agent's run of one human and one robot scene at level 0."""
    return make_bundle(
        tmp_path_factory.mktemp("rules") / "rules.jsonl",
        "random",
        scenes="male_0-mano_white-splash,GR1_T2-allegro-logo_0",
        levels=(0,),
        image_size=32,
    )


def test_on_a_wide_screen_every_models_badges_hold_one_line(browser, live_server):
    reference_results_load()
    page = _page(browser, DESKTOP)
    for query in ("", "?ci=show"):
        page.goto(f"{live_server.url}/{query}", wait_until="load")
        # Kind, parameters and "reported" on one line: every ranked row is as tall as the next.
        heights = page.evaluate(ROW_HEIGHTS)
        assert len(heights) > 10 and len(set(heights)) == 1, heights
        assert page.evaluate(OVERFLOW) == [0]  # and the CS column is still on the screen
    page.context.close()
    phone = _page(browser, PHONE)
    phone.goto(live_server.url + "/", wait_until="load")
    badges = phone.locator("table.board tbody tr:not(.reference) .meta").first
    assert badges.evaluate("(el) => getComputedStyle(el).flexWrap") == "wrap"
    phone.context.close()


def test_the_run_pages_behaviour_table_rules_its_column_groups(
    browser, live_server, behaviour_bundle
):
    run = import_run(behaviour_bundle, "Random", kind=ModelEntry.Kind.BASELINE)
    for viewport in (DESKTOP, PHONE):
        page = _page(browser, viewport)
        page.goto(f"{live_server.url}/runs/{run.pk}/", wait_until="load")
        table = page.locator("section.behaviour table")
        heading = table.locator("thead tr").nth(1).locator("th")
        # Each group's rule before its first column (Confusion), none inside the group.
        lefts = heading.evaluate_all(
            "(cells) => cells.map((c) => parseFloat(getComputedStyle(c).borderLeftWidth))"
        )
        assert lefts == [2, 0, 0] * 3
        first = heading.first
        assert first.evaluate("(c) => getComputedStyle(c).boxShadow") == "none"
        assert first.evaluate("(c) => getComputedStyle(c).left") == "auto"  # no sticking sideways
        row = table.locator("tbody tr").first.locator("td")
        assert (
            row.evaluate_all(
                "(cells) => cells.map((c) => parseFloat(getComputedStyle(c).borderLeftWidth))"
            )
            == [2, 0, 0] * 3
        )
        # The row headings keep their sticky column and its line.
        level = table.locator("thead tr").first.locator("th").first
        assert level.evaluate("(c) => getComputedStyle(c).left") == "0px"
        page.context.close()
