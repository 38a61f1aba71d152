"""The leaderboard in a real browser (Debian's chromium driven by Playwright), as a visitor."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from leaderboard.runs.imports import reference_results_load
from tests.parts import DEV_EXTRA, import_part

sync_api = import_part("playwright.sync_api", "Playwright", DEV_EXTRA)
pytestmark = [
    pytest.mark.django_db(transaction=True),
]
expect = sync_api.expect


@pytest.fixture
def site(live_server) -> str:
    """The live server's address, with the paper's results loaded."""
    reference_results_load()
    return live_server.url


def board_models(page) -> list[str]:
    """Return the model names of the table's rows, top to bottom."""
    return page.locator("table.board tbody th.model-col a").all_inner_texts()


def query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def test_the_table_ranks_the_models_by_overall_avg_below_the_unranked_human_reference(page, site):
    page.goto(site + "/")
    rows = page.locator("table.board tbody tr")
    expect(rows).to_have_count(20)
    models = board_models(page)
    assert models[:2] == ["Human", "Gemini-2.5-Pro-API"]
    # The human reference leads by its scores but is a reference row: no rank, no mark.
    ranks = [" ".join(t.split()) for t in page.locator("table.board td.rank").all_inner_texts()]
    assert ranks[:3] == ["— reference, not ranked", "1", "2"]
    expect(rows.first).to_have_class(re.compile(r"\bkind-human\b.*\breference\b"))
    expect(rows.first.locator("td.first, td.second")).to_have_count(0)
    # Gemini-2.5-Pro has the highest overall AVG among the models, in bold.
    expect(rows.nth(1).locator("td.first strong").last).to_have_text("0.442")
    expect(page.locator("p.count")).to_have_text("20 of 20 results shown.")


def score_column(page, index: int) -> list[float]:
    """Return the numbers of the ``index``-th score column (0: Human TSR ... 14: Overall AVG)."""
    cells = page.locator("table.board tbody tr").evaluate_all(
        "rows => rows.map(row => "
        f"row.querySelectorAll('td.num:not(.rank):not(.key)')[{index}].innerText)"
    )
    return [float(cell) for cell in cells]


def test_a_column_heading_sorts_the_table_and_says_so(page, site):
    page.goto(site + "/")
    heading = page.locator("table.board thead th").filter(
        has=page.locator('a[title^="Task Success Rate, robot"]')
    )
    assert heading.get_attribute("aria-sort") is None
    ranked = board_models(page)
    heading.locator("a").click()
    expect(heading).to_have_attribute("aria-sort", "descending")
    assert query(page.url) == {"sort": ["robot_tsr"], "order": ["desc"]}
    robot_tsr = score_column(page, 5)
    assert robot_tsr == sorted(robot_tsr, reverse=True)
    assert robot_tsr[:3] == [1.0, 0.194, 0.125]
    models = board_models(page)
    assert sorted(models) == sorted(ranked) and models != ranked
    heading.locator("a").click()
    expect(heading).to_have_attribute("aria-sort", "ascending")
    assert query(page.url)["order"] == ["asc"]
    assert score_column(page, 5) == sorted(robot_tsr)


def test_ticking_a_kind_filters_at_once_and_the_csv_link_follows(page, site):
    page.goto(site + "/")
    page.get_by_label("Open weights").check()
    page.wait_for_url(re.compile(r"kind=open-weights"))
    assert query(page.url) == {"kind": ["open-weights"]}
    expect(page.get_by_label("Open weights")).to_be_checked()
    # The checkbox keeps the focus across the reload, so keyboard users keep their place.
    expect(page.get_by_label("Open weights")).to_be_focused()
    expect(page.locator("table.board tbody tr")).to_have_count(11)
    assert {row.get_attribute("class") for row in page.locator("table.board tbody tr").all()} == {
        "kind-open-weights"
    }
    download = page.locator("a.download")
    expect(download).to_have_text("Download CSV")
    href = download.get_attribute("href")
    assert urlsplit(href).path == "/leaderboard/overall.csv"
    assert query(href) == {"kind": ["open-weights"]}


def test_searching_shows_only_the_matching_models(page, site):
    page.goto(site + "/")
    search = page.get_by_role("searchbox", name="Search")
    search.fill("qwen")
    search.press("Enter")
    page.wait_for_url(re.compile(r"q=qwen"))
    # Empty fields stay out of the address.
    assert query(page.url) == {"q": ["qwen"]}
    models = board_models(page)
    assert models and all("qwen" in m.lower() for m in models)
    assert len(models) == 5
    expect(search).to_have_value("qwen")


def test_the_level_2_tab_shows_the_level_table_without_the_table_ii_only_rows(page, site):
    page.goto(site + "/")
    tabs = page.get_by_role("navigation", name="Tables")
    tabs.get_by_role("link", name="Level 2").click()
    page.wait_for_url(re.compile(r"/levels/2/$"))
    expect(tabs.get_by_role("link", name="Level 2")).to_have_attribute("aria-current", "page")
    expect(page.locator("h1")).to_contain_text("Level 2")
    expect(page.locator("table.board tbody tr")).to_have_count(18)
    models = board_models(page)
    assert "Human" not in models and "Random" not in models
    assert page.locator("a.download").get_attribute("href") == "/leaderboard/level-2.csv"


def test_the_first_tab_stop_is_the_skip_link_to_the_content(page, site):
    page.goto(site + "/")
    page.keyboard.press("Tab")
    skip = page.locator(":focus")
    expect(skip).to_have_text("Skip to content")
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    assert urlsplit(page.url).fragment == "main"


def test_a_bad_filter_gets_a_400_page_naming_the_parameter(page, site):
    response = page.goto(site + "/?params_min=abc")
    assert response.status == 400
    expect(page.locator("h1")).to_have_text("These filters cannot be used")
    expect(page.locator("ul.errors li")).to_contain_text("params_min")
    page.get_by_role("link", name="Show the table without filters").click()
    expect(page.locator("table.board tbody tr")).to_have_count(20)


def test_on_a_phone_the_table_scrolls_inside_its_frame_and_the_model_column_stays(browser, site):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    phone = context.new_page()
    phone.goto(site + "/")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    frame = phone.locator(".table-wrap")
    assert frame.evaluate("e => e.scrollWidth > e.clientWidth")
    model = phone.locator("table.board tbody th.model-col").nth(1)
    row = phone.locator("table.board tbody tr").nth(1)
    first_score = row.locator("td.num:not(.rank):not(.key)").first
    model.scroll_into_view_if_needed()
    before, score_before = model.bounding_box(), first_score.bounding_box()
    frame.evaluate("e => { e.scrollLeft = 400; }")
    assert frame.evaluate("e => e.scrollLeft") > 0
    assert first_score.bounding_box()["x"] < score_before["x"] - 300
    after, box = model.bounding_box(), frame.bounding_box()
    assert after["x"] == pytest.approx(before["x"], abs=1)
    # It stays inside the frame and leaves room beside it for at least two columns of numbers.
    assert box["x"] <= after["x"] and after["x"] + after["width"] <= box["x"] + box["width"] - 120
    # The sticky cell is painted over the scrolled numbers, not under them.
    x, y = after["x"] + after["width"] / 2, after["y"] + 8
    assert phone.evaluate(f"document.elementFromPoint({x}, {y}).closest('th.model-col') !== null")
    context.close()
