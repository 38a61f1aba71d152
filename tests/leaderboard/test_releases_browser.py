"""The releases page in chromium: on a phone nothing sticks out, and a release's files open."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db.models import F

from leaderboard.models import ModelEntry, Run
from tests.leaderboard.factories import import_run
from tests.leaderboard.test_site_browser import DESKTOP, PHONE, STICKING_OUT
from tests.parts import DEV_EXTRA, import_part

sync_api = import_part("playwright.sync_api", "Playwright", DEV_EXTRA)
pytestmark = [pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("MIRRORBENCH_SCREENSHOTS", "")
"""A folder to keep the pages' screenshots in (for a person to look at); none when unset."""


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_releases_page_fits_and_opens_a_releases_files(
    live_server, bundles, browser, settings, tmp_path, viewport
):
    settings.MEDIA_ROOT = tmp_path / "media"
    run = import_run(bundles["random"], "Random", kind=ModelEntry.Kind.BASELINE)
    Run.objects.filter(pk=run.pk).update(listed=True, finished=F("created"))
    call_command("release", "1.0", "--note", "First public snapshot.", stdout=io.StringIO())
    context = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{live_server.url}/releases/")
    page.wait_for_load_state("load")
    assert page.evaluate(STICKING_OUT) == []
    page.locator("summary", has_text="Every file").click()
    link = page.get_by_role("link", name="tables/overall.csv")
    sync_api.expect(link).to_be_visible()
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"releases-{viewport['width']}.png"), full_page=True)
    assert page.evaluate(STICKING_OUT) == []
    context.close()
