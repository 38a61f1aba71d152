"""The board's metadata filters in chromium: a plain GET form that works without JavaScript, on
a desktop and on a phone, whose downloads follow the filters; the model page's facts."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from leaderboard.boards.entries import model_entry_upsert
from leaderboard.models import ModelEntry
from leaderboard.runs.imports import reference_results_load
from tests.leaderboard.test_site_browser import DESKTOP, PHONE, _sticking_out
from tests.parts import DEV_EXTRA, import_part

sync_api = import_part("playwright.sync_api", "Playwright", DEV_EXTRA)
pytestmark = [pytest.mark.django_db(transaction=True)]
expect = sync_api.expect

FACTS = {
    "GLM-4.5V-106B": {"release_date": "2025-08-11", "reasoning": "high", "licence": "MIT"},
    "Gemini-2.5-Pro-API": {
        "release_date": "2025-06-17",
        "reasoning": "on",
        "licence": "proprietary",
    },
    "Qwen2.5-VL-72B": {"release_date": "2025-01-28", "licence": "Qwen"},
}


@pytest.fixture
def site(live_server) -> str:
    """The paper's rows, with test facts on three of them (the paper states none of these)."""
    reference_results_load()
    for entry in ModelEntry.objects.filter(name__in=FACTS):
        model_entry_upsert(
            name=entry.name,
            kind=entry.kind,
            organisation=entry.organisation,
            params_b=entry.params_b,
            metadata=FACTS[entry.name],
        )
    return live_server.url


def _models(page) -> list[str]:
    return page.locator("table.board tbody th.model-col a").all_inner_texts()


def _query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def test_without_javascript_the_filters_are_a_plain_form_and_the_downloads_follow(
    browser, site, tmp_path
):
    context = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(site + "/")
    page.get_by_label("Organisation").fill("zhipu ai")
    page.get_by_label("High effort").check()
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r"organisation="))
    assert _query(page.url) == {
        "organisation": ["zhipu ai"],
        "reasoning": ["high"],
        # Without the script, empty fields travel too; the server ignores them.
        **{k: v for k, v in _query(page.url).items() if k not in ("organisation", "reasoning")},
    }
    assert _models(page) == ["GLM-4.5V-106B"]
    expect(page.get_by_label("High effort")).to_be_checked()
    expect(page.get_by_label("Organisation")).to_have_value("zhipu ai")
    for cls, path in (
        ("download", "/leaderboard/overall.csv"),
        ("download-parquet", "/leaderboard/overall.parquet"),
        ("download-json", "/leaderboard/overall.json"),
    ):
        href = page.locator(f"a.{cls}").get_attribute("href")
        assert urlsplit(href).path == path
        # The links carry the validated filters only, in their shortest form.
        assert _query(href) == {"organisation": ["zhipu ai"], "reasoning": ["high"]}
    rows = page.request.get(site + page.locator("a.download-json").get_attribute("href")).json()
    assert [row["model"] for row in rows["rows"]] == ["GLM-4.5V-106B"]
    page.locator("details.filter-panel").screenshot(path=str(tmp_path / "filters-1366.png"))
    context.close()


def test_on_a_phone_the_filters_fit_and_a_date_and_a_tick_apply(browser, site, tmp_path):
    context = browser.new_context(viewport=PHONE, is_mobile=True)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(site + "/")
    page.locator("details.filter-panel > summary").click()
    page.locator('input[name="released_from"]').fill("2025-06-01")
    page.get_by_label("Plain model").check()  # a tick applies at once, the date with it
    page.wait_for_url(re.compile(r"scaffold=model"))
    assert _query(page.url) == {"released_from": ["2025-06-01"], "scaffold": ["model"]}
    assert _models(page) == ["Gemini-2.5-Pro-API", "GLM-4.5V-106B"]
    expect(page.locator("details.filter-panel summary .badge")).to_have_text("2 active")
    page.locator("details.filter-panel > summary").click()
    assert _sticking_out(page) == []
    page.screenshot(path=str(tmp_path / "filters-390.png"), full_page=True)
    page.goto(site + "/models/glm-45v-106b/")
    expect(page.locator("dl.model-facts")).to_contain_text("MIT")
    assert _sticking_out(page) == []
    page.screenshot(path=str(tmp_path / "model-390.png"))
    page.set_viewport_size(DESKTOP)
    page.screenshot(path=str(tmp_path / "model-1366.png"))
    page.locator("dl.model-facts").get_by_role("link", name="MIT").click()
    page.wait_for_url(re.compile(r"licence=MIT"))
    assert _models(page) == ["GLM-4.5V-106B"]
    context.close()
