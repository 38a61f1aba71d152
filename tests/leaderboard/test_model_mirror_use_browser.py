"""A model's page with control runs and process metrics, and the evaluate form with several
conditions, in a real browser: desktop and phone, nothing sticking out (issue 36)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from evaluation.bundle import read_bundle
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.models import ModelEntry, Step
from leaderboard.runs.imports import run_import_bundle
from tests.leaderboard.factories import UserFactory, make_bundle
from tests.leaderboard.test_site_browser import DESKTOP, PHONE, STICKING_OUT

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS = os.environ.get("MIRRORBENCH_SHOTS")
"""A folder to keep the screenshots in (for a person to look at), when set."""
PASSWORD = "a-long-password-42"
ANSWERS = {
    2: "I see my reflection in the mirror; the mark is on my chest, so I move backward.\nChoice: 6",
    3: "There is a mirror ahead. The mark is not visible, so I go left.\nChoice: 6",
}
"""What the main run's answers say at levels 2 and 3 (the chest baseline's answers are bare)."""


@pytest.fixture
def site(live_server, tmp_path):
    entry = model_entry_upsert(name="Chest habit", kind=ModelEntry.Kind.OPEN_WEIGHTS)
    runs = {}
    for condition in ("main", "no-mirror", "moved-mark"):
        path = make_bundle(
            tmp_path / f"{condition}.jsonl", "chest", scenes="robot", condition=condition
        )
        runs[condition] = run_import_bundle(model_entry=entry, bundle=read_bundle(path)).run
    for level, answer in ANSWERS.items():
        Step.objects.filter(episode__run=runs["main"], episode__level=level).update(response=answer)
    UserFactory(username="alice", password=PASSWORD, permissions=["leaderboard.add_run"])
    return live_server.url


def _page(browser, viewport):
    context = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.route(re.compile(r"/frames/"), lambda route: route.abort())
    return page


def _shot(page, name: str, viewport) -> None:
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"{name}-{viewport['width']}.png"), full_page=True)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_model_page_with_control_runs_fits_the_screen(browser, site, viewport):
    page = _page(browser, viewport)
    page.goto(f"{site}/models/chest-habit/")
    expect(page.locator("section.run")).to_have_count(1)
    # The control runs in the conditions' order, each with a link to its page.
    expect(page.locator("ul.control-runs li .badge")).to_have_text(["No mirror", "Moved mark"])
    expect(page.locator("table.mirror-use")).to_have_count(2)
    moved = page.locator("table.mirror-use").first.locator("thead th").last
    expect(moved).to_have_text("Main \u2212 moved mark")
    process = page.locator("table.process")
    expect(process).to_have_count(3)
    # The main run's L2: every answer names the mirror and calls it its own; L3: names it.
    l2 = process.first.locator("tbody tr").nth(2).locator("td")
    expect(l2.nth(0)).to_have_text("100%")
    expect(l2.nth(3)).to_have_text("100%")
    expect(process.first.locator("tbody tr").nth(3).locator("td").nth(3)).to_have_text("0%")
    assert page.evaluate(STICKING_OUT) == []
    _shot(page, "model-mirror-use", viewport)
    page.context.close()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_estimate_shows_each_condition_and_the_total(browser, site, viewport):
    page = _page(browser, viewport)
    page.goto(f"{site}/accounts/login/")
    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.locator("main").get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/accounts/profile/$"))
    page.goto(f"{site}/evaluate/")
    form = page.locator("form.form-card.hosted")
    expect(form.locator('input[type="checkbox"][name="conditions"]')).to_have_count(4)
    conditions = page.locator('aside.estimate [data-part="conditions"]')
    expect(conditions).to_be_hidden()
    form.locator('input[name="conditions"][value="no-mirror"]').check()
    form.locator('input[name="conditions"][value="moved-mark"]').check()
    expect(page.locator("#estimate-h")).to_have_text("What these 3 runs will cost")
    expect(conditions).to_be_visible()
    expect(conditions.locator("tbody th")).to_have_text(["Main", "No mirror", "Moved mark"])
    expect(page.locator('aside.estimate [data-field="episodes"]')).to_have_text("792")
    expect(conditions.locator("tbody tr").first.locator("td").first).to_have_text("264")
    assert page.evaluate(STICKING_OUT) == []
    _shot(page, "evaluate-conditions", viewport)
    page.context.close()
