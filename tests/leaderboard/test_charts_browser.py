"""The charts in a real browser (Debian's chromium driven by Playwright), as a visitor."""

from __future__ import annotations

import re

import pytest

from leaderboard.models import ModelEntry
from leaderboard.runs.imports import reference_results_load
from tests.leaderboard.factories import import_run
from tests.leaderboard.test_browser import query
from tests.parts import DEV_EXTRA, import_part

sync_api = import_part("playwright.sync_api", "Playwright", DEV_EXTRA)
pytestmark = [
    pytest.mark.django_db(transaction=True),
]
expect = sync_api.expect

DRAWN = ".chart-plot[data-chart-state='drawn']"


@pytest.fixture
def site(live_server, bundles, module_snapshot) -> str:
    """The live server with the paper's rows and two runs evaluated here (with episodes):
    made by the module's first test, put back for the others (``DatabaseSnapshot``)."""

    def make() -> None:
        reference_results_load()
        import_run(bundles["random"], "Random", kind=ModelEntry.Kind.BASELINE)
        import_run(bundles["mirror-confused"], "Small-VL-7B", params_b=7.0)

    module_snapshot.rows(make)
    return live_server.url


def traces(page, chart_id: str) -> list[tuple[str, int]]:
    """Return (name, number of points) of each trace plotly drew in the chart ``chart_id``."""
    drawn = page.locator(f"#{chart_id} .chart-plot").evaluate(
        "plot => plot.data.map(t => [t.name, (t.x || t.r || []).length])"
    )
    return [(name, points) for name, points in drawn]


def test_every_chart_of_the_charts_page_is_drawn_with_its_traces_and_points(page, site):
    page.goto(site + "/charts/")
    expect(page.locator(DRAWN)).to_have_count(6)
    assert sorted(traces(page, "stability")) == [("Baseline", 1), ("Open weights", 1)]
    assert sorted(traces(page, "stability-ranking")) == [("Baseline", 1), ("Open weights", 1)]
    radar = traces(page, "radar")
    assert len(radar) == 16 and {points for _, points in radar} == {5}
    assert [name for name, _ in radar[::4]] == [
        "Gemini-2.5-Pro-API",
        "Gemini-2.5-Flash-API",
        "GPT-4.1-API",
        "Random",
    ]
    trajectories = traces(page, "trajectories")
    assert len(trajectories) == 16 and {points for _, points in trajectories} == {4}
    assert traces(page, "tracks") == [("Human", 5), ("Robot", 5), ("Overall", 5)]
    # The text alternative opens under the chart, with the chart's numbers.
    details = page.locator("#tracks details.chart-data")
    details.locator("summary").click()
    expect(details.locator("tbody tr").first).to_contain_text("Level 0")
    y = page.locator("#tracks .chart-plot").evaluate("plot => plot.data[0].y[0]")
    expect(details.locator("tbody tr").first.locator("td").first).to_have_text(f"{y:.3f}")


def test_the_picker_puts_the_models_in_the_address_and_redraws_the_charts(page, site):
    page.goto(site + "/charts/")
    expect(page.locator(DRAWN)).to_have_count(6)
    page.get_by_label("Model 4").select_option("")
    page.wait_for_url(re.compile(r"/charts/\?"))
    assert query(page.url) == {"m": ["gemini-25-pro-api", "gemini-25-flash-api", "gpt-41-api"]}
    expect(page.locator(DRAWN)).to_have_count(6)
    assert len(traces(page, "radar")) == 12
    page.get_by_label("Model 1").select_option(label="Small-VL-7B")
    page.wait_for_url(re.compile(r"m=small-vl-7b"))
    assert query(page.url)["m"] == ["small-vl-7b", "gemini-25-flash-api", "gpt-41-api"]
    expect(page.locator(DRAWN)).to_have_count(6)
    assert traces(page, "trajectories")[0][0] == "Small-VL-7B"
    page.get_by_role("link", name="Compare these models side by side").click()
    page.wait_for_url(re.compile(r"/compare/\?m=small-vl-7b&m=gemini-25-flash-api&m=gpt-41-api"))
    expect(page.locator(DRAWN)).to_have_count(2)
    assert len(traces(page, "radar")) == 12


def test_a_chart_downloads_as_png_and_svg(page, site):
    page.goto(site + "/compare/?m=random&m=small-vl-7b")
    expect(page.locator(DRAWN)).to_have_count(2)
    plot = page.locator("#radar .chart-plot")
    png = plot.evaluate("plot => Plotly.toImage(plot, {format: 'png', width: 600, height: 400})")
    assert png.startswith("data:image/png;base64,") and len(png) > 10_000
    titles = plot.locator(".modebar-btn").evaluate_all("bs => bs.map(b => b.dataset.title)")
    assert "Share chart..." not in titles  # it would upload the chart to Plotly's cloud
    with page.expect_download() as download:
        plot.locator('.modebar-btn[data-title="Download plot as a PNG"]').click()
    assert download.value.suggested_filename == "mirrorbench-radar.png"
    with page.expect_download() as download:
        plot.locator('.modebar-btn[data-title="Download plot as an SVG"]').click()
    assert download.value.suggested_filename == "mirrorbench-radar.svg"
    assert download.value.path().read_text().startswith("<svg")


def test_on_a_phone_the_charts_fit_the_screen_and_stack_their_panels(browser, site):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    phone = context.new_page()
    phone.goto(site + "/models/small-vl-7b/")
    expect(phone.locator(DRAWN)).to_have_count(2)
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    radar = phone.locator("#model-radar .chart-plot")
    assert radar.evaluate("plot => plot.layout.height") == 1560
    assert radar.evaluate("plot => plot.layout.polar2.domain.x") == [0, 1]
    assert radar.evaluate("plot => plot.getBoundingClientRect().right") <= 390
    context.close()
