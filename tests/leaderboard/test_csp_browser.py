"""Every kind of page under the site's Content-Security-Policy, in chromium: no violation is
reported, and the pages still work (a chart draws, the replay steps, the API docs list the
operations, signing in signs in).

Violations are caught twice: the ``securitypolicyviolation`` events the page fires (listened to
from an init script, which the policy does not govern) and chromium's console messages.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from leaderboard.models import Episode, ModelEntry
from leaderboard.runs.imports import reference_results_load
from tests.leaderboard.factories import UserFactory, import_run, make_bundle
from tests.parts import DEV_EXTRA, import_part

sync_api = import_part("playwright.sync_api", "Playwright", DEV_EXTRA)
pytestmark = [
    pytest.mark.django_db(transaction=True),
]
expect = sync_api.expect
PASSWORD = "a-long-password-42"
# Where the charts page's screenshot under the policy goes (the test's folder unless this is set).
SCREENSHOT = os.environ.get("MIRRORBENCH_CSP_SCREENSHOT", "")
LISTEN = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  const target = e.target && e.target.outerHTML ? e.target.outerHTML.slice(0, 160) : "";
  window.__csp.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} ` +
                    `(${e.sourceFile}:${e.lineNumber}) ${target}`);
});
"""


@pytest.fixture
def site(live_server, tmp_path, settings) -> dict[str, object]:
    """The paper's rows, a small random run with frames rendered on demand, alice (staff)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    reference_results_load()
    bundle = make_bundle(
        tmp_path / "b.jsonl",
        "random",
        scenes="male_0-mano_white-splash,tienkung-allegro-logo_0",
        levels=(0, 1),
        image_size=32,
    )
    run = import_run(bundle, "Random CSP", kind=ModelEntry.Kind.BASELINE)
    UserFactory(
        username="alice", password=PASSWORD, is_staff=True, permissions=["leaderboard.add_run"]
    )
    episode = Episode.objects.filter(run=run).order_by("pk").first()
    assert episode is not None
    return {"url": live_server.url, "run": run, "episode": episode}


class Watched:
    """A page whose CSP violations, from events and the console, are collected."""

    def __init__(self, browser) -> None:
        self.context = browser.new_context(viewport={"width": 1366, "height": 900})
        self.context.add_init_script(LISTEN)
        self.page = self.context.new_page()
        self.page.set_default_timeout(20_000)
        self.console: list[str] = []
        self.page.on(
            "console",
            lambda m: (
                self.console.append(m.text)
                if "Content Security Policy" in m.text or "Content-Security-Policy" in m.text
                else None
            ),
        )

    def open(self, url: str, status: int = 200) -> None:
        self.console.clear()
        response = self.page.goto(url)
        assert response is not None and response.status == status, (
            url,
            response and response.status,
        )
        policy = response.headers.get("content-security-policy", "")
        assert "script-src 'self'" in policy and "unsafe" not in policy, (url, policy)

    def violations(self) -> list[str]:
        events = self.page.evaluate("window.__csp || []")
        return [*events, *self.console]


def _sign_in(watched: Watched, url: str) -> None:
    page = watched.page
    watched.open(url + "/accounts/login/")
    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.locator("main").get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/accounts/profile/$"))


def test_every_kind_of_page_works_under_the_policy_without_a_violation(browser, site, tmp_path):
    url, run, episode = site["url"], site["run"], site["episode"]
    watched = Watched(browser)
    page = watched.page
    seen: dict[str, list[str]] = {}

    def visit(path: str, check=None, status: int = 200) -> None:
        watched.open(url + path, status)
        if check is not None:
            check()
        page.wait_for_load_state("load")
        page.wait_for_timeout(300)  # reports of late loads (images, fetches) come in
        seen[path] = watched.violations()

    # The leaderboard, its filters' script (the phone fold, now a file) included.
    visit("/", lambda: expect(page.locator("table.board tbody tr").first).to_be_visible())
    visit("/levels/1/")
    visit("/tracks/")
    visit(f"/models/{run.model_entry.slug}/")
    visit(f"/runs/{run.pk}/")

    def replay_steps() -> None:
        box = page.locator(".frame-box")
        expect(box).to_have_attribute("data-state", "ready")
        page.keyboard.press("ArrowRight")
        expect(page).to_have_url(re.compile(r"\?step=1$"))
        expect(page.locator('[data-field="position"]')).to_have_text("1")
        expect(box).to_have_attribute("data-state", "ready")

    visit(f"/episodes/{episode.pk}/", replay_steps)

    def charts_draw() -> None:
        plot = page.locator(".chart-plot").first
        expect(plot.locator("svg.main-svg").first).to_be_visible()
        assert plot.evaluate("p => p.data.length") > 0
        # A hover label is drawn too (plotly.js draws <b> and the like with style attributes).
        plot.locator("path.point").first.hover(force=True)
        expect(plot.locator(".hoverlayer .hovertext").first).to_be_visible()
        page.screenshot(path=SCREENSHOT or str(tmp_path / "charts.png"))

    visit("/charts/", charts_draw)
    first, second = ModelEntry.objects.exclude(kind=ModelEntry.Kind.BASELINE).values_list(
        "slug", flat=True
    )[:2]
    visit(f"/compare/?m={first}&m={second}")
    visit("/play/", lambda: expect(page.locator("main")).to_be_visible())
    visit("/scenes/")
    visit(f"/scenes/{episode.scene.scene_id}/")
    visit("/about/")
    visit(
        "/api/docs/",
        lambda: expect(page.locator(".opblock").first).to_be_visible(timeout=60_000),
    )
    visit("/api/")  # DRF's browsable page
    visit("/accounts/signup/")
    visit("/accounts/password_reset/")
    visit("/no/such/page/", status=404)

    _sign_in(watched, url)
    seen["sign-in"] = watched.violations()
    visit("/accounts/profile/")
    visit("/submit/")
    visit("/evaluate/")
    visit("/admin/")

    found = {path: found for path, found in seen.items() if found}
    assert not found, "\n".join(f"{path}: {v}" for path, vs in found.items() for v in vs)
    watched.context.close()


def test_the_policy_is_on_every_response_and_allows_the_frame_bucket(client, settings):
    response = client.get("/about/")
    policy = response["Content-Security-Policy"]
    for directive in (
        "default-src 'self'",
        "script-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "frame-ancestors 'none'",
        "form-action 'self'",
    ):
        assert directive in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "img-src 'self' data: blob:;" in policy
    assert "Content-Security-Policy" in client.get("/api/")
    assert "Content-Security-Policy" in client.get("/no-such-page/")

    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {"bucket_name": "frames", "endpoint_url": "https://s3.example.org:9000"},
        },
    }
    images = client.get("/about/")["Content-Security-Policy"].split("img-src ")[1].split(";")[0]
    assert images.split() == [
        "'self'",
        "data:",
        "blob:",
        "https://s3.example.org:9000",
        "https://frames.s3.example.org:9000",
    ]


def test_no_template_has_an_inline_script_or_handler():
    root = Path(__file__).resolve().parents[2] / "templates"
    for template in root.rglob("*.html"):
        text = template.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text):
            assert "src=" in tag or 'type="application/json"' in tag, (template, tag)
        assert not re.search(r"\son[a-z]+=", text), template
        assert " style=" not in text and "<style" not in text, template
