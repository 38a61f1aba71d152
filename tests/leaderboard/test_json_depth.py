"""A deeply nested JSON body is answered 400, never 500 (Python's json recurses per level)."""

from __future__ import annotations

import json

import pytest
from django.urls import URLPattern, reverse

from leaderboard import api_urls
from leaderboard.parsers import MAX_JSON_DEPTH, json_depth_exceeds

pytestmark = pytest.mark.django_db
DEEP = 100_000
SAMPLE_KWARGS = {
    "slug": "gpt-4o",
    "table": "overall",
    "run_id": 1,
    "episode_id": 1,
    "submission_id": 1,
}


def nested(depth: int, kind: str = "array") -> bytes:
    if kind == "array":
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


@pytest.fixture
def signed_in(client, alice):
    """alice may start hosted runs: her requests reach the parser."""
    client.force_login(alice)
    client.raise_request_exception = False  # a crash is a 500 here, as a visitor sees it
    return client


def test_the_depth_counts_brackets_outside_strings_only():
    assert not json_depth_exceeds("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)
    assert json_depth_exceeds("[" * (MAX_JSON_DEPTH + 1))
    assert json_depth_exceeds('{"a":' * (MAX_JSON_DEPTH + 1))
    assert not json_depth_exceeds(json.dumps(["[" * 1000, "{" * 1000]))
    # An escaped quote does not end the string: its brackets still do not count.
    assert not json_depth_exceeds(json.dumps({"k": '"' + "[" * 1000 + '\\"' + "{" * 1000}))
    wide = json.dumps([[i, {"x": [i]}] for i in range(5000)])
    assert not json_depth_exceeds(wide)


@pytest.mark.parametrize("kind", ["array", "object"])
def test_evaluations_answers_100000_levels_with_a_400_naming_the_depth(signed_in, settings, kind):
    settings.MIRRORBENCH_MAX_REQUEST_BYTES = 1024 * 1024  # past the body limit, to the parser
    response = signed_in.post("/api/evaluations/", nested(DEEP, kind), "application/json")
    assert response.status_code == 400, response.content[:300]
    assert f"nested more than {MAX_JSON_DEPTH} levels deep" in response.json()["detail"]


def test_evaluations_answers_a_deep_body_under_the_size_limit_with_a_400(signed_in):
    depth = 30_000  # 60 KB: under the 64 KB body limit
    response = signed_in.post("/api/evaluations/", nested(depth), "application/json")
    assert response.status_code == 400
    assert "levels deep" in response.json()["detail"]
    # The fields of a normal body are still read and checked.
    normal = signed_in.post("/api/evaluations/", {"provider": "nope"}, "application/json")
    assert normal.status_code == 400 and "provider" in normal.json()


def _api_paths() -> list[str]:
    paths = []
    for pattern in api_urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        kwargs = {name: SAMPLE_KWARGS[name] for name in pattern.pattern.converters}
        paths.append(reverse(pattern.name, kwargs=kwargs))
    return paths


def test_no_api_route_answers_a_deep_body_with_a_server_error(signed_in, settings):
    settings.MIRRORBENCH_MAX_REQUEST_BYTES = 1024 * 1024
    answers = {
        (method, path): getattr(signed_in, method)(path, nested(DEEP), "application/json")
        for path in _api_paths()
        for method in ("post", "put", "patch")
    }
    assert len(answers) == 3 * len(api_urls.urlpatterns) > 40
    assert {key: r.status_code for key, r in answers.items() if r.status_code >= 500} == {}
