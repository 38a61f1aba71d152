"""A run page whose thumbnails are not rendered yet, in chromium: the page loads at once with
placeholders, then puts each frame in as the server renders it."""

from __future__ import annotations

import re

import pytest

from leaderboard.models import Frame, ModelEntry
from tests.leaderboard.factories import import_run, make_bundle
from tests.parts import DEV_EXTRA, import_part

sync_api = import_part("playwright.sync_api", "Playwright", DEV_EXTRA)
pytestmark = [pytest.mark.django_db(transaction=True)]
expect = sync_api.expect

SIZE = 32
FRAMES = re.compile(r"/frames/[0-9a-f]{40}\.thumb\.webp$")


@pytest.fixture(autouse=True)
def _own_frame_store(settings, tmp_path):
    """Frames of its own: under pytest-xdist another test of this worker may have stored one of
    these 32 px frames, which registering then finds stored."""
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture(scope="module")
def small_bundle(tmp_path_factory):
    """A random agent's run of two scenes at two levels, with 32-pixel frames."""
    return make_bundle(
        tmp_path_factory.mktemp("frames") / "small.jsonl",
        "random",
        scenes="male_0-mano_white-splash,GR1_T2-allegro-logo_0",
        levels=(0, 3),
        image_size=SIZE,
    )


def test_a_run_page_loads_before_its_thumbnails_and_fills_them_as_they_arrive(
    browser, live_server, small_bundle
):
    run = import_run(small_bundle, "Random small", kind=ModelEntry.Kind.BASELINE)
    assert not Frame.objects.filter(stored__isnull=False).exists()
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    held: list = []
    # The server renders nothing until the test lets it: the page must load all the same.
    page.route(FRAMES, lambda route: held.append(route))
    page.goto(f"{live_server.url}/runs/{run.pk}/", wait_until="load")
    images = page.locator("li.episode-card img")
    expect(images).to_have_count(4)
    expect(page.locator("li.episode-card img[data-frame]")).to_have_count(4)
    assert all(
        "frame-pending" in (src or "") for src in images.evaluate_all("(i) => i.map((e) => e.src)")
    )
    # Asked for after the load, four at a time.
    page.wait_for_timeout(300)
    assert len(held) == 4
    for route in held:
        route.continue_()
    page.unroute(FRAMES)
    expect(page.locator("li.episode-card img[data-frame]")).to_have_count(0, timeout=30_000)
    widths = images.evaluate_all("(i) => i.map((e) => [e.src.slice(0, 5), e.naturalWidth])")
    assert widths == [["blob:", SIZE]] * 4
    assert Frame.objects.filter(stored__isnull=False).count() == 4
    # Stored now: the next visit shows the frames themselves.
    page.reload(wait_until="load")
    expect(page.locator("li.episode-card img[data-frame]")).to_have_count(0)
    expect(page.locator('li.episode-card img[src*="/frames/"]')).to_have_count(4)
    context.close()


def test_a_frame_the_server_cannot_make_stays_a_marked_placeholder_and_a_busy_one_is_asked_again(
    browser, live_server, small_bundle
):
    run = import_run(small_bundle, "Random small", kind=ModelEntry.Kind.BASELINE)
    Frame.objects.update(stored=None)  # the files another test stored are not known here
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    page.set_default_timeout(10_000)
    asked: dict[str, int] = {}

    def answer(route):
        url = route.request.url
        asked[url] = asked.get(url, 0) + 1
        if len(asked) == 1:  # the first frame: gone for good
            route.fulfill(status=404, body="no such frame")
        elif asked[url] == 1:  # the others: busy once, then served
            route.fulfill(status=503, headers={"Retry-After": "1"}, body="busy")
        else:
            route.continue_()

    page.route(FRAMES, answer)
    page.goto(f"{live_server.url}/runs/{run.pk}/", wait_until="load")
    expect(page.locator("li.episode-card img.frame-missing")).to_have_count(1, timeout=30_000)
    expect(page.locator("li.episode-card img[data-filled]")).to_have_count(3, timeout=30_000)
    assert sorted(asked.values()) == [1, 2, 2, 2]
    context.close()
