"""The exported replay in a real browser, opened from disk with every network request blocked:
it plays from what the file holds, with the keys, and shows a response's markup as text."""

from __future__ import annotations

import json
import re

import pytest

from leaderboard.models import Episode
from tests.leaderboard.browser import axe_in, serious_violations
from tests.leaderboard.factories import import_run, make_bundle
from tests.parts import DEV_EXTRA, import_part

sync_api = import_part("playwright.sync_api", "Playwright", DEV_EXTRA)

pytestmark = pytest.mark.django_db
expect = sync_api.expect
SIZE = 32
SCENE = "male_0-mano_white-splash"
HOSTILE = [
    "<script>document.title = 'pwned'</script> Backward. Choice: [6]",
    "<img src=x onerror=\"document.title='pwned'\"> Up. Choice: [1]",
    "Choice: [3]",
]


@pytest.fixture
def exported(client, tmp_path, settings):
    """The export of a scripted episode whose answers hold markup, saved to a file."""
    settings.MEDIA_ROOT = tmp_path / "media"
    script = tmp_path / "hostile.json"
    script.write_text(json.dumps(HOSTILE))
    bundle = make_bundle(
        tmp_path / "b.jsonl", f"scripted:{script}", scenes=SCENE, levels=(0,), image_size=SIZE
    )
    run = import_run(bundle, "Hostile script", kind="baseline")
    episode = Episode.objects.get(run=run)
    response = client.get(f"/episodes/{episode.pk}/export.html")
    assert response.status_code == 200
    path = tmp_path / "replay.html"
    path.write_bytes(response.content)
    return path, episode.steps.count()


def test_the_exported_file_plays_from_disk_with_the_network_blocked(page, exported):
    path, steps = exported
    asked: list[str] = []

    def block(route):
        if route.request.url != path.as_uri():
            asked.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    def seen(request):
        if request.url != path.as_uri() and not request.url.startswith("data:"):
            asked.append(request.url)

    page.context.route("**/*", block)
    page.context.set_offline(True)
    page.on("request", seen)
    page.goto(path.as_uri())
    title = page.title()
    frame = page.locator("img.frame")
    position = page.locator('[data-field="position"]')
    expect(position).to_have_text("0")
    first = frame.get_attribute("src")
    assert first.startswith("data:image/webp;base64,")
    assert page.evaluate("document.querySelector('img.frame').naturalWidth") == SIZE

    # Each answer's markup is text on the page, never an element.
    response = page.locator('[data-field="response"]')
    expect(response).to_have_text(HOSTILE[0])
    assert page.locator('[data-field="response"] *').count() == 0
    expect(page.locator('[data-field="option"]')).to_contain_text("option 6")
    page.keyboard.press("ArrowRight")
    expect(position).to_have_text("1")
    assert page.url.endswith("#step=1")
    assert frame.get_attribute("src") != first
    expect(response).to_have_text(HOSTILE[1])
    assert page.locator('[data-field="response"] *').count() == 0
    expect(page.locator('[data-field="option"]')).to_contain_text("option 1")

    page.keyboard.press("End")
    expect(position).to_have_text(str(steps))
    expect(page.locator('[data-field="executed"]')).to_have_text("the episode has ended")
    page.keyboard.press("Home")
    expect(position).to_have_text("0")
    assert frame.get_attribute("src") == first
    page.keyboard.press("ArrowLeft")
    expect(position).to_have_text("0")

    page.locator('[data-field="speed"]').select_option("200")
    page.keyboard.press("Space")
    expect(page.locator('[data-action="play"]')).to_have_text("Pause")
    expect(position).not_to_have_text("0")
    page.keyboard.press("Space")
    expect(page.locator('[data-action="play"]')).to_have_text("Play")

    page.locator("circle.point[data-step='2']").click()
    expect(position).to_have_text("2")
    page.reload()
    expect(position).to_have_text("2")  # the address kept the view
    assert page.title() == title and "pwned" not in title
    assert asked == []


def test_the_exported_file_fits_a_phone(page, exported):
    path, _ = exported
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(path.as_uri())
    wide = page.evaluate("document.documentElement.scrollWidth")
    assert wide <= 390
    assert re.match(r"data:image/webp", page.locator("img.frame").get_attribute("src"))


def test_the_exported_file_has_no_serious_accessibility_violation(page, exported):
    path, _ = exported
    axe_in(page)
    found = {}
    for width in (1366, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(path.as_uri())
        found[width] = serious_violations(page)
    assert found == {1366: [], 390: []}
