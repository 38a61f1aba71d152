"""No reply makes a worker hold more than ``MIRRORBENCH_MAX_REPLY_BYTES`` of it.

A hostile endpoint (any signed-in user can name one) answers from a loopback
:class:`~tests.evaluation.fake_providers.BombServer`: gzip and deflate bodies of about 200 KiB
that inflate to 200 MiB, as a 200 and as a 500, bodies that never end (chunked, or under a
``Content-Length`` of a TiB), a ``Content-Length`` that understates the inflated size, and a
small gzip body followed by junk that decodes to nothing. Through the real SDKs, each ends the
step at once as an unusable response naming the cap, sent once, and the process's memory stays
within a few MiB of the cap (``tracemalloc`` here, the peak resident memory of a fresh child
process in :func:`test_a_fresh_process_stays_small_whatever_the_endpoint_sends`). So does a
small reply that holds no answer (not JSON, JSON of another shape, a broken gzip body).
"""

from __future__ import annotations

import functools
import gzip
import json
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from benchmarks.reply_limits import call_in_child, scenarios
from evaluation import adapters
from evaluation.adapters import RetryPolicy
from evaluation.cli import main
from evaluation.messages import Message, TextPart, TransportError
from evaluation.outbound import (
    DEFAULT_MAX_REPLY_BYTES,
    MAX_REPLY_ENV,
    http_client,
    max_reply_bytes_from_env,
)
from evaluation.public import ErrorSummary, error_summary
from tests.evaluation.fake_providers import (
    DEFAULT_TEXT,
    BombServer,
    RawReply,
    anthropic_message,
    openai_completion,
)
from tests.evaluation.test_model_runs import run_args

if TYPE_CHECKING:
    from evaluation.adapters import AnthropicClient, OpenAIChatClient

# One worker runs the module, with the other tests that load the model SDKs: each process that
# runs one of its tests builds the bombs once (``bombs``: 200 MiB compressed, about 1.5 s of
# CPU) and loads the SDKs once. A client's SDK loads when a test first names its class
# (``adapters.OpenAIChatClient``), not when pytest collects the module in every xdist worker.
pytestmark = pytest.mark.xdist_group("sdk")

CAP = DEFAULT_MAX_REPLY_BYTES
MiB = 2**20
QUICK = RetryPolicy(max_attempts=3, base_delay_s=0.0, jitter=0.0)
CONVERSATION = [Message("user", (TextPart("Where is the mark? Choice: [n]"),))]
PROVIDERS = ["openai", "anthropic"]
ENDLESS = {"chunked endless", "endless, len 1T", "gzip then junk"}
"""The scenarios whose body goes on for 200 MiB as sent: the client hangs up long before."""


@pytest.fixture(autouse=True)
def default_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default cap unless a test sets one."""
    monkeypatch.delenv(MAX_REPLY_ENV, raising=False)


@functools.cache
def bombs() -> dict[str, RawReply]:
    return scenarios()


def client_for(provider: str, server: BombServer) -> OpenAIChatClient | AnthropicClient:
    if provider == "openai":
        return adapters.OpenAIChatClient(
            "bomb", base_url=f"{server.base_url}/v1", retry=QUICK, allow_private=True
        )
    return adapters.AnthropicClient(
        "bomb", base_url=server.base_url, retry=QUICK, allow_private=True
    )


def success_body(provider: str, size: int) -> bytes:
    """A successful answer of exactly ``size`` bytes (padded with a field the SDKs ignore)."""
    body: dict[str, Any] = openai_completion() if provider == "openai" else anthropic_message()
    body["padding"] = ""
    filler = size - len(json.dumps(body).encode())
    assert filler >= 0
    body["padding"] = "x" * filler
    data = json.dumps(body).encode()
    assert len(data) == size
    return data


ENCODINGS: dict[str, Callable[[bytes], bytes]] = {
    "identity": lambda data: data,
    "gzip": gzip.compress,
    "deflate": zlib.compress,
}


def served(data: bytes, encoding: str, *, chunked: bool = False) -> RawReply:
    headers = {"Content-Type": "application/json"}
    if encoding != "identity":
        headers["Content-Encoding"] = encoding
    body = ENCODINGS[encoding](data)
    if chunked:
        pieces = [body[i : i + 65536] for i in range(0, len(body), 65536)]
        return RawReply(200, headers, lambda: iter(pieces), chunked=True)
    return RawReply(200, headers, body)


SCENARIOS = [
    "gzip 200",
    "deflate 200",
    "gzip 500",
    "chunked endless",
    "gzip, length 3M",
    "endless, len 1T",
    "gzip then junk",
]


def test_the_scenarios_are_the_benchmarks() -> None:
    assert list(bombs()) == SCENARIOS


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("name", SCENARIOS)
def test_a_hostile_reply_ends_the_step_as_unusable_at_once(provider: str, name: str) -> None:
    reply = bombs()[name]
    with BombServer(reply) as server, client_for(provider, server) as client:
        tracemalloc.start()
        try:
            with pytest.raises(TransportError) as caught:
                client.complete(CONVERSATION)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        server.wait_answered()
    text = str(caught.value)
    assert text.startswith(f"[unusable_response HTTP {reply.status}] {provider} response ")
    assert f"over the cap of {CAP} bytes (4 MiB, {MAX_REPLY_ENV})" in text
    assert error_summary(text) == ErrorSummary(reply.status, "unusable_response")
    assert caught.value.status == reply.status
    # Not retried, even as a 500: the same endpoint would send the same reply.
    assert caught.value.attempts == 1 and server.requests == 1
    if name in ENDLESS:
        assert server.hung_up == 1  # aborted: the client hung up long before the end
    assert peak < 4 * CAP, f"{peak / MiB:.1f} MiB held for a {CAP / MiB:.0f} MiB cap"


def test_a_fresh_process_stays_small_whatever_the_endpoint_sends() -> None:
    """Every scenario in turn, with both clients, in one child process: its peak resident
    memory grows by a few MiB, not by the 200-600 MiB the same replies cost before the cap
    (``benchmarks/reply_limits.py``)."""
    servers = {name: BombServer(reply).start() for name, reply in bombs().items()}
    calls = [(provider, server.base_url) for provider in PROVIDERS for server in servers.values()]
    try:
        reports = call_in_child(calls)
    finally:
        for server in servers.values():
            server.stop()
    names = [f"{provider} {name}" for provider in PROVIDERS for name in servers]
    start_kib = reports[0]["before_kib"]
    grown: dict[str, float] = {}
    for name, report in zip(names, reports, strict=True):
        assert report["error"] and report["error"].startswith("[unusable_response HTTP "), name
        assert f"over the cap of {CAP} bytes" in report["error"], name
        assert report["attempts"] == 1, name
        grown[name] = round((report["peak_kib"] - start_kib) / 1024, 1)
    assert max(grown.values()) < 64, f"peak resident memory grew by (MiB): {grown}"


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_a_reply_just_under_the_cap_is_read_as_usual(provider: str, encoding: str) -> None:
    reply = served(success_body(provider, CAP - 1), encoding, chunked=encoding == "gzip")
    with BombServer(reply) as server, client_for(provider, server) as client:
        answer = client.complete(CONVERSATION)
    assert answer.text == DEFAULT_TEXT and answer.attempts == 1


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_the_cap_holds_to_the_byte(
    provider: str, encoding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = success_body(provider, 5000)
    reply = served(data, encoding)
    with BombServer(reply) as server:
        monkeypatch.setenv(MAX_REPLY_ENV, str(len(data)))
        with client_for(provider, server) as client:
            assert client.complete(CONVERSATION).text == DEFAULT_TEXT
        monkeypatch.setenv(MAX_REPLY_ENV, str(len(data) - 1))
        with client_for(provider, server) as client, pytest.raises(TransportError) as caught:
            client.complete(CONVERSATION)
    where = (
        "as announced" if encoding == "identity" else f"once decoded (Content-Encoding: {encoding})"
    )
    assert f"over the cap of {len(data) - 1} bytes" in str(caught.value)
    assert where in str(caught.value)
    assert server.requests == 2


JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (RawReply(200, JSON, b"not json"), "its body is not JSON"),
        (RawReply(200, JSON, b""), "its body is not JSON"),
        (RawReply(200, JSON, b"[]"), "HTTP 200]"),
        (RawReply(200, JSON, b'{"choices": [1], "content": 1}'), "HTTP 200]"),
        (RawReply(200, {"Content-Type": "text/plain"}, b"hello"), "HTTP 200]"),
        (RawReply(200, {**JSON, "Content-Encoding": "gzip"}, b"\x1f\x8bnot gzip"), "decode"),
    ],
    ids=["not JSON", "empty", "a list", "another shape", "text", "broken gzip"],
)
def test_a_reply_that_is_no_answer_ends_the_step_as_unusable_at_once(
    provider: str, reply: RawReply, why: str
) -> None:
    """Not a crash of the worker's task, which would leave the episode to be run again and
    again; not a retry either: the same endpoint would send the same body."""
    with (
        BombServer(reply) as server,
        client_for(provider, server) as client,
        pytest.raises(TransportError) as caught,
    ):
        client.complete(CONVERSATION)
    text = str(caught.value)
    assert text.startswith("[unusable_response") and why in text
    assert caught.value.attempts == 1 and server.requests == 1


def test_the_setting_is_read_when_a_client_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    assert max_reply_bytes_from_env() == CAP == 4 * MiB
    monkeypatch.setenv(MAX_REPLY_ENV, " ")
    assert max_reply_bytes_from_env() == CAP
    monkeypatch.setenv(MAX_REPLY_ENV, "1048576")
    assert max_reply_bytes_from_env() == MiB
    for wrong in ("4MiB", "-1", "0", "1e6"):
        monkeypatch.setenv(MAX_REPLY_ENV, wrong)
        with pytest.raises(ValueError, match=MAX_REPLY_ENV):
            max_reply_bytes_from_env()
        with pytest.raises(ValueError, match=MAX_REPLY_ENV):
            adapters.OpenAIChatClient("m", base_url="http://127.0.0.1:9/v1", allow_private=True)
    with pytest.raises(ValueError, match="above 0"):
        http_client(timeout=1, max_reply_bytes=0)


def test_a_bomb_ends_the_episode_as_an_error_in_the_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recorded as the episode's error (not a crash that a worker would run again and again)."""
    monkeypatch.setenv("MIRRORBENCH_DATA_DIR", str(tmp_path / "data"))
    with BombServer(bombs()["gzip 200"]) as server:
        out = tmp_path / "bomb.jsonl"
        args = run_args("openai:bomb", f"{server.base_url}/v1", out, tmp_path, "--no-cache")
        assert main(args) == 0
    episode = json.loads(out.read_text().splitlines()[1])
    assert episode["status"] == "error" and episode["metrics"] is None
    assert error_summary(episode["error"]) == ErrorSummary(200, "unusable_response")
    assert server.requests == 1
