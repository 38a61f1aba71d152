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
    # Read before the button that spends it.
    assert content.index("What this run will cost") < content.index("Start the run")
    assert "Each account may have 2 hosted runs pending or running" in content


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


EVALUATE = {
    "provider": "openai",
    "model": "gpt-4o",
    "kind": "proprietary",
    "api_key": "sk-typed-secret-4242",
    "levels": ["0"],
    "scenes": "robot",
}


def test_a_refused_endpoint_says_why_once_who_may_allow_it_and_that_the_key_went(client, bob):
    client.force_login(bob)
    response = client.post("/evaluate/", {**EVALUATE, "base_url": "http://127.0.0.1:9/v1"})
    assert response.status_code == 400
    assert response.context["form"].errors["base_url"] == [
        "Host 127.0.0.1 is a loopback address: model APIs are called on public addresses only. "
        "If you run this site: MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS=1 in the environment of the "
        "web server and the workers allows endpoints on loopback and private networks (vLLM, "
        "Ollama on the same machine) and on any port; restart them after setting it."
    ]
    content = response.content.decode()
    assert 'id="id_base_url_error"' in content and "base_url host" not in content
    # The key is not echoed back into the page; the page says it must be typed again.
    assert "sk-typed-secret-4242" not in content
    assert "Enter your API key again" in content
    assert 'autocomplete="off"' in content.split('name="api_key"')[1].split(">")[0]
    # A refusal that no setting lifts does not point at one.
    response = client.post("/evaluate/", {**EVALUATE, "base_url": "ftp://example.org/v1"})
    [error] = response.context["form"].errors["base_url"]
    assert error.startswith("Enter a valid URL") or error.startswith("The scheme is ftp")
    assert "MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS" not in error
    # Without a key typed, nothing to ask again.
    response = client.post("/evaluate/", {**EVALUATE, "api_key": "", "estimate": "1"})
    assert "Enter your API key again" not in response.content.decode()


def test_staff_are_not_told_of_caps_that_do_not_apply_to_them(client):
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    content = _page(client, "/evaluate/")
    assert "your runs have no per-account caps" in content
    assert "Each account may have" not in content


def test_a_started_run_says_it_is_queued_on_its_page(
    client, bob, django_capture_on_commit_callbacks
):
    client.force_login(bob)
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post("/evaluate/", EVALUATE, follow=True)
    run = Run.objects.get()
    assert response.redirect_chain == [(f"/runs/{run.pk}/", 302)]
    [said] = [str(m) for m in response.context["messages"]]
    assert said.startswith(f"Run {run.pk} is queued: this page follows it")
    assert said in response.content.decode()


def test_form_errors_read_as_sentences_and_passwords_are_new_ones(client):
    content = _page(client, "/accounts/signup/")
    assert content.count('autocomplete="new-password"') == 2
    data = {"username": "newbie", "email": "n@example.org", "password1": "short"}
    response = client.post("/accounts/signup/", {**data, "password2": "short"})
    content = response.content.decode()
    assert response.status_code == 400
    assert "This password is too short" in content
    assert "password1</code>" not in content and "password1:" not in content
    # The error is the one the input names as describing it.
    assert 'aria-describedby="id_password1_error"' in content
    assert '<div class="field-errors" id="id_password1_error">' in content
    response = client.post("/accounts/signup/", {**data, "password2": "other"})
    assert "The two passwords differ" in response.content.decode()
    # Help text: commands in backticks are set as code, the backticks gone.
    client.force_login(UserFactory(username="alice"))
    content = _page(client, "/submit/")
    assert "The .jsonl file that <code>mirrorbench run</code> wrote." in content
    assert "`" not in content.split("<main")[1]


def test_signing_up_and_revoking_a_token_say_what_they_did(client):
    password = "mirror-mirror-on-the-wall"
    data = {"username": "beth", "email": "beth@example.org"}
    response = client.post(
        "/accounts/signup/", {**data, "password1": password, "password2": password}, follow=True
    )
    [said] = [str(m) for m in response.context["messages"]]
    assert said.startswith("Welcome, beth: your account is made and you are signed in.")
    client.post("/accounts/tokens/", {"name": "laptop"})
    token = response.context["user"].api_tokens.get()
    response = client.post(f"/accounts/tokens/{token.pk}/revoke/", follow=True)
    assert [str(m) for m in response.context["messages"]] == [
        "Token revoked: requests that carry it are refused from now on."
    ]
