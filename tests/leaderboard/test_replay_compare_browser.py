"""Two replays side by side in a real browser: the keys move both, the first different move is
marked, and a phone stacks them."""

from __future__ import annotations

import json
import re

import pytest

from leaderboard.models import Episode, Run
from tests.leaderboard.browser import axe_in, serious_violations
from tests.leaderboard.factories import import_run, make_bundle
from tests.parts import DEV_EXTRA, import_part

sync_api = import_part("playwright.sync_api", "Playwright", DEV_EXTRA)

pytestmark = [pytest.mark.django_db(transaction=True)]
expect = sync_api.expect
SIZE = 32
SCENE = "male_0-mano_white-splash"


def _scripted(tmp_path, name: str, answers: list[str]) -> Episode:
    script = tmp_path / f"{name}.json"
    script.write_text(json.dumps(answers))
    bundle = make_bundle(
        tmp_path / f"{name}.jsonl", f"scripted:{script}", scenes=SCENE, levels=(1,), image_size=SIZE
    )
    return Episode.objects.get(run=import_run(bundle, name, kind="baseline"))


@pytest.fixture
def address(live_server, tmp_path, settings) -> str:
    settings.MEDIA_ROOT = tmp_path / "media"
    a = _scripted(tmp_path, "Left first", ["Choice: [6]", "Choice: [6]", "Choice: [3]"])
    b = _scripted(tmp_path, "Right first", ["Choice: [6]", "Choice: [6]", "Choice: [4]"])
    return f"{live_server.url}/episodes/compare/?a={a.pk}&b={b.pk}"


def test_the_keys_step_both_replays_and_the_first_difference_is_marked(page, address):
    page.goto(address)
    sides = [page.locator(f'section[data-side="{side}"]') for side in ("a", "b")]
    for side in sides:
        expect(side.locator(".frame-box")).to_have_attribute("data-state", "ready")
    flag = page.locator('[data-field="difference"]')
    expect(flag).to_be_hidden()
    first = [side.locator("img.frame").get_attribute("src") for side in sides]

    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    expect(page).to_have_url(re.compile(r"step=2$"))
    for side, src in zip(sides, first, strict=True):
        expect(side.locator('[data-field="position"]')).to_have_text("2")
        expect(side.locator(".frame-box")).to_have_attribute("data-state", "ready")
        assert side.locator("img.frame").get_attribute("src") != src
    expect(flag).to_be_visible()
    expect(page.locator("[data-compare]")).to_have_class(re.compile("at-difference"))
    expect(sides[0].locator('[data-field="option"]')).to_contain_text("option 3")
    expect(sides[1].locator('[data-field="option"]')).to_contain_text("option 4")

    page.keyboard.press("ArrowRight")
    expect(flag).to_be_hidden()
    page.keyboard.press("Home")
    expect(page).to_have_url(re.compile(r"step=0$"))
    page.locator('[data-action="difference"]').click()
    expect(page).to_have_url(re.compile(r"step=2$"))
    expect(flag).to_be_visible()
    page.keyboard.press("End")
    for side in sides:
        expect(side.locator('[data-field="executed"]')).to_have_text("the episode has ended")


def test_on_a_phone_the_two_replays_are_stacked(page, address):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(address)
    a = page.locator('section[data-side="a"]').bounding_box()
    b = page.locator('section[data-side="b"]').bounding_box()
    assert b["y"] >= a["y"] + a["height"] - 1
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_the_side_by_side_page_and_its_picker_have_no_serious_accessibility_violation(
    browser, address
):
    Run.objects.update(listed=True)  # so that each replay offers the other
    other = Episode.objects.order_by("pk").first()
    found = {}
    for width in (1366, 390):
        context = browser.new_context(viewport={"width": width, "height": 900})
        axe_in(context)
        page = context.new_page()
        for url in (address, address.split("/episodes/")[0] + f"/episodes/{other.pk}/"):
            page.goto(url, wait_until="domcontentloaded")
            found[(width, url)] = serious_violations(page)
        context.close()
    assert {k: v for k, v in found.items() if v} == {}
