"""Errors and cost as a visitor sees them, in chromium at desktop and phone sizes: a run's
errored episodes and its re-run button, its tokens and dollars, a model page, and the
cost-performance chart drawn with its Pareto front. ``MIRRORBENCH_SCREENSHOTS=DIR`` keeps a
screenshot of each page there."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from leaderboard.boards.scores import run_list_if_complete, run_scores_refresh
from leaderboard.models import Episode, ModelEntry, ModelPrice, Run, Step
from tests.leaderboard.factories import UserFactory, import_run
from tests.leaderboard.test_site_browser import DESKTOP, PASSWORD, PHONE, STICKING_OUT
from tests.parts import DEV_EXTRA, import_part

sync_api = import_part("playwright.sync_api", "Playwright", DEV_EXTRA)
pytestmark = [pytest.mark.django_db(transaction=True)]
expect = sync_api.expect


@pytest.fixture
def site(live_server, bundles):
    """alice's run with errored episodes and priced tokens, and a dearer, better one."""
    alice = UserFactory(username="alice", password=PASSWORD, permissions=["leaderboard.add_run"])
    flaky = import_run(bundles["random"], "Flaky VLM", kind=ModelEntry.Kind.OPEN_WEIGHTS)
    sharp = import_run(bundles["oracle"], "Sharp VLM", kind=ModelEntry.Kind.PROPRIETARY)
    for run, tokens in ((flaky, 1200), (sharp, 3000)):
        Step.objects.filter(episode__run=run).update(
            input_tokens=tokens, output_tokens=60, cached_input_tokens=tokens // 4
        )
    errored = flaky.episodes.order_by("pk").values_list("pk", flat=True)[:7]
    Episode.objects.filter(pk__in=list(errored)).update(
        status=Episode.Status.ERROR,
        error="[server_error HTTP 503] transport error after 6 attempts",
        error_status=503,
        error_category="server_error",
        avg=None,
    )
    Run.objects.filter(pk=flaky.pk).update(owner=alice, spec={"agent": "random"})
    for run in (flaky, sharp):
        run.refresh_from_db()
        run_scores_refresh(run=run, n_resamples=10)
        run_list_if_complete(run=run)
    ModelPrice.objects.create(agent="random", input_per_mtok=0.4, output_per_mtok=1.6)
    ModelPrice.objects.create(agent="oracle", input_per_mtok=2.5, output_per_mtok=10.0)
    return {"url": live_server.url, "flaky": flaky, "sharp": sharp}


def _shot(target, name: str) -> None:
    """Keep a screenshot of a page (whole) or an element, when asked to."""
    folder = os.environ.get("MIRRORBENCH_SCREENSHOTS")
    if not folder:
        return
    path = str(Path(folder) / f"{name}.png")
    if hasattr(target, "goto"):
        target.screenshot(path=path, full_page=True)
    else:
        target.screenshot(path=path)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_errors_cost_and_the_cost_chart_fit_the_screen(browser, site, viewport):
    size = "desktop" if viewport is DESKTOP else "phone"
    context = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE)
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.route(re.compile(r"/frames/"), lambda route: route.abort())
    page.goto(site["url"] + "/accounts/login/")
    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.locator("main").get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/accounts/profile/$"))

    page.goto(f"{site['url']}/runs/{site['flaky'].pk}/")
    errors = page.locator("section.run-errors")
    expect(errors).to_contain_text("7 of 264 finished episodes ended in error (2.7%)")
    expect(errors).to_contain_text("Not ranked")
    expect(errors.get_by_role("button", name="Re-run the errored episodes")).to_be_visible()
    expect(page.locator("p.run-cost")).to_contain_text("at the site's price table")
    assert page.evaluate(STICKING_OUT) == []
    _shot(page, f"run-{size}")

    page.goto(f"{site['url']}/models/{site['sharp'].model_entry.slug}/")
    expect(page.locator("p.run-cost")).to_contain_text("from the provider's cache, 25%")
    assert page.evaluate(STICKING_OUT) == []
    _shot(page, f"model-{size}")

    page.goto(f"{site['url']}/charts/")
    chart = page.locator("figure#cost")
    chart.scroll_into_view_if_needed()
    expect(chart.locator(".main-svg").first).to_be_visible()
    expect(chart.locator(".legendtext", has_text="Pareto front")).to_have_count(1)
    assert page.evaluate(STICKING_OUT) == []
    _shot(chart, f"charts-{size}")
    context.close()
