"""The API against its own OpenAPI schema: generated requests never get a 5xx or a wrong shape.

schemathesis reads ``/api/schema/`` (drf-spectacular) through the site's WSGI application,
in-process, and sends each operation requests generated from the schema, valid and invalid
alike: every answer must be below 500 and match the documented schema of its status. The
examples are bounded and derandomized, so a run is reproducible. Generated ids rarely name a
row, so the rows that exist are asked for by id as well. The rows are made once for the
module; what the requests write is undone after each test.
"""

import socket
from dataclasses import dataclass

import factory.random
import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from rest_framework.throttling import ScopedRateThrottle
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from leaderboard.models import ApiToken, Episode, ModelEntry, Run
from leaderboard.runs.imports import reference_results_load
from leaderboard.submissions.tokens import key_hash
from tests.conftest import Unblock
from tests.leaderboard.factories import UserFactory, import_run, make_bundle

CHECKS = [not_a_server_error, response_schema_conformance]
FUZZ = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def _load_schema():
    from mirrorbench_site.wsgi import application

    # Read when the tests are collected: the schema view needs no database.
    return schemathesis.openapi.from_wsgi("/api/schema/", application)


schema = _load_schema()


@pytest.fixture(scope="module")
def small_bundle(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bundles")
    return make_bundle(
        folder / "random.jsonl", scenes="female_1-mano_white-bread,nova_carter-allegro-logo_0"
    )


@pytest.fixture
def in_test_transaction():
    """Requests leave the test's database connection open, as Django's test client does.

    At the end of a request Django closes a connection that is not in autocommit mode: the
    test's transaction, here, since the requests go through the WSGI application itself.
    """
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def no_dns(monkeypatch):
    """Generated base URLs name random hosts: none is looked up outside this machine."""
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if host in ("localhost", "127.0.0.1", "::1"):
            return real(host, *args, **kwargs)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@dataclass(frozen=True)
class Rows:
    """What the module's tests read: alice, and her public run."""

    alice: User
    run: Run


@pytest.fixture(scope="module")
def rows(module_rows: Unblock, small_bundle) -> Rows:
    """The paper's results, alice's public run with episodes in error, and her private run:
    made once for the module, read by every example of every test."""
    factory.random.reseed_random("mirrorbench")
    with module_rows():
        alice = UserFactory(username="alice", permissions=["leaderboard.add_run"])
        reference_results_load()
        run = import_run(small_bundle, "Random here", kind="baseline")
        Run.objects.filter(pk=run.pk).update(owner=alice)
        run.episodes.filter(level=1).update(
            status=Episode.Status.ERROR,
            error="transport error after 3 attempts: openai request failed with HTTP 429",
        )
        private = import_run(small_bundle, "Hidden model", kind="baseline")
        Run.objects.filter(pk=private.pk).update(visibility=Run.Visibility.PRIVATE, owner=alice)
    return Rows(alice=alice, run=run)


@pytest.fixture
def alice(rows: Rows) -> User:
    """The owner of the module's runs (tests/leaderboard/conftest.py's alice, made once)."""
    return rows.alice


@pytest.fixture
def api_data(db, in_test_transaction, no_dns, rows: Rows) -> Run:
    """The module's rows, and alice's public run among them."""
    return rows.run


@pytest.fixture
def unthrottled(monkeypatch, settings):
    """Every generated submission reaches the view: no rate, no cap on hosted runs."""
    monkeypatch.setitem(ScopedRateThrottle.THROTTLE_RATES, "evaluations", "1000000/hour")
    settings.MIRRORBENCH_MAX_ACTIVE_RUNS = 10**6
    settings.MIRRORBENCH_MAX_EPISODES_PER_DAY = 10**9


@schema.parametrize()
@FUZZ
def test_anonymous_requests_get_no_server_error_and_the_documented_shape(case, api_data):
    case.call_and_validate(checks=CHECKS)


@schema.include(method="POST", path="/api/evaluations/").parametrize()
@FUZZ
def test_an_evaluators_requests_get_no_server_error_and_the_documented_shape(
    case, api_data, unthrottled, alice
):
    key = _fuzz_token(alice)
    case.call_and_validate(headers={"Authorization": f"Token {key}"}, checks=CHECKS)


def test_every_row_that_exists_is_served_in_the_documented_shape(api_data, alice):
    key = _fuzz_token(alice)
    owner = {"Authorization": f"Token {key}"}
    cases = [
        *(
            schema["/api/models/{slug}/"]["GET"].Case(path_parameters={"slug": slug})
            for slug in ModelEntry.objects.values_list("slug", flat=True)
        ),
        *(
            schema["/api/runs/{run_id}/"]["GET"].Case(path_parameters={"run_id": pk})
            for pk in Run.objects.values_list("pk", flat=True)
        ),
        *(
            schema["/api/episodes/{episode_id}/"]["GET"].Case(
                path_parameters={"episode_id": pk}, headers=headers
            )
            for pk in Episode.objects.filter(run__model_entry__name="Random here").values_list(
                "pk", flat=True
            )
            for headers in ({}, owner)
        ),
        *(
            schema["/api/leaderboards/{table}/"]["GET"].Case(
                path_parameters={"table": table}, query={"source": ["reported", "evaluated"]}
            )
            for table in ("overall", "0", "1", "2", "3")
        ),
        schema["/api/episodes/"]["GET"].Case(query={"run": api_data.pk, "status": "error"}),
        schema["/api/tracks/"]["GET"].Case(query={"source": ["reported", "evaluated"]}),
    ]
    statuses = {case.call_and_validate(checks=CHECKS).status_code for case in cases}
    assert statuses == {200, 404}  # the private run is not found
    errored = api_data.episodes.filter(status=Episode.Status.ERROR).first()
    detail = schema["/api/episodes/{episode_id}/"]["GET"].Case(
        path_parameters={"episode_id": errored.pk}, headers=owner
    )
    error = detail.call_and_validate(checks=CHECKS).json()["error"]
    assert error["category"] and error["detail"].startswith("transport error")


FUZZ_KEY = "mb_fuzz-token-of-the-examples"


def _fuzz_token(user) -> str:
    """One token for every example of a test (hypothesis runs hundreds in one transaction)."""
    ApiToken.objects.get_or_create(
        user=user, name="fuzz", defaults={"prefix": FUZZ_KEY[:10], "key_hash": key_hash(FUZZ_KEY)}
    )
    return FUZZ_KEY
