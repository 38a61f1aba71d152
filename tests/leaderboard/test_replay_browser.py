"""The replay in a real browser: keys, the address, the frame, the chart's marker, fill-in."""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from leaderboard.models import Episode, Frame
from tests.leaderboard.factories import import_run, make_bundle
from tests.parts import DEV_EXTRA, import_part

sync_api = import_part("playwright.sync_api", "Playwright", DEV_EXTRA)

pytestmark = [
    pytest.mark.django_db(transaction=True),
]
expect = sync_api.expect
SIZE = 32


@pytest.fixture
def episode(live_server, tmp_path, settings) -> Episode:
    """A random-agent episode of a baseline run whose frames were never rendered."""
    settings.MEDIA_ROOT = tmp_path / "media"
    bundle = make_bundle(
        tmp_path / "b.jsonl",
        "random",
        scenes="male_0-mano_white-splash",
        levels=(1,),
        image_size=SIZE,
    )
    run = import_run(bundle, "Random replay", kind="baseline")
    return Episode.objects.select_related("scene").get(run=run)


def _step(page) -> int:
    return int(parse_qs(urlsplit(page.url).query)["step"][0])


def test_stepping_through_a_replay_with_the_keys(live_server, page, episode):
    assert not Frame.objects.filter(stored__isnull=False).exists()
    page.goto(f"{live_server.url}/episodes/{episode.pk}/")
    box = page.locator(".frame-box")
    expect(box).to_have_attribute("data-state", "ready")  # rendered on request, then shown
    frame = page.locator("img.frame")
    marker = page.locator("circle.marker")
    first_src, first_x = frame.get_attribute("src"), marker.get_attribute("cx")

    page.keyboard.press("ArrowRight")
    expect(page).to_have_url(re.compile(r"\?step=1$"))
    expect(box).to_have_attribute("data-state", "ready")
    assert frame.get_attribute("src") != first_src
    assert marker.get_attribute("cx") != first_x
    expect(page.locator('[data-field="position"]')).to_have_text("1")

    page.keyboard.press("End")
    expect(page).to_have_url(re.compile(rf"\?step={episode.steps_taken}$"))
    expect(page.locator('[data-field="executed"]')).to_have_text("the episode has ended")
    page.keyboard.press("Home")
    expect(page).to_have_url(re.compile(r"\?step=0$"))
    assert marker.get_attribute("cx") == first_x

    page.locator('[data-field="speed"]').select_option("200")
    page.keyboard.press("Space")
    expect(page.locator('[data-action="play"]')).to_have_text("Pause")
    page.wait_for_function("() => Number(new URLSearchParams(location.search).get('step')) >= 2")
    page.keyboard.press("Space")
    expect(page.locator('[data-action="play"]')).to_have_text("Play")

    page.locator("circle.point[data-step='3']").click()
    assert _step(page) == 3
    # The frames the viewer asked for (and preloaded) are rendered and kept; the last request
    # may still be rendering when the click lands.
    deadline = time.monotonic() + 30
    while Frame.objects.filter(stored__isnull=False).count() < 4:
        assert time.monotonic() < deadline, "the frames the viewer asked for were not stored"
        time.sleep(0.1)


def test_a_shared_address_opens_its_step(live_server, page, episode):
    page.goto(f"{live_server.url}/episodes/{episode.pk}/?step=2")
    expect(page.locator('[data-field="position"]')).to_have_text("2")
    expect(page.locator(".frame-box")).to_have_attribute("data-state", "ready")
    points = page.locator("circle.point")
    assert points.count() == episode.steps_taken + 1
    marker_x = page.locator("circle.marker").get_attribute("cx")
    assert marker_x == points.nth(2).get_attribute("cx")
