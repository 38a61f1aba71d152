"""The site around the tables: header, About, error pages, the favicon, the evaluate page."""

from __future__ import annotations

import re

import pytest
from django.test import RequestFactory, override_settings
from django.views.defaults import server_error

from leaderboard.boards.entries import benchmark_current
from leaderboard.models import Run
from tests.leaderboard.factories import UserFactory

pytestmark = pytest.mark.django_db


def _page(client, url, status=200):
    response = client.get(url)
    assert response.status_code == status, url
    return response.content.decode()


def test_a_visitor_is_offered_sign_in_and_an_account(client):
    content = _page(client, "/about/")
    assert 'href="/accounts/login/?next=/about/"' in content
    assert 'href="/accounts/signup/"' in content and "Sign out" not in content
    assert 'href="/submit/"' not in content.split("</header>")[0]


def test_a_signed_in_user_gets_submit_their_profile_and_sign_out_as_a_post(client):
    alice = UserFactory(username="alice")
    client.force_login(alice)
    header = _page(client, "/").split("</header>")[0]
    assert 'href="/submit/"' in header and 'href="/accounts/profile/"' in header
    assert ">alice</a>" in header
    assert '<form class="signout" method="post" action="/accounts/logout/">' in header
    assert "Evaluate" not in header and "Review" not in header
    response = client.post("/accounts/logout/")
    assert response.status_code == 302 and response["Location"] == "/"
    assert "Sign in" in _page(client, "/").split("</header>")[0]


def test_evaluate_and_review_show_only_to_those_who_may(client, bob, moderator):
    client.force_login(bob)  # may start runs
    header = _page(client, "/").split("</header>")[0]
    assert 'href="/evaluate/"' in header and 'href="/moderation/"' not in header
    client.force_login(moderator)
    assert 'href="/moderation/"' in _page(client, "/").split("</header>")[0]


def test_the_about_page_shows_scenes_protocol_the_ways_onto_the_board_and_a_citation(client):
    benchmark_current()
    content = _page(client, "/about/")
    assert content.count('<img src="/frames/') == 4
    for url in ("/frames/", "/scenes/", "/submit/", "/accounts/profile/", "/evaluate/"):
        assert f'href="{url}' in content or f'src="{url}' in content, url
    assert "mirrorbench submit results.jsonl --url http://testserver --token TOKEN" in content
    assert 'id="protocol"' in content and "prompts v3" in content
    assert "@misc{mirrorbench," in content and "Send it to the maintainers" not in content
    # Its images are registered frames (the gallery's, registered with the scenes): served,
    # rendered when first asked for, never a 404; the page itself writes nothing.
    from leaderboard.models import Frame

    keys = re.findall(r'<img src="/frames/([0-9a-f]{40})\.', content)
    assert Frame.objects.filter(pk__in=keys).count() == 4
    rows = Frame.objects.count()
    _page(client, "/about/")
    assert Frame.objects.count() == rows


def test_an_unknown_page_is_a_404_in_the_sites_style(client):
    content = _page(client, "/no/such/page/", status=404)
    assert "This page does not exist" in content and "/no/such/page/" in content
    assert 'rel="icon"' in content and "Sign in" in content


def test_the_500_page_needs_no_database_and_no_context(django_assert_num_queries):
    request = RequestFactory().get("/")
    with django_assert_num_queries(0):
        response = server_error(request)
    assert response.status_code == 500
    assert b"Something went wrong on our side" in response.content
    assert b'href="/static/css/site.css"' in response.content


def test_the_favicon_is_an_svg_also_at_favicon_ico(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("/static/favicon.svg")
    assert 'rel="icon" href="/static/favicon.svg"' in _page(client, "/")


def test_a_visitor_learns_who_may_evaluate_and_how_to_get_access(client, charlie):
    content = _page(client, "/evaluate/")
    assert "Who may evaluate here" in content and "leaderboard.add_run" in content
    assert 'href="/accounts/login/?next=/evaluate/"' in content and 'href="/submit/"' in content
    assert '<form method="post" class="form-card hosted"' not in content
    client.force_login(charlie)  # signed in, without the permission
    content = _page(client, "/evaluate/")
    assert "does not have it yet" in content
    assert client.post("/evaluate/", {"provider": "openai"}).status_code == 403


def test_the_evaluate_form_has_level_checkboxes_and_shows_the_cost_first(client, bob):
    benchmark_current()
    client.force_login(bob)
    content = _page(client, "/evaluate/")
    assert content.count('type="checkbox" name="levels"') == 4
    assert '<select name="levels"' not in content
    assert "What this run will cost" in content and "no price configured" in content
    assert 'data-field="episodes">264<' in content


@override_settings(
    MIRRORBENCH_PRICES={"openai:gpt-4o": {"input_per_mtok": 2.5, "output_per_mtok": 10}}
)
def test_the_estimate_follows_the_choices_and_prices_a_configured_model(client, bob):
    client.force_login(bob)
    full = client.get("/evaluate/estimate.json?provider=openai&model=gpt-4o&scenes=all").json()
    robot = client.get(
        "/evaluate/estimate.json?provider=openai&model=gpt-4o&scenes=robot&levels=3"
    ).json()
    assert full["episodes"] == 264 and robot["episodes"] == 18
    assert 0 < robot["requests"] <= robot["requests_max"] <= 18 * 21
    assert full["requests"] <= full["requests_max"] == 5064
    assert full["cost_usd"] > robot["cost_usd"] > 0
    other = client.get("/evaluate/estimate.json?provider=anthropic&model=x&levels=0").json()
    assert other["cost_usd"] is None
    # "Update the estimate" re-renders the form with the figures for the choices made.
    response = client.post(
        "/evaluate/",
        {
            "provider": "openai",
            "model": "gpt-4o",
            "levels": ["0"],
            "scenes": "robot",
            "estimate": "1",
        },
    )
    content = response.content.decode()
    assert 'data-field="episodes">18<' in content and "about $" in content
    assert not Run.objects.exists()
