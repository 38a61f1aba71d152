"""Who a client is, for every per-address limit, and where the limits keep their state.

Issue 29 (the public site audited as a hostile user), items 3, 4, 5, 9 and 18:

- one setting, ``MIRRORBENCH_TRUSTED_PROXIES``, and one function,
  ``mirrorbench_site.client_ip.client_ip``, decide a client's address for the sign-in lockout,
  the throttles (pages and API) and the sign-up rate; without the setting ``X-Forwarded-For``
  is ignored;
- the sign-in lockout counts failures per user name and address together;
- throttle histories and verification slots live in a cache of their own that page traffic
  cannot evict, and cached pages are keyed by their validated parameters;
- sign-ups per address are throttled.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client, RequestFactory
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from tests.leaderboard.test_abuse_limits import _api_views

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"
PROXY = "10.0.0.2"
MALLORY = "203.0.113.7"
ALICE_HOME = "198.51.100.4"


def rates(monkeypatch, **scopes: str) -> None:
    for scope, rate in scopes.items():
        monkeypatch.setitem(SimpleRateThrottle.THROTTLE_RATES, scope, rate)


def sign_in(client, username: str, password: str, **meta: str):
    return client.post("/accounts/login/", {"username": username, "password": password}, **meta)


def via_proxy(address: str) -> dict[str, str]:
    """What the site sees of a request from ``address`` through the proxy: the proxy's address
    as the peer, the client's in the X-Forwarded-For the proxy appended to."""
    return {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": address}


@pytest.fixture
def alice_password(alice):
    alice.set_password(PASSWORD)
    alice.save()
    return alice


@pytest.fixture
def one_proxy(settings):
    """The documented deployment: one proxy in front of the site."""
    settings.MIRRORBENCH_TRUSTED_PROXIES = 1


# Item 3: behind the proxy, one client's failures never lock out another client.


def test_behind_the_proxy_one_clients_failures_never_lock_out_another(
    client, alice_password, one_proxy, settings
):
    mallory = Client()
    for n in range(settings.AXES_FAILURE_LIMIT + 2):
        sign_in(mallory, f"someone{n}", "guess", **via_proxy(MALLORY))
        sign_in(mallory, "alice", "guess", **via_proxy(MALLORY))
    assert sign_in(mallory, "alice", PASSWORD, **via_proxy(MALLORY)).status_code == 429
    assert sign_in(client, "alice", PASSWORD, **via_proxy(ALICE_HOME)).status_code == 302


def test_behind_the_proxy_each_client_has_its_own_anonymous_play_rate(one_proxy, monkeypatch):
    rates(monkeypatch, play="2/hour")
    first, second = Client(), Client()
    codes = [start_play(first, **via_proxy(MALLORY)).status_code for _ in range(3)]
    assert codes == [201, 201, 429]
    assert start_play(second, **via_proxy(ALICE_HOME)).status_code == 201


def _proxies(raw: str):
    from mirrorbench_site.env import parse_trusted_proxies

    return parse_trusted_proxies("MIRRORBENCH_TRUSTED_PROXIES", raw)


@pytest.mark.parametrize(
    ("trusted", "peer", "forwarded", "expected"),
    [
        # Without the setting the header is ignored, whatever it says.
        ("", "192.0.2.1", "203.0.113.9", "192.0.2.1"),
        ("0", "192.0.2.1", "203.0.113.9, 10.0.0.2", "192.0.2.1"),
        ("", "::ffff:192.0.2.1", None, "192.0.2.1"),
        # A count of proxies: the address the outermost one saw.
        ("1", PROXY, "203.0.113.9", "203.0.113.9"),
        ("1", PROXY, "6.6.6.6, 203.0.113.9", "203.0.113.9"),
        ("2", PROXY, "6.6.6.6, 203.0.113.9, 10.0.0.1", "203.0.113.9"),
        ("2", PROXY, "203.0.113.9", "203.0.113.9"),  # came in through the inner proxy only
        ("1", PROXY, None, PROXY),  # the proxy's own request (a health check)
        ("1", PROXY, "203.0.113.9:4711", "203.0.113.9"),
        ("1", PROXY, "[2001:db8::5]:443", "2001:db8::5"),
        ("1", PROXY, "2001:DB8:0::5", "2001:db8::5"),
        ("1", PROXY, "unknown", PROXY),
        # A list of proxies' addresses: the last address in the chain that is not one of them.
        ("10.0.0.0/8", PROXY, "6.6.6.6, 203.0.113.9, 10.1.1.1", "203.0.113.9"),
        ("10.0.0.0/8", "192.0.2.1", "203.0.113.9", "192.0.2.1"),  # not through the proxy
        ("10.0.0.2, fd00::/8", "fd00::1", "2001:db8::5", "2001:db8::5"),
        ("10.0.0.0/8", PROXY, "10.0.0.3", "10.0.0.3"),  # only proxies: the first of them
    ],
)
def test_the_client_address(settings, trusted, peer, forwarded, expected):
    from mirrorbench_site.client_ip import client_ip

    settings.MIRRORBENCH_TRUSTED_PROXIES = _proxies(trusted)
    meta = {"REMOTE_ADDR": peer}
    if forwarded is not None:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded
    assert client_ip(RequestFactory().get("/", **meta)) == expected


@pytest.mark.parametrize("raw", ["-1", "proxy", "10.0.0.0/33", "1, 10.0.0.1", "1.5"])
def test_a_bad_trusted_proxies_setting_stops_the_process_with_its_name(raw):
    from mirrorbench_site.env import ImproperlyConfiguredEnv

    with pytest.raises(ImproperlyConfiguredEnv, match="MIRRORBENCH_TRUSTED_PROXIES"):
        _proxies(raw)


def test_the_lockout_and_every_throttle_take_the_address_from_the_one_function(settings):
    from rest_framework.settings import api_settings

    from leaderboard.throttles import ClientScopedRateThrottle
    from mirrorbench_site.client_ip import client_ip

    assert settings.AXES_CLIENT_IP_CALLABLE == "mirrorbench_site.client_ip.client_ip"
    assert ClientScopedRateThrottle.get_ident.__module__ == "leaderboard.throttles"
    throttles = list(api_settings.DEFAULT_THROTTLE_CLASSES)
    for _, view in _api_views():
        throttles += list(view.throttle_classes)
    assert throttles and all(issubclass(t, ClientScopedRateThrottle) for t in throttles)
    request = RequestFactory().get("/", REMOTE_ADDR="192.0.2.1")
    assert ClientScopedRateThrottle().get_ident(request) == client_ip(request)


def test_https_without_trusted_proxies_is_a_deploy_warning(settings):
    from leaderboard.checks import trusted_proxies_check

    settings.MIRRORBENCH_HTTPS = True
    settings.MIRRORBENCH_TRUSTED_PROXIES = 0
    assert [w.id for w in trusted_proxies_check(None)] == ["mirrorbench.W001"]
    settings.MIRRORBENCH_TRUSTED_PROXIES = 1
    assert trusted_proxies_check(None) == []


# Item 4: a client cannot pick its throttle identity.


def start_play(client, **meta: str):
    return client.post("/play/start/", {"scene": "male_1-mano_white-splash", "level": 0}, **meta)


@pytest.fixture
def _small_frames(settings, tmp_path):
    settings.MIRRORBENCH_PLAY_IMAGE_SIZE = 32
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.mark.usefixtures("_small_frames")
def test_a_rotating_forwarded_for_does_not_escape_the_anonymous_play_rate(client, monkeypatch):
    rates(monkeypatch, play="2/hour")
    codes = [start_play(client, HTTP_X_FORWARDED_FOR=f"192.0.2.{n}").status_code for n in range(5)]
    assert codes == [201, 201, 429, 429, 429]


@pytest.mark.usefixtures("_small_frames")
def test_behind_the_proxy_entries_a_client_writes_itself_are_ignored(
    client, one_proxy, monkeypatch
):
    rates(monkeypatch, play="2/hour")
    codes = [
        start_play(client, **via_proxy(f"192.0.2.{n}, {MALLORY}")).status_code for n in range(4)
    ]
    assert codes == [201, 201, 429, 429]


class _Probe(APIView):
    """An anonymous API write with a scope, as the API's views declare them."""

    throttle_scope = "probe"

    def post(self, request):
        return Response({"ok": True})


def test_a_rotating_forwarded_for_does_not_escape_an_anonymous_api_rate(monkeypatch):
    rates(monkeypatch, probe="2/hour")
    factory = APIRequestFactory()
    view = _Probe.as_view()
    codes = [
        view(factory.post("/", {}, HTTP_X_FORWARDED_FOR=f"192.0.2.{n}")).status_code
        for n in range(4)
    ]
    assert codes == [200, 200, 429, 429]


# Item 5: anonymous traffic cannot evict anyone's limit state.

FLOOD = 850


@pytest.mark.usefixtures("_small_frames")
def test_a_flood_of_anonymous_pages_resets_neither_a_token_rate_nor_a_verification_slot(
    client, alice, settings, monkeypatch
):
    from leaderboard.submissions.services import QuotaExceeded, _verification_slot

    rates(monkeypatch, tokens="2/hour")
    settings.MIRRORBENCH_MAX_ACTIVE_VERIFICATIONS = 1
    client.force_login(alice)
    codes = [client.post("/accounts/tokens/", {"name": f"t{n}"}).status_code for n in range(3)]
    assert codes[-1] == 429 and 429 not in codes[:-1]
    visitor = Client()
    with _verification_slot(alice):
        for n in range(FLOOD):
            assert visitor.get(f"/?x={n}").status_code == 200
        # Other traffic fills the page cache too (each distinct table is one entry).
        for n in range(1000):
            cache.set(f"page-{n}", "x" * 100)
        assert client.post("/accounts/tokens/", {"name": "again"}).status_code == 429
        with pytest.raises(QuotaExceeded), _verification_slot(alice):
            pass


def test_unknown_parameters_share_the_cached_page(client, monkeypatch):
    from leaderboard.boards import views

    built = []
    real = views.leaderboard_table

    def counting(**kwargs):
        built.append(kwargs["filters"])
        return real(**kwargs)

    monkeypatch.setattr(views, "leaderboard_table", counting)
    plain = client.get("/")
    noisy = client.get("/?x=1&utm_source=mail")
    assert plain.status_code == noisy.status_code == 200
    assert len(built) == 1
    board = str(noisy.context["board"])  # the cached part (the header's sign-in link is not)
    assert "x=1" not in board and "utm_source" not in board
    # The same filters, written differently: one entry; other filters: another.
    client.get("/?params_min=1")
    client.get("/?params_min=1.0&sort=rank")
    assert len(built) == 2
    searched = str(client.get("/?q=gpt&x=2").context["board"])
    assert len(built) == 3
    assert "q=gpt" in searched and "x=2" not in searched


def test_a_tables_links_keep_every_filter_and_nothing_else():
    from leaderboard.boards.forms import LeaderboardQueryForm
    from leaderboard.boards.views import filters_query

    every = {
        "kind": ["open-weights", "proprietary"],
        "source": ["evaluated", "verified"],
        "params_min": "1.5",
        "params_max": "70",
        "q": "gpt",
        "sort": "model",
        "order": "desc",
        "version": "v2",
        "rendered_by": "isaac",
        "baselines": "show",
        "ci": "show",
        "organisation": ["OpenAI"],
        "released_from": "2024-01-01",
        "released_to": "2025-12-31",
        "reasoning": ["high"],
        "licence": ["apache-2.0"],
        "scaffold": ["model"],
    }
    form = LeaderboardQueryForm(every)
    assert form.is_valid(), form.errors
    query = filters_query(form.filters())
    assert set(query) == set(form.fields)  # a new filter must be kept by the links too
    again = LeaderboardQueryForm(query)
    assert again.is_valid() and again.filters() == form.filters()
    defaults = LeaderboardQueryForm({"sort": "rank", "order": "asc", "x": "1"})
    assert defaults.is_valid() and filters_query(defaults.filters()).urlencode() == ""


# Item 9: nobody without the password keeps an account locked.


def test_failures_from_one_address_lock_that_address_and_not_the_owner(alice_password, settings):
    mallory, alice_browser = Client(), Client()
    for _ in range(settings.AXES_FAILURE_LIMIT + 3):
        sign_in(mallory, "alice", "guess", REMOTE_ADDR=MALLORY)
    assert sign_in(mallory, "alice", PASSWORD, REMOTE_ADDR=MALLORY).status_code == 429
    assert sign_in(alice_browser, "alice", PASSWORD, REMOTE_ADDR=ALICE_HOME).status_code == 302


def test_staff_can_lift_a_lockout_with_the_documented_command(alice_password, settings):
    from pathlib import Path

    locked = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in(locked, "alice", "guess", REMOTE_ADDR=MALLORY)
    assert sign_in(locked, "alice", PASSWORD, REMOTE_ADDR=MALLORY).status_code == 429
    call_command("axes_reset_username", "alice")
    assert sign_in(locked, "alice", PASSWORD, REMOTE_ADDR=MALLORY).status_code == 302
    docs = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text()
    assert "manage.py axes_reset_username" in docs


# Item 18: sign-ups per address are throttled.


def sign_up(client, name: str, **meta: str):
    data = {
        "username": name,
        "email": f"{name}@example.org",
        "password1": "mirror-mirror-on-the-wall",
        "password2": "mirror-mirror-on-the-wall",
    }
    return client.post("/accounts/signup/", data, **meta)


def test_sign_ups_from_one_address_are_limited_and_another_is_not(monkeypatch):
    rates(monkeypatch, signups="2/hour")
    for n in range(2):
        browser = Client()
        assert sign_up(browser, f"new{n}", REMOTE_ADDR=MALLORY).status_code == 302
    refused = sign_up(Client(), "new2", REMOTE_ADDR=MALLORY, HTTP_X_FORWARDED_FOR="192.0.2.9")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "Too many sign-ups from your address" in refused.content.decode()
    assert not User.objects.filter(username="new2").exists()
    assert sign_up(Client(), "new2", REMOTE_ADDR=ALICE_HOME).status_code == 302


def test_a_sign_up_form_with_mistakes_does_not_count(monkeypatch):
    rates(monkeypatch, signups="1/hour")
    browser = Client()
    bad = browser.post("/accounts/signup/", {"username": "x", "email": "nope"}, REMOTE_ADDR=MALLORY)
    assert bad.status_code == 400
    assert sign_up(browser, "newcomer", REMOTE_ADDR=MALLORY).status_code == 302
