"""Hosted runs: the form and the API, permissions, encrypted keys, refused endpoints.

Alice and bob may start hosted runs (``leaderboard.add_run``); charlie, an outsider, may not
(the users are in ``tests/leaderboard/conftest.py``).
"""

import pytest

from leaderboard.models import Run, RunSecret
from leaderboard.runs.secrets import decrypt

pytestmark = pytest.mark.django_db
KEY = "sk-hosted-secret-4242"
PUBLIC_HOST = "models.example.org"


@pytest.fixture(autouse=True)
def public_dns(monkeypatch):
    """This machine has no DNS: the one public host name these tests use resolves to a public
    address (nothing ever connects to it: the runs' tasks are not executed here)."""
    import socket

    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if host == PUBLIC_HOST:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("8.8.8.8", 443))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def form_data(**changes):
    data = {
        "provider": "openai",
        "base_url": f"https://{PUBLIC_HOST}/v1",
        "model": "gpt-4o",
        "kind": "proprietary",
        "api_key": KEY,
        "levels": ["0", "2"],
        "scenes": "robot",
    }
    return {**data, **changes}


def test_the_form_needs_a_signed_in_user_with_permission(client, alice, bob, charlie):
    # Visitors and users without the permission read who may evaluate, without a form.
    assert "form-card hosted" not in client.get("/evaluate/").content.decode()
    client.force_login(charlie)
    assert "form-card hosted" not in client.get("/evaluate/").content.decode()
    assert client.post("/evaluate/", form_data()).status_code == 403
    for allowed in (alice, bob):
        client.force_login(allowed)
        response = client.get("/evaluate/")
        assert response.status_code == 200 and "form-card hosted" in response.content.decode()


def test_a_hosted_run_is_created_with_its_key_encrypted(
    client, alice, django_capture_on_commit_callbacks
):
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post("/evaluate/", form_data())
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert run.owner == alice and run.agent == "openai:gpt-4o" and run.episodes_expected == 36
    secret = RunSecret.objects.get(run=run)
    assert KEY.encode() not in bytes(secret.api_key)
    assert decrypt(bytes(secret.api_key)) == KEY
    assert KEY not in str(run.spec) and KEY not in str(run.metadata)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"base_url": "http://127.0.0.1:8000/v1"}, "base_url"),
        ({"base_url": "http://10.1.2.3/v1"}, "base_url"),
        ({"base_url": "http://169.254.169.254/latest"}, "base_url"),
        ({"base_url": "ftp://example.org"}, "base_url"),
        ({"provider": "cohere"}, "provider"),
        ({"levels": ["7"]}, "levels"),
        ({"api_key": ""}, "api_key"),
        ({"model": ""}, "model"),
    ],
)
def test_bad_submissions_name_the_field_and_create_nothing(client, alice, changes, field):
    client.force_login(alice)
    response = client.post("/evaluate/", form_data(**changes))
    assert response.status_code == 400
    assert f'id="id_{field}_error"' in response.content.decode()
    assert Run.objects.count() == 0 and RunSecret.objects.count() == 0


def test_private_endpoints_are_allowed_when_the_server_says_so(
    client, alice, settings, django_capture_on_commit_callbacks
):
    settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS = True
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post("/evaluate/", form_data(base_url="http://127.0.0.1:8000/v1"))
    assert response.status_code == 302


def test_the_api_starts_a_hosted_run(client, alice, charlie, django_capture_on_commit_callbacks):
    anonymous = client.post("/api/evaluations/", form_data(), content_type="application/json")
    # Not signed in: 401, saying how to authenticate; signed in without permission: 403.
    assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == "Token"
    client.force_login(charlie)
    assert (
        client.post("/api/evaluations/", form_data(), content_type="application/json").status_code
        == 403
    )
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(
            "/api/evaluations/", form_data(levels=[0, 1, 2, 3]), content_type="application/json"
        )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["episodes"] == 72 and body["url"] == f"/runs/{body['run']}/"
    bad = client.post("/api/evaluations/", form_data(levels=[9]), content_type="application/json")
    assert bad.status_code == 400 and "levels" in bad.json()


def test_the_key_is_erased_when_the_run_ends(alice, django_capture_on_commit_callbacks):
    from leaderboard.runs.services import hosted_run_create, run_cancel

    with django_capture_on_commit_callbacks(execute=False):
        run = hosted_run_create(
            user=alice,
            data={
                **form_data(),
                "levels": [0],
                "params_b": None,
                "entry_name": "",
                "private": False,
            },
        )
    assert RunSecret.objects.filter(run=run).exists()
    assert run_cancel(run=run)
    assert not RunSecret.objects.filter(run=run).exists()


@pytest.mark.parametrize(
    "base_url", ["http://169.254.169.254/v1", "http://2130706433/v1", "http://[::ffff:10.0.0.1]/"]
)
def test_a_run_without_a_key_has_its_base_url_checked_too(base_url):
    from evaluation.config import RunConfig
    from leaderboard.errors import FieldError
    from leaderboard.runs.services import run_create
    from tests.leaderboard.factories import ModelEntryFactory

    with pytest.raises(FieldError) as caught:
        run_create(
            model_entry=ModelEntryFactory(), config=RunConfig(agent="openai:m", base_url=base_url)
        )
    assert caught.value.field == "base_url"
    assert Run.objects.count() == 0


def _generation_sent(body):
    return {k: v for k, v in body.items() if k not in ("model", "messages", "system")}


def _evaluate_one_episode(entry, fake, settings, monkeypatch, captured, **spec_changes):
    """Run one hosted episode in this process against ``fake``; return the run."""
    from evaluation.config import RunConfig
    from evaluation.outbound import ALLOW_PRIVATE_ENV
    from leaderboard.runs.services import run_create, run_start
    from leaderboard.worker import episode_evaluate

    settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS = True
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")  # the worker's own switch (the fake is loopback)
    config = RunConfig(
        agent="openai:fake-vl",
        base_url=fake.base_url,
        scenes="GR1_T2-allegro-logo_0",
        levels=(1,),
        image_size=32,
        use_cache=False,
    )
    with captured(execute=False):
        run = run_create(model_entry=entry, config=config)
    for key, value in spec_changes.items():  # what an older version stored
        run.spec[key] = value
    run.save(update_fields=["spec"])
    (episode_id,) = run_start(run_id=run.pk)
    assert episode_evaluate(episode_id=episode_id) == "completed"
    return run


def test_a_hosted_run_sends_temperature_zero_and_no_cap_or_seed(
    settings, monkeypatch, django_capture_on_commit_callbacks
):
    from evaluation.config import RunConfig
    from tests.evaluation.fake_providers import FakeOpenAI
    from tests.leaderboard.factories import ModelEntryFactory

    assert RunConfig(agent="openai:m").as_dict()["max_tokens"] is None
    with FakeOpenAI() as fake:
        run = _evaluate_one_episode(
            ModelEntryFactory(), fake, settings, monkeypatch, django_capture_on_commit_callbacks
        )
        assert fake.requests
        for request in fake.requests:
            assert _generation_sent(request.body) == {"temperature": 0}
    assert run.spec["max_tokens"] is None and run.spec["seed"] == 0
    # The bundle header says what was sent: no cap, no seed.
    run.refresh_from_db()
    assert run.metadata["generation"] == {"temperature": 0.0, "max_tokens": None}
    # And each stored step, what went on the wire, in the run's bundle too (never the endpoint).
    from leaderboard.models import Step
    from leaderboard.runs.selectors import run_bundle

    steps = Step.objects.filter(episode__run=run)
    assert steps and all(step.request["params"] == {"temperature": 0.0} for step in steps)
    assert all("base_url" not in step.request for step in steps)
    exported = [s for record in run_bundle(run=run)[1:] for s in record["steps"]]
    assert exported and all(s["request"]["params"] == {"temperature": 0.0} for s in exported)


def test_a_run_stored_before_protocol_v3_keeps_its_cap_but_sends_no_seed(
    settings, monkeypatch, django_capture_on_commit_callbacks
):
    from tests.evaluation.fake_providers import FakeOpenAI
    from tests.leaderboard.factories import ModelEntryFactory

    with FakeOpenAI() as fake:
        _evaluate_one_episode(
            ModelEntryFactory(),
            fake,
            settings,
            monkeypatch,
            django_capture_on_commit_callbacks,
            max_tokens=2048,
            seed=0,
        )
        for request in fake.requests:
            assert _generation_sent(request.body) == {"max_tokens": 2048, "temperature": 0}


def test_the_estimate_assumes_a_typical_reply_not_a_cap():
    from evaluation.estimate import OUTPUT_TOKENS, estimate_run
    from simulation.catalogue import select_scenes

    scenes = select_scenes("GR1_T2-allegro-logo_0")
    uncapped = estimate_run(scenes=scenes, levels=[0], provider="anthropic")
    capped = estimate_run(scenes=scenes, levels=[0], provider="anthropic", max_tokens=100)
    assert uncapped.output_tokens == uncapped.requests * OUTPUT_TOKENS
    assert capped.output_tokens == capped.requests * 100


def test_a_step_keeps_what_was_sent_but_never_the_endpoint_or_the_providers_error():
    from leaderboard.models import Step

    record = {
        "index": 0,
        "response": "",
        "option": None,
        "parse_error": "no answer: context_length",
        "executed": False,
        "distance_steps": 7,
        "hand_cell": [0, 0, 0],
        "request": {
            "params": {"temperature": 0.0, "max_tokens": 64000},
            "not_sent": {},
            "images": [{"width": 32, "height": 32, "format": "png", "detail": None, "bytes": 9}],
            "api_version": "2026-10-21",
            "base_url": "https://gw.example/v1/deployments/secret-id",
            "provider_error": {"status": 400, "message": "prompt is too long"},
        },
    }
    step = Step.from_record(1, record)
    assert set(step.request) == {"params", "not_sent", "images", "api_version"}
    assert step.as_record()["request"]["params"] == {"temperature": 0.0, "max_tokens": 64000}
    assert "request" not in Step.from_record(1, {**record, "request": None}).as_record()


SECRET_PATH = "/deployments/dep-5ecret-77/v1"


@pytest.mark.parametrize("who", ["visitor", "other", "owner", "moderator"])
def test_the_endpoint_path_is_shown_to_the_owner_and_moderators_only(
    client, who, alice, charlie, moderator, django_capture_on_commit_callbacks
):
    """Page, bundle download and API: everyone else sees the scheme and host, nothing more."""
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(
            "/evaluate/", form_data(base_url=f"https://{PUBLIC_HOST}{SECRET_PATH}")
        )
    assert response.status_code == 302
    run = Run.objects.get()
    assert run.visibility == Run.Visibility.PUBLIC
    client.logout()
    user = {"visitor": None, "other": charlie, "owner": alice, "moderator": moderator}[who]
    if user is not None:
        client.force_login(user)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    bundle = client.get(f"/runs/{run.pk}/bundle.jsonl").content.decode()
    api = client.get(f"/api/runs/{run.pk}/")
    assert api.status_code == 200
    header = bundle.splitlines()[0]
    whole = f"https://{PUBLIC_HOST}{SECRET_PATH}"
    if who in ("owner", "moderator"):
        assert f'<code class="endpoint">{whole}</code>' in page
        assert whole in header
        assert api.json()["metadata"]["model"]["base_url"] == whole
    else:
        for shown in (page, bundle, api.content.decode()):
            assert "dep-5ecret" not in shown and "/deployments" not in shown
        assert f'<code class="endpoint">https://{PUBLIC_HOST}</code>' in page
        assert f'"base_url":"https://{PUBLIC_HOST}"' in header
        assert api.json()["metadata"]["model"]["base_url"] == f"https://{PUBLIC_HOST}"
    # What is stored keeps the whole endpoint: the workers call it.
    run.refresh_from_db()
    assert run.spec["base_url"] == whole and run.metadata["model"]["base_url"] == whole


@pytest.mark.parametrize(
    ("base_url", "refused"),
    [
        (f"https://{PUBLIC_HOST}/v1", False),
        (f"https://{PUBLIC_HOST}:443/v1", False),
        (f"http://{PUBLIC_HOST}/v1", False),
        (f"https://{PUBLIC_HOST}:8443/v1", True),
        (f"https://{PUBLIC_HOST}:22/v1", True),
        (f"http://{PUBLIC_HOST}:25/", True),
        (f"http://{PUBLIC_HOST}:443/v1", False),
    ],
)
def test_endpoints_chosen_by_users_use_standard_ports_only(client, alice, base_url, refused):
    client.force_login(alice)
    response = client.post("/evaluate/", form_data(base_url=base_url))
    if refused:
        assert response.status_code == 400
        assert 'id="id_base_url_error"' in response.content.decode()
        assert "standard port" in response.content.decode()
        assert Run.objects.count() == 0
    else:
        assert response.status_code == 302, response.content.decode()[-2000:]


def test_staff_and_the_site_may_use_any_port(moderator, django_capture_on_commit_callbacks):
    from evaluation.config import RunConfig
    from leaderboard.runs.services import run_create
    from tests.leaderboard.factories import ModelEntryFactory

    url = f"https://{PUBLIC_HOST}:8443/v1"
    with django_capture_on_commit_callbacks(execute=False):
        for owner in (moderator, None):
            run_create(
                model_entry=ModelEntryFactory(),
                config=RunConfig(agent="openai:m", base_url=url),
                owner=owner,
            )
    assert Run.objects.count() == 2


def test_the_port_rule_can_be_widened_or_lifted(client, alice, settings):
    from leaderboard.runs.endpoints import EndpointRefused, endpoint_check

    url = f"https://{PUBLIC_HOST}:8443/v1"
    with pytest.raises(EndpointRefused, match="standard port 443 or 80"):
        endpoint_check(url, user_chosen=True)
    settings.MIRRORBENCH_ENDPOINT_PORTS = [443, 8443]
    endpoint_check(url, user_chosen=True)
    settings.MIRRORBENCH_ENDPOINT_PORTS = [443]
    with pytest.raises(EndpointRefused):
        endpoint_check(f"http://{PUBLIC_HOST}/v1", user_chosen=True)
    settings.MIRRORBENCH_ENDPOINT_PORTS = []
    endpoint_check(f"https://{PUBLIC_HOST}:22/v1", user_chosen=True)


def test_a_users_outbound_requests_are_capped_per_day(
    alice, moderator, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """At the cap the episode goes back to pending, its steps kept; it resumes the next day.

    Staff's runs are not capped; a new hosted run is refused while the owner's count is full.
    """
    import time

    from evaluation.config import RunConfig
    from evaluation.outbound import ALLOW_PRIVATE_ENV
    from leaderboard.errors import FieldError
    from leaderboard.models import Episode, ProviderWindow, Step
    from leaderboard.runs.limits import DAY_S, owner_requests_today
    from leaderboard.runs.services import hosted_run_create, run_create, run_start
    from leaderboard.worker import episode_evaluate
    from tests.evaluation.fake_providers import FakeOpenAI
    from tests.leaderboard.factories import ModelEntryFactory

    settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS = True
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")  # the worker's own switch (the fake is loopback)
    settings.MIRRORBENCH_USER_REQUESTS_PER_DAY = 3

    def one_episode(owner, fake):
        config = RunConfig(
            agent="openai:fake-vl",
            base_url=fake.base_url,
            scenes="GR1_T2-allegro-logo_0",
            levels=(1,),
            image_size=32,
            use_cache=False,
        )
        with django_capture_on_commit_callbacks(execute=False):
            run = run_create(
                model_entry=ModelEntryFactory(), config=config, owner=owner, api_key="k"
            )
        (episode_id,) = run_start(run_id=run.pk)
        return episode_id

    with FakeOpenAI() as fake:
        episode_id = one_episode(alice, fake)
        assert episode_evaluate(episode_id=episode_id) == "quota"
        assert len(fake.requests) == 3 and owner_requests_today(alice.pk) == 3
        episode = Episode.objects.get(pk=episode_id)
        assert episode.status == Episode.Status.PENDING and episode.claim == ""
        assert Step.objects.filter(episode=episode).count() == 3
        # Until the day is over, nothing more is sent, and no new hosted run is taken.
        assert episode_evaluate(episode_id=episode_id) == "quota"
        assert len(fake.requests) == 3
        with pytest.raises(FieldError, match="requests to model endpoints today"):
            hosted_run_create(user=alice, data={**form_data(), "levels": [0], "params_b": None})
        # Staff are not capped.
        staff_episode = one_episode(moderator, fake)
        assert episode_evaluate(episode_id=staff_episode) == "completed"
        assert owner_requests_today(moderator.pk) == 0
        # The next day (UTC) the count starts again and the episode goes on where it stopped.
        sent = len(fake.requests)
        settings.MIRRORBENCH_USER_REQUESTS_PER_DAY = 1000
        today = int(time.time() // DAY_S)
        assert ProviderWindow.objects.filter(provider=f"owner:{alice.pk}", window=today).exists()
        assert episode_evaluate(episode_id=episode_id) == "completed"
        episode.refresh_from_db()
        steps = Step.objects.filter(episode=episode).count()
        assert episode.status == Episode.Status.COMPLETED and steps > 3
        assert len(fake.requests) - sent == steps - 3  # the first three were not asked again
