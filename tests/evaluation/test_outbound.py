"""The outbound policy: which endpoints a model client may call, checked when it connects.

Everything here stays on this machine: refused URLs are refused before any connection, public
literal addresses are only checked (never called), and the servers that answer are the loopback
fakes of ``fake_providers``, reached under made-up host names that the policy's resolver maps.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from evaluation import adapters, outbound
from evaluation.adapters import RetryPolicy
from evaluation.cli import main
from evaluation.messages import Message, TextPart, TransportError
from evaluation.outbound import (
    ALLOW_PRIVATE_ENV,
    EndpointRefused,
    address_refusal,
    http_client,
    url_check,
)
from evaluation.public import ErrorSummary, error_summary
from tests.evaluation.fake_providers import (
    FakeAnthropic,
    FakeOpenAI,
    FakeProvider,
    Scripted,
    openai_error,
    redirect,
    self_signed,
)
from tests.evaluation.test_model_runs import run_args

if TYPE_CHECKING:
    from evaluation.adapters import AnthropicClient, OpenAIChatClient

# A client's SDK loads when a test first names its class (``adapters.OpenAIChatClient``), not
# when pytest collects the module in every xdist worker; one worker runs the tests that load them.
pytestmark = pytest.mark.xdist_group("sdk")

KEY = "sk-outbound-test"
QUICK = RetryPolicy(max_attempts=3, base_delay_s=0.0, jitter=0.0)
CONVERSATION = [Message("user", (TextPart("Where is the mark? Choice: [n]"),))]
PUBLIC_HOST = "models.example.test"


@pytest.fixture(autouse=True)
def policy_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default: no opt-in from the environment (tests that need one ask for it)."""
    monkeypatch.delenv(ALLOW_PRIVATE_ENV, raising=False)


def resolving(monkeypatch: pytest.MonkeyPatch, *answers: str) -> list[str]:
    """Make the policy's resolver answer ``PUBLIC_HOST`` with each of ``answers`` in turn (the
    last one from then on); return the list of names it was asked for."""
    asked: list[str] = []
    real = outbound.resolve
    queue = list(answers)

    def resolve(host: str, port: int) -> list[str]:
        if host != PUBLIC_HOST:
            return real(host, port)
        asked.append(host)
        return [queue.pop(0) if len(queue) > 1 else queue[0]]

    monkeypatch.setattr(outbound, "resolve", resolve)
    return asked


# The check itself.

REFUSED = [
    # Loopback, in every notation the resolver accepts.
    ("http://127.0.0.1:8000/v1", "loopback"),
    ("http://localhost:11434/v1", "loopback"),
    ("http://127.1/", "loopback"),
    ("http://2130706433/", "loopback"),
    ("http://0x7f.1/", "loopback"),
    ("http://0x7f000001/", "loopback"),
    ("http://017700000001/", "loopback"),
    ("http://0177.0.0.1/", "Invalid IPv4 address"),  # httpx2 will not parse dotted octal
    ("http://127.255.255.254/", "loopback"),
    ("http://[::1]:8000/v1", "loopback"),
    # Private, link-local, shared and special IPv4 ranges.
    ("http://10.1.2.3/v1", "private"),
    ("http://172.16.0.1/", "private"),
    ("http://172.31.255.255/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://100.64.0.1/", "carrier-grade NAT"),
    ("http://100.127.255.254/", "carrier-grade NAT"),
    ("http://0.0.0.0:8000/", "this network"),
    ("http://0/", "this network"),
    ("http://0.1.2.3/", "this network"),
    ("http://224.0.0.1/", "multicast"),
    ("http://239.255.255.250/", "multicast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://255.255.255.255/", "reserved"),
    ("http://198.18.0.1/", "benchmarking"),
    ("http://198.19.255.254/", "benchmarking"),
    ("http://192.0.2.10/", "documentation"),
    ("http://198.51.100.7/", "documentation"),
    ("http://203.0.113.9/", "documentation"),
    ("http://192.0.0.9/", "IETF protocol assignment"),
    ("http://192.88.99.1/", "6to4 relay"),
    # IPv6 ranges that are not global.
    ("http://[::]/", "unspecified"),
    ("http://[fc00::1]/", "unique local"),
    ("http://[fd12:3456:789a::1]/", "unique local"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[fec0::1]/", "site-local"),
    ("http://[ff02::1]/", "multicast"),
    ("http://[2001:db8::1]/", "documentation"),
    ("http://[3fff::1]/", "documentation"),
    ("http://[100::1]/", "discard-only"),
    ("http://[2001:2::1]/", "IETF protocol assignment"),
    ("http://[5f00::1]/", "outside the global unicast range"),
    # IPv6 forms that carry an IPv4 address.
    ("http://[::ffff:127.0.0.1]/", "IPv4-mapped"),
    ("http://[::ffff:7f00:1]/", "IPv4-mapped"),
    ("http://[::ffff:10.0.0.1]/", "IPv4-mapped"),
    ("http://[::ffff:8.8.8.8]/", "IPv4-mapped"),
    ("http://[::127.0.0.1]/", "IPv4-compatible"),
    ("http://[::8.8.8.8]/", "IPv4-compatible"),
    ("http://[2002:7f00:1::1]/", "6to4 address of 127.0.0.1"),
    ("http://[2002:a00:1::1]/", "6to4 address of 10.0.0.1"),
    ("http://[2002:a9fe:a9fe::1]/", "6to4 address of 169.254.169.254"),
    ("http://[2001::1]/", "Teredo"),
    ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo"),
    ("http://[64:ff9b::127.0.0.1]/", "NAT64 address of 127.0.0.1"),
    ("http://[64:ff9b::a00:1]/", "NAT64 address of 10.0.0.1"),
    ("http://[64:ff9b::a9fe:a9fe]/", "NAT64 address of 169.254.169.254"),
    ("http://[64:ff9b:1::808:808]/", "local-use NAT64"),
    # Not http(s), no host, credentials.
    ("ftp://8.8.8.8/", "scheme"),
    ("file:///etc/passwd", "scheme"),
    ("gopher://8.8.8.8:70/", "scheme"),
    ("8.8.8.8/v1", "scheme"),
    ("http:///v1", "no host"),
    ("https://user:password@8.8.8.8/v1", "credentials"),
    ("https://user@8.8.8.8/v1", "credentials"),
    ("https://:token@8.8.8.8/v1", "credentials"),
    ("http://[not-an-address]/", "not a valid URL"),
    ("http://8.8.8.8:99999/", "not a valid URL"),
]


@pytest.mark.parametrize(("url", "reason"), REFUSED)
def test_it_refuses_endpoints_that_are_not_public(url: str, reason: str) -> None:
    with pytest.raises(EndpointRefused, match=re.escape(reason)):
        url_check(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://8.8.8.8/v1",
        "http://1.1.1.1:8080/",
        "https://9.9.9.9",
        "https://[2606:4700:4700::1111]/v1",
        "https://[2001:4860:4860::8888]/",
        "https://[2002:808:808::1]/",  # 6to4 of a public address
        "https://[64:ff9b::808:808]/",  # NAT64 of a public address
    ],
)
def test_it_accepts_public_addresses(url: str) -> None:
    url_check(url)  # a check only: nothing connects


def test_a_name_passes_only_if_every_address_it_resolves_to_is_public(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["8.8.8.8", "10.0.0.7"])
    with pytest.raises(EndpointRefused, match=re.escape("resolves to 10.0.0.7")):
        url_check(f"https://{PUBLIC_HOST}/v1")
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["8.8.8.8", "2606:4700::1111"])
    url_check(f"https://{PUBLIC_HOST}/v1")


def test_a_name_that_does_not_resolve_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def unknown(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(outbound, "resolve", unknown)
    with pytest.raises(EndpointRefused, match="does not resolve"):
        url_check("https://no-such-host.example.test/v1")


@pytest.mark.parametrize(
    ("address", "refused"),
    [
        ("fe80::1%eth0", True),
        ("::ffff:169.254.169.254", True),
        ("64:ff9b::8.8.8.8", False),
        ("2002:0808:0808::", False),
        ("100.63.255.255", False),
        ("100.128.0.0", False),
        ("198.20.0.1", False),
        ("172.32.0.1", False),
    ],
)
def test_addresses_at_the_edges_of_the_ranges(address: str, refused: bool) -> None:
    assert (address_refusal(address) is not None) == refused


def test_the_switch_turns_off_the_address_check_only(monkeypatch: pytest.MonkeyPatch) -> None:
    url_check("http://127.0.0.1:8000/v1", allow_private=True)
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")
    url_check("http://10.1.2.3/v1")
    url_check("http://10.1.2.3/v1", allow_private=True)
    with pytest.raises(EndpointRefused, match="credentials"):
        url_check("http://user:pw@127.0.0.1/v1")
    with pytest.raises(EndpointRefused, match="scheme"):
        url_check("ftp://127.0.0.1/")
    with pytest.raises(EndpointRefused, match="loopback"):
        url_check("http://127.0.0.1/", allow_private=False)  # an explicit flag wins
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "0")
    with pytest.raises(EndpointRefused):
        url_check("http://127.0.0.1/")
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "maybe")
    with pytest.raises(ValueError, match=ALLOW_PRIVATE_ENV):
        url_check("http://127.0.0.1/")


# At connect time, through the real SDKs.


def openai_at(base_url: str, **options: Any) -> OpenAIChatClient:
    return adapters.OpenAIChatClient(
        "gpt-test", base_url=base_url, api_key=KEY, retry=QUICK, sleep=lambda s: None, **options
    )


def anthropic_at(base_url: str, **options: Any) -> AnthropicClient:
    return adapters.AnthropicClient(
        "claude-test", base_url=base_url, api_key=KEY, retry=QUICK, sleep=lambda s: None, **options
    )


def test_a_name_that_rebinds_to_loopback_after_the_check_is_refused_when_connecting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = resolving(monkeypatch, "8.8.8.8", "127.0.0.1")
    with FakeOpenAI() as fake:
        base_url = f"http://{PUBLIC_HOST}:{fake.port}/v1"
        url_check(base_url)  # at submission: public
        with openai_at(base_url) as client, pytest.raises(TransportError) as caught:
            client.complete(CONVERSATION)  # at connect time: loopback
    assert caught.value.status is None and caught.value.attempts == 1  # not retried
    assert str(caught.value).startswith("[endpoint_refused] ")
    assert f"'{PUBLIC_HOST}' resolves to 127.0.0.1, which is a loopback address" in str(
        caught.value
    )
    assert error_summary(str(caught.value)) == ErrorSummary(None, "endpoint_refused")
    assert fake.requests == []
    assert asked == [PUBLIC_HOST, PUBLIC_HOST]


@pytest.mark.parametrize("make", [openai_at, anthropic_at])
def test_a_client_refuses_a_loopback_endpoint_without_the_opt_in(
    make: Callable[..., OpenAIChatClient | AnthropicClient],
) -> None:
    fake: FakeProvider = FakeOpenAI() if make is openai_at else FakeAnthropic()
    with fake, make(fake.base_url) as client, pytest.raises(TransportError) as caught:
        client.complete(CONVERSATION)
    assert "[endpoint_refused]" in str(caught.value) and "loopback" in str(caught.value)
    assert ALLOW_PRIVATE_ENV in str(caught.value)
    assert caught.value.attempts == 1
    assert fake.requests == []


@pytest.mark.parametrize("make", [openai_at, anthropic_at])
def test_with_the_opt_in_the_loopback_fake_answers(
    make: Callable[..., OpenAIChatClient | AnthropicClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake: FakeProvider = FakeOpenAI() if make is openai_at else FakeAnthropic()
    with fake:
        with make(fake.base_url, allow_private=True) as client:
            assert "Choice: [2]" in client.complete(CONVERSATION).text
        monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")
        with make(fake.base_url) as client:
            assert "Choice: [2]" in client.complete(CONVERSATION).text
    assert len(fake.requests) == 2


def test_the_connection_goes_to_the_checked_address_under_the_original_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = resolving(monkeypatch, "127.0.0.1")

    def no_other_lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        assert host != PUBLIC_HOST, "the name was looked up a second time"
        return real_getaddrinfo(host, *args, **kwargs)

    real_getaddrinfo = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", no_other_lookup)
    with (
        FakeOpenAI() as fake,
        openai_at(f"http://{PUBLIC_HOST}:{fake.port}/v1", allow_private=True) as client,
    ):
        client.complete(CONVERSATION)
        client.complete(CONVERSATION)
        port = fake.port
    assert [r.headers["host"] for r in fake.requests] == [f"{PUBLIC_HOST}:{port}"] * 2
    assert asked == [PUBLIC_HOST]  # one connection, kept alive: one lookup


def test_tls_names_and_verifies_the_original_host(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    resolving(monkeypatch, "127.0.0.1")
    cert, context = self_signed(PUBLIC_HOST, tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    with FakeOpenAI(ssl_context=context) as fake:
        base_url = f"https://{PUBLIC_HOST}:{fake.port}/v1"
        with openai_at(base_url, allow_private=True) as client:
            assert "Choice: [2]" in client.complete(CONVERSATION).text
        # The same server under its address: the certificate does not name it, so no request.
        with (
            openai_at(f"https://127.0.0.1:{fake.port}/v1", allow_private=True) as client,
            pytest.raises(TransportError, match="connection_error"),
        ):
            client.complete(CONVERSATION)
    assert len(fake.requests) == 1


def test_every_client_shares_one_tls_context_until_the_certificates_it_trusts_change(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)

    def context_of(client: Any) -> Any:
        return client._transport._pool._ssl_context

    with http_client(timeout=5) as first, http_client(timeout=5) as second:
        assert context_of(first) is context_of(second) is outbound.ssl_context()
        default = context_of(first)
    cert, _ = self_signed(PUBLIC_HOST, tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    with http_client(timeout=5) as other:
        assert context_of(other) is not default
        assert context_of(other) is outbound.ssl_context()
    monkeypatch.delenv("SSL_CERT_FILE")
    assert outbound.ssl_context() is default


# Redirects.


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_an_error_and_its_target_never_hears_from_us(
    status: int, allow_private: None
) -> None:
    with FakeOpenAI() as target, FakeOpenAI() as fake:
        fake.enqueue(redirect(f"{target.base_url}/chat/completions", status))
        with openai_at(fake.base_url) as client, pytest.raises(TransportError) as caught:
            client.complete(CONVERSATION)
    assert caught.value.status == status and caught.value.attempts == 1
    assert str(caught.value).startswith(f"[redirect_refused HTTP {status}] ")
    assert "not followed" in str(caught.value)
    assert len(fake.requests) == 1 and target.requests == []


def test_an_anthropic_redirect_is_refused_too(allow_private: None) -> None:
    with FakeAnthropic() as target, FakeAnthropic() as fake:
        fake.enqueue(redirect(f"{target.base_url}/v1/messages"))
        with anthropic_at(fake.base_url) as client, pytest.raises(TransportError) as caught:
            client.complete(CONVERSATION)
    assert error_summary(str(caught.value)) == ErrorSummary(307, "redirect_refused")
    assert target.requests == []


def test_the_client_never_follows_even_when_a_request_asks_to() -> None:
    with FakeOpenAI() as target, FakeOpenAI() as fake:
        fake.enqueue(redirect(f"{target.base_url}/chat/completions"))
        with http_client(timeout=5, allow_private=True) as client:
            response = client.post(
                f"{fake.base_url}/chat/completions", json={}, follow_redirects=True
            )
    assert response.status_code == 307 and target.requests == []


def test_a_redirect_ends_the_episode_as_an_error_in_the_bundle(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    with FakeOpenAI() as target:
        fake_openai.enqueue(Scripted(200), redirect(f"{target.base_url}/chat/completions", 302))
        out = tmp_path / "redirect.jsonl"
        args = run_args("openai:fake-vl", fake_openai.base_url, out, tmp_path, "--no-cache")
        assert main(args) == 0
    episode = json.loads(out.read_text().splitlines()[1])
    assert episode["status"] == "error" and episode["metrics"] is None
    assert len(episode["steps"]) == 1  # the answered step; the redirected one is the error
    assert error_summary(episode["error"]) == ErrorSummary(302, "redirect_refused")
    assert target.requests == [] and len(fake_openai.requests) == 2


def test_the_command_line_calls_a_model_server_on_the_users_own_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mirrorbench run` is the user's own process: loopback needs no opt-in (workers do)."""
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv(ALLOW_PRIVATE_ENV, raising=False)
    with FakeOpenAI() as fake:
        out = tmp_path / "local.jsonl"
        assert main(run_args("openai:local-vl", fake.base_url, out, tmp_path, "--no-cache")) == 0
        assert fake.requests
    assert json.loads(out.read_text().splitlines()[1])["status"] == "completed"


# What an error may say in public.


@pytest.mark.parametrize(
    ("scripted", "summary"),
    [
        (Scripted(429, openai_error("slow down, key sk-abc")), ErrorSummary(429, "rate_limited")),
        (Scripted(401, openai_error("bad key sk-abc")), ErrorSummary(401, "auth")),
        (Scripted(403, openai_error("forbidden")), ErrorSummary(403, "auth")),
        (Scripted(404, openai_error("no model")), ErrorSummary(404, "not_found")),
        (Scripted(422, openai_error("what")), ErrorSummary(422, "bad_request")),
        (Scripted(503, "internal host db-7.corp:5432 down"), ErrorSummary(503, "server_error")),
    ],
)
def test_each_failure_starts_with_its_public_summary(
    scripted: Scripted, summary: ErrorSummary, allow_private: None
) -> None:
    with FakeOpenAI() as fake:
        fake.enqueue(*[scripted] * 3)
        with openai_at(fake.base_url) as client, pytest.raises(TransportError) as caught:
            client.complete(CONVERSATION)
    text = str(caught.value)
    assert text.startswith(summary.tag + " ")
    assert error_summary(f"transport error after 3 attempts: {text}") == summary


def test_the_first_tag_wins_and_old_texts_are_read_for_their_status() -> None:
    forged = "[auth HTTP 401] openai request failed with HTTP 500: see [rate_limited HTTP 429]"
    assert error_summary(forged) == ErrorSummary(401, "auth")
    legacy = "transport error after 6 attempts: openai request failed after 6 attempts; "
    assert error_summary(legacy + "last error HTTP 503: HTTP 401 elsewhere") == ErrorSummary(
        503, "server_error"
    )
    assert error_summary(legacy + "last error APITimeoutError") == ErrorSummary(None, "timeout")
    assert error_summary("something odd") == ErrorSummary(None, "unknown")
    assert error_summary("") is None and error_summary(None) is None
    assert ErrorSummary(429, "rate_limited").label == "HTTP 429, rate limited"
    assert ErrorSummary(None, "endpoint_refused").label == "endpoint refused"
