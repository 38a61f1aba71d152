"""Abuse limits: sign-in lockout, throttled writes, and only sessions and tokens on the API."""

from __future__ import annotations

import base64
import io
import json
import tracemalloc

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView

from benchmarks import verify_limits as costly
from evaluation.verify import MAX_ERRORS_PER_RECORD, MAX_PROBLEMS
from leaderboard.models import Run, Submission
from leaderboard.submissions.services import SHOWN_PROBLEMS
from leaderboard.submissions.tokens import api_token_create
from tests.leaderboard.test_hosted_runs import form_data, public_dns  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("public_dns")]

PASSWORD = "correct horse battery staple"


def sign_in(client, username: str, password: str):
    return client.post("/accounts/login/", {"username": username, "password": password})


def test_the_right_password_is_refused_after_repeated_failures(client, alice, settings):
    alice.set_password(PASSWORD)
    alice.save()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert sign_in(client, "alice", "guess").status_code == 200  # the form again
    locked = sign_in(client, "alice", "guess")
    assert locked.status_code == 429
    assert "Too many failed sign-ins" in locked.content.decode()
    assert "Try again in 15 minutes" in locked.content.decode()
    # Now even the right password does not get in, and nobody is signed in.
    assert sign_in(client, "alice", PASSWORD).status_code == 429
    assert "_auth_user_id" not in client.session


def test_a_success_before_the_limit_resets_the_count(client, alice, settings):
    alice.set_password(PASSWORD)
    alice.save()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in(client, "alice", "guess")
    assert sign_in(client, "alice", PASSWORD).status_code == 302
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in(client, "alice", "guess")
    assert sign_in(client, "alice", PASSWORD).status_code == 302


def test_the_api_takes_no_passwords_but_takes_tokens(client, alice):
    alice.set_password(PASSWORD)
    alice.save()
    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    refused = client.post(
        "/api/evaluations/",
        form_data(levels=[0]),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Basic {basic}",
    )
    assert refused.status_code in (401, 403)
    assert Run.objects.count() == 0
    key = api_token_create(user=alice, name="test").key
    accepted = client.post(
        "/api/evaluations/",
        {**form_data(), "levels": [0]},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert accepted.status_code == 201, accepted.content
    assert Run.objects.get().owner == alice


def test_the_evaluations_api_is_throttled_per_user(client, alice, bob, settings, monkeypatch):
    from rest_framework.throttling import SimpleRateThrottle

    settings.MIRRORBENCH_MAX_ACTIVE_RUNS = 100
    rates = {**SimpleRateThrottle.THROTTLE_RATES, "evaluations": "2/hour"}
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", rates)

    def post(name: str):
        data = {**form_data(), "levels": [0], "entry_name": name}
        return client.post("/api/evaluations/", data, content_type="application/json")

    client.force_login(alice)
    assert [post("Alice's").status_code for _ in range(2)] == [201, 201]
    third = post("Alice's")
    assert third.status_code == 429 and int(third["Retry-After"]) > 0
    assert Run.objects.count() == 2
    # The form counts against the same rate.
    page = client.post("/evaluate/", form_data(entry_name="Alice's"))
    assert page.status_code == 429 and "Too many requests" in page.content.decode()
    assert "Try again\nin 60 minutes." in page.content.decode()  # 2/hour: about an hour to wait
    assert int(page["Retry-After"]) > 0
    assert Run.objects.count() == 2
    client.force_login(bob)  # another user has a rate of his own
    assert post("Bob's").status_code == 201


def _api_views():
    def walk(patterns):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns)
            elif isinstance(pattern, URLPattern):
                view = getattr(pattern.callback, "cls", None)
                if view is not None and issubclass(view, APIView):
                    yield str(pattern.pattern), view

    return list(walk(get_resolver().url_patterns))


def test_every_api_view_that_writes_has_a_throttle_scope():
    writers = [
        (route, view)
        for route, view in _api_views()
        if any(hasattr(view, m) for m in ("post", "put", "patch", "delete"))
    ]
    assert writers, "no API view writes"
    for route, view in writers:
        assert getattr(view, "throttle_scope", None), f"{route} ({view.__name__}) has no scope"


def test_the_api_index_lists_every_endpoint_and_each_answers(client):
    index = client.get("/api/", HTTP_ACCEPT="application/json")
    assert index.status_code == 200
    rows = index.json()
    listed = {row["url"] for row in rows}
    for route, _ in _api_views():
        if route == "":
            continue  # the index itself
        url = "/api/" + route.replace("<slug:slug>", "{slug}").replace("<str:table>", "{table}")
        url = url.replace("<int:run_id>", "{id}").replace("<int:episode_id>", "{id}")
        url = url.replace("<int:submission_id>", "{id}")
        assert url in listed, f"{url} is not in the index"
    assert all(row["description"] for row in rows)
    for row in rows:
        if row["method"] == "GET" and "{" not in row["url"]:
            assert client.get(row["url"]).status_code == 200, row["url"]


@pytest.mark.parametrize("body", ["5", '"text"', "null", "[]", "[1, 2]", "true"])
def test_a_json_body_that_is_not_an_object_is_a_400(client, alice, body):
    client.force_login(alice)
    response = client.post("/api/evaluations/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert Run.objects.count() == 0


@pytest.mark.parametrize(
    ("value", "words"),
    [(1, "1 second"), (45.2, "45 seconds"), (119, "119 seconds"), (3593, "60 minutes")],
)
def test_a_wait_reads_in_seconds_or_minutes(value, words):
    from datetime import timedelta

    from leaderboard.templatetags.leaderboard_extras import duration

    assert duration(value) == words
    assert duration(timedelta(seconds=value)) == words


# Crafted bundles: refused with a few short problems, in little memory, up to the size limit.

MIB = 2**20
SIZE_LIMIT = 300_000
META = {"model_name": "Crafted 1B", "kind": "open-weights", "params_b": "1"}


def _upload(client, content: bytes):
    bundle = io.BytesIO(content)
    bundle.name = "results.jsonl"
    return client.post("/api/submissions/", {**META, "bundle": bundle})


@pytest.mark.parametrize("kind", costly.CRAFTED)
def test_a_crafted_bundle_at_the_size_limit_is_refused_in_little_memory(
    client, alice, settings, tmp_path, kind
):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MIRRORBENCH_MAX_BUNDLE_BYTES = SIZE_LIMIT
    content = costly.CRAFTED[kind](SIZE_LIMIT)
    assert SIZE_LIMIT * 0.8 < len(content) <= SIZE_LIMIT
    client.force_login(alice)
    tracemalloc.start()
    try:
        response = _upload(client, content)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert response.status_code == 400, response.content[:300]
    lines = response.json()["bundle"]
    assert lines[0].startswith("does not verify (")
    assert 2 <= len(lines) <= SHOWN_PROBLEMS + 1 and all(len(line) < 300 for line in lines)
    assert all(line.startswith(("line ", "header (line 1)", "missing")) for line in lines[1:])
    assert peak < 60 * MIB, peak  # the empty steps took 2 GB in a web worker before
    assert not Submission.objects.exists() and not Run.objects.exists()
    over = _upload(client, content + b" " * (SIZE_LIMIT + 1 - len(content)))
    assert over.status_code == 400
    assert f"larger than the limit of {SIZE_LIMIT} bytes" in over.json()["bundle"][0]


def test_past_the_problem_limit_an_upload_says_that_checking_stopped(
    client, alice, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    bad = json.dumps(costly.episode(level=9, track="Alien", steps=[costly.BAD_STEP]))
    lines = MAX_PROBLEMS // (MAX_ERRORS_PER_RECORD + 1) + 10
    content = "\n".join([json.dumps(costly.header()), *[bad] * lines]).encode() + b"\n"
    client.force_login(alice)
    response = _upload(client, content)
    assert response.status_code == 400
    shown = response.json()["bundle"]
    assert shown[0] == f"does not verify ({MAX_PROBLEMS} problems); nothing was stored"
    assert len(shown) == SHOWN_PROBLEMS + 1
    assert (
        shown[-1] == f"checking stopped after {MAX_PROBLEMS} problems: the bundle is wrong all over"
    )
