"""Playing an episode in a real browser: the keys, the server's checks, a stored episode."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from django.conf import settings as django_settings
from django.test import Client

from leaderboard.models import Episode, Play
from leaderboard.play.selectors import human_set_bundle
from tests.leaderboard.test_play import SCENE, optimal_options
from tests.parts import DEV_EXTRA, import_part

sync_api = import_part("playwright.sync_api", "Playwright", DEV_EXTRA)

pytestmark = [
    pytest.mark.django_db(transaction=True),
]
expect = sync_api.expect
SIZE = 32

WRONG_STEP = """async ([url, index]) => {
  const data = JSON.parse(document.getElementById("play-data").textContent);
  const response = await fetch(url, {
    method: "POST",
    headers: {"X-CSRFToken": data.csrf, "Content-Type": "application/x-www-form-urlencoded"},
    body: "index=" + index + "&option=1",
  });
  return [response.status, (await response.json()).error];
}"""


@pytest.fixture(autouse=True)
def _small_frames(settings, tmp_path):
    settings.MIRRORBENCH_PLAY_IMAGE_SIZE = SIZE
    settings.MEDIA_ROOT = tmp_path / "media"


def sign_in(page, live_server, user) -> None:
    client = Client()
    client.force_login(user)
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    page.context.add_cookies(
        [{"name": django_settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}]
    )


def test_a_scripted_player_reaches_the_mark_and_the_stored_episode_verifies(
    live_server, page, alice, tmp_path
):
    sign_in(page, live_server, alice)
    page.goto(f"{live_server.url}/play/")
    page.locator("select[name=level]").select_option("0")
    page.locator("select[name=scene]").select_option(SCENE)
    page.get_by_role("button", name="Start an episode").click()
    root = page.locator("[data-play]")
    expect(root).to_have_attribute("data-index", "0")
    box = page.locator(".play-current .frame-box")
    expect(box).to_have_attribute("data-state", "ready")
    expect(page.locator('[data-field="previous-none"]')).to_be_visible()
    for step, option in enumerate(optimal_options(SCENE), 1):
        page.keyboard.press(str(option))
        expect(root).to_have_attribute("data-steps", str(step))  # set once the frame is shown
        expect(box).to_have_attribute("data-state", "ready")
    expect(root).to_have_attribute("data-done", "true")
    expect(page.locator('[data-field="outcome"]')).to_have_text("You reached the mark in 9 steps.")
    expect(page.locator('[data-field="history"]')).to_contain_text("9. Option 2, move down")
    expect(page.locator("[data-option]").first).to_be_disabled()
    assert int(root.get_attribute("data-last-step-ms")) > 0

    episode = Episode.objects.select_related("scene", "run").get()
    assert (episode.status, episode.success, episode.steps_taken) == ("completed", True, 9)
    assert page.url.endswith(f"?episode=e{episode.pk}")
    records, missing = human_set_bundle(run=episode.run, episode=episode)
    path = tmp_path / "human.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    verified = subprocess.run(
        [sys.executable, "-m", "evaluation.cli", "verify", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (missing, verified.returncode) == ([], 0), verified.stdout + verified.stderr

    status, error = page.evaluate(WRONG_STEP, [f"/play/e{episode.pk}/answer/", 9])
    assert status == 409 and error.startswith("this episode has ended after 9 steps")

    page.get_by_role("button", name="Play another episode").click()
    expect(root).to_have_attribute("data-done", "false")
    expect(root).to_have_attribute("data-index", "0")
    ref = root.get_attribute("data-ref")
    status, error = page.evaluate(WRONG_STEP, [f"/play/{ref}/answer/", 3])
    assert (
        status == 409
        and error == "step 3 is not the current step, 0: answer the current step first"
    )
    assert ref.startswith("p")  # the same scene and level again: practice, not stored
    assert Play.objects.get(pk=ref[1:]).steps_taken == 0


def test_an_anonymous_player_is_told_when_another_tab_moved_on(live_server, page):
    page.goto(f"{live_server.url}/play/")
    page.get_by_role("button", name="Start an episode").click()
    root = page.locator("[data-play]")
    expect(root).to_have_attribute("data-index", "0")
    ref = root.get_attribute("data-ref")
    assert ref.startswith("p")
    other = page.context.new_page()  # the same visitor in a second tab, on the same episode
    other.goto(page.url)
    expect(other.locator("[data-play]")).to_have_attribute("data-ref", ref)
    other.keyboard.press("6")
    expect(other.locator("[data-play]")).to_have_attribute("data-index", "1")
    page.keyboard.press("5")  # this tab still shows step 0
    expect(page.locator('[data-field="message"]')).to_contain_text(
        "step 0 is not the current step, 1: it was answered already"
    )
    expect(root).to_have_attribute("data-index", "1")  # it caught up with the episode
    expect(page.locator('[data-field="history"]')).to_contain_text("1. Option 6")


def test_on_a_phone_the_image_and_all_six_moves_fit_one_screen(browser, live_server):
    phone = {"width": 390, "height": 844}
    context = browser.new_context(viewport=phone, is_mobile=True)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{live_server.url}/play/")
    page.get_by_role("button", name="Start an episode").click()
    expect(page.locator(".play-current .frame-box")).to_have_attribute("data-state", "ready")
    # The page scrolls the episode into view as it starts: nothing more to scroll.
    image = page.locator(".play-current img.frame").bounding_box()
    moves = [b.bounding_box() for b in page.locator("[data-option]").all()]
    assert len(moves) == 6
    for box in [image, *moves]:
        assert box["y"] >= 0 and box["y"] + box["height"] <= phone["height"], box
        assert box["x"] + box["width"] <= phone["width"], box
    assert image["width"] >= 300  # still the width of the screen, less the margins
    context.close()
