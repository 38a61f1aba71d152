"""The search page in a real browser: a query typed and sent, its results on a desktop and a
phone (nothing sticking out, markup in an answer shown as text), a bad query's message."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.leaderboard.search_corpus import corpus_build
from tests.leaderboard.test_site_browser import DESKTOP, PHONE, STICKING_OUT

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS = os.environ.get("MIRRORBENCH_SHOTS")
"""A folder to keep the screenshots in (for a person to look at), when set."""


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_search_typed_in_the_box_lists_its_steps_on_any_screen(browser, live_server, viewport):
    steps = corpus_build()
    context = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{live_server.url}/search/")
    page.get_by_label("Words").fill("mirr* hand")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url("**/search/?q=mirr*")
    hits = page.locator(".search-hit")
    assert hits.count() == 2
    assert hits.locator("mark").all_inner_texts() == ["mirrored", "hand", "hand", "mirror"]
    assert "<script>alert('x')</script>" in hits.first.inner_text()
    assert page.locator(".search-hit img").count() == 1
    assert page.locator(".frame-placeholder").count() == 1
    link = hits.first.locator(".search-where a")
    assert link.get_attribute("href") == f"/episodes/{steps['markup'].episode_id}/?step=0"
    assert page.evaluate(STICKING_OUT) == []
    if SHOTS:
        name = f"search-{viewport['width']}.png"
        page.screenshot(path=str(Path(SHOTS) / name), full_page=True)
    page.get_by_label("Words").fill('"unclosed')
    page.get_by_role("button", name="Search").click()
    assert "a quote is not closed" in page.get_by_role("alert").inner_text()
    assert page.evaluate(STICKING_OUT) == []
    context.close()


def test_a_run_page_searches_its_own_answers(browser, live_server):
    steps = corpus_build()
    run = steps["turn"].episode.run
    context = browser.new_context(viewport=PHONE, is_mobile=True)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    page.get_by_label("Search answers").fill("mirr*")
    assert page.evaluate(STICKING_OUT) == []
    if SHOTS:
        page.locator("form.run-search").screenshot(path=str(Path(SHOTS) / "run-search-390.png"))
    page.get_by_role("button", name="Search", exact=True).last.click()
    page.wait_for_url(f"**/search/?run={run.pk}&q=mirr*")
    assert page.locator(".search-hit").count() == 2  # this run's two steps, not Alpha's
    assert page.get_by_role("heading", level=1).inner_text() == f"Search responses of run {run.pk}"
    context.close()
