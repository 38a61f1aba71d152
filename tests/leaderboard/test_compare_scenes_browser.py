"""/compare/'s scene-by-scene table in a real browser: one row per scene with both models'
mean AVG, who wins it, and each level's side-by-side link; on a phone it scrolls in its frame."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from leaderboard.models import Episode, Run
from tests.leaderboard.factories import import_run, make_bundle
from tests.leaderboard.test_site_browser import DESKTOP, PHONE, STICKING_OUT

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS = os.environ.get("MIRRORBENCH_SHOTS")
"""A folder to keep the screenshots in (for a person to look at), when set."""
SCENES = "male_0-mano_white-splash,tienkung-shadow_hand-logo_0"


@pytest.fixture
def compare_url(live_server, tmp_path, settings) -> str:
    settings.MEDIA_ROOT = tmp_path / "media"
    for name, agent in (("Oracle", "oracle"), ("Chest", "chest")):
        bundle = make_bundle(tmp_path / f"{name}.jsonl", agent, scenes=SCENES, image_size=32)
        Run.objects.filter(pk=import_run(bundle, name, kind="baseline").pk).update(listed=True)
    return f"{live_server.url}/compare/?m=oracle&m=chest"


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_each_scene_is_a_row_with_both_scores_and_its_side_by_side_links(
    browser, compare_url, viewport
):
    context = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(compare_url)
    page.locator("details.pair-scenes summary").click()
    table = page.locator("table.scene-table")
    headers = table.locator("thead th").all_inner_texts()
    assert headers == ["Scene", "Oracle", "Chest", "Result", "Side by side"]
    rows = table.locator("tbody tr")
    assert rows.count() == 2
    first = rows.first.locator("td").all_inner_texts()
    assert first[0] == "1.000" and first[2] in {"win", "tie"}
    links = rows.first.locator("td.levels a")
    assert links.all_inner_texts() == ["L0", "L1", "L2", "L3"]
    a, b = (int(v) for v in _pair(links.first.get_attribute("href")))
    assert Episode.objects.get(pk=a).run.model_entry.name == "Oracle"
    assert Episode.objects.get(pk=b).run.model_entry.name == "Chest"
    assert page.evaluate(STICKING_OUT) == []
    if SHOTS:
        table.scroll_into_view_if_needed()
        page.screenshot(
            path=str(Path(SHOTS) / f"compare-scenes-{viewport['width']}.png"), full_page=True
        )
    context.close()


def _pair(href: str) -> tuple[str, str]:
    query = dict(part.split("=") for part in href.split("?", 1)[1].split("&"))
    return query["a"], query["b"]
