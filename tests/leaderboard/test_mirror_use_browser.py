"""The mirror-use page in a real browser: desktop and phone, nothing sticking out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evaluation.bundle import read_bundle
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.models import ModelEntry
from leaderboard.runs.imports import run_import_bundle
from tests.leaderboard.factories import make_bundle
from tests.leaderboard.test_site_browser import DESKTOP, PHONE, STICKING_OUT

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS = os.environ.get("MIRRORBENCH_SHOTS")
"""A folder to keep the screenshots in (for a person to look at), when set."""


@pytest.fixture
def site(live_server, tmp_path):
    for name, kind in (("Chest habit", ModelEntry.Kind.OPEN_WEIGHTS), ("Chest", "baseline")):
        entry = model_entry_upsert(name=name, kind=kind)
        for condition in ("main", "no-mirror", "moved-mark"):
            path = make_bundle(
                tmp_path / f"{name}-{condition}.jsonl", "chest", scenes="robot", condition=condition
            )
            run_import_bundle(model_entry=entry, bundle=read_bundle(path))
    return live_server.url


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_mirror_use_page_fits_the_screen(browser, site, viewport):
    context = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE)
    page = context.new_page()
    page.goto(f"{site}/mirror-use/")
    page.wait_for_load_state("load")
    assert page.locator("table.mirror-use tbody").count() == 2
    assert page.locator("tbody.reference").count() == 1
    assert page.evaluate(STICKING_OUT) == []
    if SHOTS:
        page.screenshot(
            path=str(Path(SHOTS) / f"mirror-use-{viewport['width']}.png"), full_page=True
        )
    context.close()
