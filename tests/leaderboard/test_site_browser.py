"""The site as visitors meet it, in chromium at desktop and phone sizes: the board's reference
rows, a phone's first screen, the header signed in and out, the forms, and axe-core's
accessibility check of every page."""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone

from leaderboard.models import Episode, ModelEntry, Run, Step
from leaderboard.runs.imports import reference_results_load
from tests.leaderboard.browser import axe_in, serious_violations
from tests.leaderboard.factories import UserFactory, board_run, import_run
from tests.parts import DEV_EXTRA, import_part

sync_api = import_part("playwright.sync_api", "Playwright", DEV_EXTRA)
pytestmark = [
    pytest.mark.django_db(transaction=True),
]
expect = sync_api.expect

DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
PASSWORD = "a-long-password-42"


@pytest.fixture
def site(live_server, bundles, module_snapshot) -> dict[str, object]:
    """The paper's rows, the Oracle and Random evaluated here, and alice, who may evaluate:
    made by the module's first test, put back for the others (``DatabaseSnapshot``)."""

    def make() -> dict[str, int]:
        reference_results_load()
        oracle = import_run(bundles["oracle"], "Oracle", kind=ModelEntry.Kind.BASELINE)
        random = import_run(bundles["random"], "Random", kind=ModelEntry.Kind.BASELINE)
        UserFactory(username="alice", password=PASSWORD, permissions=["leaderboard.add_run"])
        episode = Episode.objects.filter(run=random).order_by("pk").first()
        return {"oracle": oracle.pk, "random": random.pk, "episode": episode.pk}

    pks = module_snapshot.rows(make)
    return {
        "url": live_server.url,
        "oracle": Run.objects.get(pk=pks["oracle"]),
        "random": Run.objects.get(pk=pks["random"]),
        "episode": Episode.objects.get(pk=pks["episode"]),
    }


def _page(browser, viewport, **kwargs):
    context = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE, **kwargs)
    page = context.new_page()
    page.set_default_timeout(10_000)
    # Frames render on demand in the server's one rendering thread: not needed here.
    page.route(re.compile(r"/frames/"), lambda route: route.abort())
    return page


STICKING_OUT = """() => {
  const width = document.documentElement.clientWidth;
  const clipped = (el) => {
    for (let up = el.parentElement; up; up = up.parentElement) {
      if (["auto", "scroll", "hidden"].includes(getComputedStyle(up).overflowX)) { return true; }
    }
    return false;
  };
  return [...document.querySelectorAll("body *")]
    .filter((el) => el.checkVisibility() && el.getBoundingClientRect().right > width + 0.5)
    .filter((el) => !clipped(el))
    .map((el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
      + (typeof el.className === "string" && el.className ? "." + el.className : ""));
}"""
"""Elements that reach past the right edge of the screen, outside any frame that scrolls or clips
them: what a phone would show cut off or let the page scroll sideways for (``scrollWidth`` of
a mobile page misses them, as the browser widens the layout to fit). What is not shown (a closed
menu's links) does not count."""


def _sticking_out(page) -> list[str]:
    """STICKING_OUT once the page has loaded: measured before its stylesheet arrives (a busy
    machine serves it late), a page is laid out unstyled and a long word reaches past the edge."""
    page.wait_for_load_state("load")
    return page.evaluate(STICKING_OUT)


def _sign_in(page, url: str) -> None:
    page.goto(url + "/accounts/login/")
    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.locator("main").get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/accounts/profile/$"))


def test_reference_rows_are_unranked_unmarked_and_the_oracle_waits_behind_a_switch(browser, site):
    page = _page(browser, DESKTOP)
    page.goto(f"{site['url']}/")
    names = page.locator("table.board tbody th.model-col a").all_inner_texts()
    assert "Oracle" not in names and names.count("Random") == 2
    expect(page.locator("p.count")).to_contain_text("The Oracle, a sanity check")
    reference = page.locator("table.board tbody tr.reference")
    expect(reference).to_have_count(3)  # Human, the paper's Random, ours
    expect(reference.locator("td.first, td.second")).to_have_count(0)
    for rank in reference.locator("td.rank").all_inner_texts():
        assert rank.split()[0] == "—"
    notes = reference.locator(".ref-note").all_inner_texts()
    assert "Reference: the paper's numbers, benchmark v3" in notes
    assert "Reference: evaluated here, benchmark v3" in notes
    first_model = page.locator("table.board tbody tr:not(.reference)").first
    expect(first_model.locator("td.rank")).to_have_text("1")

    page.get_by_label("every baseline (the Oracle too)").check()
    page.wait_for_url(re.compile(r"baselines=show"))
    oracle = page.locator("table.board tbody tr").filter(has_text="Oracle")
    expect(oracle).to_have_class(re.compile(r"\breference\b"))
    # Its 1.000s are neither bold nor underlined: the best model still is.
    expect(oracle.locator("td.first, td.second")).to_have_count(0)
    expect(first_model.locator("td.first strong").last).to_have_text("0.442")
    href = page.locator("a.download").get_attribute("href")
    assert parse_qs(urlsplit(href).query) == {"baselines": ["show"]}

    page.get_by_label("95% intervals (±)").check()
    page.wait_for_url(re.compile(r"ci=show"))
    ours = page.locator("table.board tbody tr").filter(has_text="evaluated here").first
    expect(ours.locator("td .pm").first).to_have_text(re.compile(r"^±0\.\d{3}$"))
    page.context.close()


def test_the_oracle_waits_behind_the_same_switch_on_the_tracks_and_the_charts(browser, site):
    page = _page(browser, DESKTOP)
    page.goto(f"{site['url']}/tracks/")
    gaps = page.get_by_role("region", name="Human minus robot gaps")
    expect(gaps).to_contain_text("Random")
    expect(gaps).not_to_contain_text("Oracle")
    page.get_by_role("link", name="show every baseline").click()
    page.wait_for_url(re.compile(r"/tracks/\?baselines=show$"))
    expect(gaps).to_contain_text("Oracle")
    page.goto(f"{site['url']}/charts/")
    numbers = page.locator("#stability table")
    expect(numbers).to_contain_text("Random")
    expect(numbers).not_to_contain_text("Oracle")
    page.get_by_label("every baseline (the Oracle too)").check()
    page.wait_for_url(re.compile(r"baselines=show"))
    expect(numbers).to_contain_text("Oracle")
    expect(page.locator("#stability .chart-plot")).to_have_attribute(
        "data-chart-url", "/api/charts/stability/?baselines=show"
    )
    page.context.close()


def test_on_a_phone_the_score_is_on_the_first_screen_and_the_filters_are_folded(browser, site):
    page = _page(browser, PHONE)
    page.goto(f"{site['url']}/")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    expect(page.locator("details.filter-panel")).not_to_have_attribute("open", "")
    first = page.locator("table.board tbody tr:not(.reference)").first
    key = first.locator("td.key")
    expect(key).to_be_visible()
    box = key.bounding_box()
    # Without scrolling: inside the screen, down and across.
    assert box["y"] + box["height"] <= PHONE["height"] and box["x"] + box["width"] <= PHONE["width"]
    expect(key).to_have_text("0.442")
    expect(page.locator("table.board thead th.key")).to_have_text("Overall AVG")
    # Sorted by another column, that column's score is the one beside the model.
    page.goto(f"{site['url']}/?sort=robot_tsr&order=desc")
    expect(page.locator("table.board thead th.key")).to_have_text("Robot TSR")
    page.locator("details.filter-panel > summary").click()
    expect(page.get_by_label("Open weights")).to_be_visible()
    page.context.close()


def test_on_a_phone_one_menu_holds_every_destination(browser, site):
    page = _page(browser, PHONE)
    page.goto(f"{site['url']}/levels/2/")
    header = page.locator("header.site")
    assert header.bounding_box()["height"] < 70  # one row: the brand and the menu
    menu = page.locator("details.menu")
    expect(page.locator("nav.main-nav.wide")).to_be_hidden()
    # Every table's tab is on the screen, none past its edge.
    for tab in page.get_by_role("navigation", name="Tables").get_by_role("link").all():
        box = tab.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], tab.inner_text()
    menu.locator("summary").click()
    places = ["Leaderboard", "Charts", "Human vs robot", "Scenes", "Search", "Play", "About", "API"]
    for name in [*places, "Sign in", "Create account"]:
        link = menu.get_by_role("link", name=name, exact=True)
        expect(link).to_be_visible()
        box = link.bounding_box()
        assert box["x"] + box["width"] <= PHONE["width"] and box["y"] + box["height"] <= 600
    expect(menu.get_by_role("link", name="Leaderboard")).to_have_attribute("aria-current", "page")
    assert _sticking_out(page) == []
    _sign_in(page, str(site["url"]))
    assert page.locator("header.site").bounding_box()["height"] < 70  # not three rows
    page.locator("details.menu summary").click()
    for name in [*places, "Submit", "Evaluate", "alice"]:
        expect(menu.get_by_role("link", name=name, exact=True)).to_be_visible()
    menu.get_by_role("button", name="Sign out").click()
    page.wait_for_url(re.compile(r"/$"))
    page.context.close()


def test_the_header_offers_sign_in_then_the_users_own_links_and_sign_out(browser, site):
    page = _page(browser, DESKTOP)
    page.goto(f"{site['url']}/about/")
    account = page.get_by_role("navigation", name="Account")
    expect(account.get_by_role("link")).to_have_text(["Sign in", "Create account"])
    _sign_in(page, str(site["url"]))
    account = page.get_by_role("navigation", name="Account")
    expect(account.get_by_role("link")).to_have_text(["Submit", "Evaluate", "alice"])
    expect(account.get_by_role("link", name="alice")).to_have_attribute("aria-current", "page")
    account.get_by_role("button", name="Sign out").click()
    page.wait_for_url(re.compile(r"/$"))
    expect(page.get_by_role("navigation", name="Account").get_by_role("link")).to_have_text(
        ["Sign in", "Create account"]
    )
    page.context.close()


def test_the_evaluate_form_is_a_card_whose_estimate_follows_the_choices(browser, site):
    page = _page(browser, PHONE)
    page.goto(f"{site['url']}/evaluate/")
    expect(page.locator("h2", has_text="Who may evaluate here")).to_be_visible()
    _sign_in(page, str(site["url"]))
    page.goto(f"{site['url']}/evaluate/")
    form = page.locator("form.form-card.hosted")
    expect(form.locator('input[type="checkbox"][name="levels"]')).to_have_count(4)
    field = form.get_by_label("Model name at the provider")
    assert field.bounding_box()["width"] > 250  # full width, not a tiny default input
    episodes = page.locator('aside.estimate [data-field="episodes"]')
    expect(episodes).to_have_text("264")
    form.get_by_label("Level 3: neither the mirror nor the body").uncheck()
    expect(episodes).to_have_text("198")
    form.get_by_label("Robot track (18)").check()
    expect(episodes).to_have_text("54")
    # The cost is read before the button that spends it, on a phone's screen as in the page.
    estimate = page.locator("aside.estimate").bounding_box()
    start = form.get_by_role("button", name="Start the run").bounding_box()
    assert estimate["y"] + estimate["height"] <= start["y"]
    assert _sticking_out(page) == []
    page.goto(f"{site['url']}/submit/")
    assert _sticking_out(page) == []
    # A refusal naming a long setting wraps inside the card too.
    page.goto(f"{site['url']}/evaluate/")
    page.get_by_label("Base URL").fill("http://127.0.0.1:9/v1")
    page.get_by_label("Model name at the provider").fill("gpt-4o")
    page.get_by_label("API key").fill("sk-typed-on-a-phone")
    page.get_by_role("button", name="Start the run").click()
    expect(page.locator("#id_base_url_error")).to_contain_text("MIRRORBENCH_ALLOW_PRIVATE")
    assert _sticking_out(page) == []
    page.context.close()


def test_on_a_wide_screen_the_estimate_sits_beside_the_form_and_a_refusal_keeps_no_key(
    browser, site
):
    page = _page(browser, DESKTOP)
    _sign_in(page, str(site["url"]))
    page.goto(f"{site['url']}/evaluate/")
    form = page.locator("form.form-card.hosted")
    card, estimate = form.bounding_box(), page.locator("aside.estimate").bounding_box()
    assert estimate["x"] >= card["x"] + card["width"] and estimate["y"] < card["y"] + 200
    assert page.evaluate("document.documentElement.scrollWidth") <= DESKTOP["width"]
    form.get_by_label("Base URL").fill("http://127.0.0.1:9/v1")
    form.get_by_label("Model name at the provider").fill("gpt-4o")
    form.get_by_label("API key").fill("sk-typed-in-the-browser")
    form.get_by_role("button", name="Start the run").click()
    error = page.locator("#id_base_url_error")
    expect(error).to_contain_text("Host 127.0.0.1 is a loopback address")
    expect(error).to_contain_text("MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS=1")
    expect(error).not_to_contain_text("base_url")
    expect(form.get_by_label("API key")).to_have_value("")
    expect(page.locator(".key-dropped")).to_contain_text("Enter your API key again")
    page.context.close()


def test_a_new_account_reads_errors_as_sentences_then_a_welcome(browser, site):
    page = _page(browser, PHONE)
    page.goto(f"{site['url']}/accounts/signup/")
    expect(page.get_by_label("Password", exact=True)).to_have_attribute(
        "autocomplete", "new-password"
    )
    page.get_by_label("Username").fill("newbie")
    page.get_by_label("Email").fill("newbie@example.org")
    page.get_by_label("Password", exact=True).fill("short")
    page.get_by_label("Password again").fill("short")
    page.locator("main").get_by_role("button", name="Create the account").click()
    error = page.locator("#id_password1_error")
    expect(error).to_have_text(re.compile(r"^This password is too short"))
    expect(page.locator("main")).not_to_contain_text("password1")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password again").fill(PASSWORD)
    page.locator("main").get_by_role("button", name="Create the account").click()
    page.wait_for_url(re.compile(r"/accounts/profile/$"))
    welcome = page.locator("ul.messages li.success")
    expect(welcome).to_have_text(re.compile(r"^Welcome, newbie: your account is made"))
    box = welcome.bounding_box()
    assert box["y"] + box["height"] <= PHONE["height"]  # on the first screen
    page.reload()
    expect(page.locator("ul.messages")).to_have_count(0)  # said once
    page.context.close()


def test_a_live_run_page_moves_its_cards_and_counts_with_separators(browser, site):
    run = site["random"]
    Step.objects.filter(episode__run=run).update(input_tokens=300, output_tokens=100)
    episodes = Episode.objects.filter(run=run).order_by("level", "scene_id")
    first = episodes.first()
    Episode.objects.filter(pk__in=[e.pk for e in episodes[:3]]).update(
        status=Episode.Status.PENDING, steps_taken=0
    )
    started = timezone.now() - timedelta(seconds=60)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, started=started)
    page = _page(browser, DESKTOP)
    page.goto(f"{site['url']}/runs/{run.pk}/")
    progress = page.locator("section.progress")
    expect(progress.locator(".status")).to_have_text("Running")
    expect(progress.locator('[data-field="input_tokens"]')).to_have_text(
        re.compile(r"^\d{1,3}(,\d{3})+$")
    )
    card = page.locator(f'li.episode-card[data-episode="{first.pk}"]')
    expect(card).to_contain_text("0 steps")
    expect(card).to_contain_text("Pending")
    # The worker moves on: the card follows without a reload.
    Episode.objects.filter(pk=first.pk).update(status=Episode.Status.RUNNING, steps_taken=4)
    expect(card).to_contain_text("4 steps", timeout=8_000)
    expect(card).to_contain_text("Running")
    Episode.objects.filter(pk=first.pk).update(status=first.status, steps_taken=first.steps_taken)
    expect(card).to_contain_text(f"{first.steps_taken} steps", timeout=8_000)
    expect(card).to_contain_text(re.compile(r"reached the mark|missed"))
    expect(card).to_have_attribute("data-final", "")
    expect(progress.locator(".status")).to_have_text("Running")  # capitalised as on load
    page.context.close()


FITS = """(selector) => [...document.querySelectorAll(selector)].map(
  (wrap) => wrap.scrollWidth - wrap.clientWidth)"""
"""How far each frame's table reaches past the frame (0: it fits, nothing scrolls)."""


def test_a_rank_shows_its_interval_and_a_tie_its_mark_on_a_phone(browser, site, bundles):
    # The random policy's episodes as a model: 0.162 overall, its interval 7-8 overlapping
    # the 8th model's rank (Qwen2.5-VL-72B, 0.154).
    board_run(bundles["random"], "Random VLM", kind=ModelEntry.Kind.OPEN_WEIGHTS)
    page = _page(browser, PHONE)
    page.goto(f"{site['url']}/")
    ours = page.locator("table.board tbody tr").filter(has_text="Random VLM")
    interval = ours.locator("td.rank .rank-ci")
    expect(interval).to_be_visible()
    expect(interval).to_have_text(re.compile(r"\d+" + "\N{EN DASH}" + r"\d+$"))
    tie = page.locator("table.board tbody tr").filter(has_text="Qwen2.5-VL-72B")
    mark = tie.locator("td.rank abbr.tie")
    expect(mark).to_be_visible()
    expect(mark).to_have_attribute("title", re.compile(r"tied with the model ranked above"))
    # The interval and the mark stay inside the sticky rank column, clear of the model's name.
    for locator in (interval, mark):
        box, cell = locator.bounding_box(), locator.locator("xpath=ancestor::td").bounding_box()
        assert box["x"] >= cell["x"] and box["x"] + box["width"] <= cell["x"] + cell["width"]
    expect(page.locator("#rank-footnote")).to_contain_text("The paper's rows have no interval")
    assert _sticking_out(page) == []
    page.context.close()


def test_tables_fit_where_their_numbers_would_otherwise_be_cut(browser, site):
    page = _page(browser, DESKTOP)
    # 95% intervals under their scores: the Overall columns stay on a 1366 px screen.
    page.goto(f"{site['url']}/?ci=show")
    expect(page.locator("table.board td .pm").first).to_be_visible()
    assert page.evaluate(FITS, ".table-wrap:has(table.board.ranked)") == [0]
    page.context.close()
    # A 1280 px laptop: every level's and the tracks' scores, the ranking AVG last, unscrolled.
    page = _page(browser, {"width": 1280, "height": 800})
    for path in ("/", "/levels/0/", "/tracks/"):
        page.goto(f"{site['url']}{path}")
        overflow = page.evaluate(FITS, ".table-wrap:has(table.board)")
        assert overflow and set(overflow) == {0}, (path, overflow)
    page.context.close()
    page = _page(browser, PHONE)
    # A model page's tables, its behaviour summary's headings whole.
    page.goto(f"{site['url']}/models/random/")
    overflow = page.evaluate(FITS, "section.run .table-wrap")
    # The run evaluated here: five tables and its behaviour; the paper's row: its one table.
    assert len(overflow) == 7 and set(overflow) == {0}, overflow
    # A table that must scroll fades at the edge that has more, instead of a number cut short.
    page.goto(f"{site['url']}/compare/?m=random&m=human")
    wrap = page.locator(".compare-tables .table-wrap").first
    assert page.evaluate(FITS, ".compare-tables .table-wrap")[0] > 0
    expect(wrap).to_have_css("mask-image", re.compile(r"linear-gradient"))
    # The browsable API is a phone's width, not 980 px.
    page.goto(f"{site['url']}/api/")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert _sticking_out(page) == []
    expect(page.get_by_role("link", name="MirrorBench")).to_have_attribute("href", "/")
    page.context.close()


PAGES = [
    "/",
    "/levels/2/",
    "/?baselines=show&ci=show",
    "/tracks/",
    "/charts/",
    "/scenes/",
    "/about/",
    "/models/random/",
    "/runs/{run}/",
    "/episodes/{episode}/",
    "/accounts/login/",
    "/accounts/signup/",
    "/accounts/password_reset/",
    "/evaluate/",
    "/no/such/page/",
]
SIGNED_IN = ["/evaluate/", "/submit/", "/accounts/profile/"]


def test_no_page_has_a_serious_or_critical_accessibility_violation(browser, site):
    found = {}
    for viewport in (DESKTOP, PHONE):
        page = _page(browser, viewport)
        axe_in(page.context)
        urls = [u.format(run=site["random"].pk, episode=site["episode"].pk) for u in PAGES]
        for url in urls:
            page.goto(f"{site['url']}{url}", wait_until="domcontentloaded")
            found[(viewport["width"], url)] = serious_violations(page)
        _sign_in(page, str(site["url"]))
        for url in SIGNED_IN:
            page.goto(f"{site['url']}{url}", wait_until="domcontentloaded")
            found[(viewport["width"], f"{url} (signed in)")] = serious_violations(page)
        page.context.close()
    assert {k: v for k, v in found.items() if v} == {}
