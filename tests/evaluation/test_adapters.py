"""The model adapters against loopback fake providers, through the real, unmodified SDKs."""

from __future__ import annotations

import base64
import email.utils
import io
import json
import logging
import struct
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from PIL import Image

from evaluation import adapters
from evaluation.adapters import MissingAPIKeyError, RetryPolicy, retry_after_s
from evaluation.adapters.anthropic_models import (
    ANTHROPIC_FALLBACK_MAX_OUTPUT_TOKENS,
    anthropic_max_output_tokens,
)
from evaluation.messages import (
    GenerationParams,
    ImagePart,
    Message,
    ModelReply,
    TextPart,
    TransportError,
)
from evaluation.registry import make_client
from tests.evaluation.fake_providers import (
    ANTHROPIC_MODEL_ID,
    DEFAULT_TEXT,
    OPENAI_FINGERPRINT,
    OPENAI_MODEL_ID,
    FakeAnthropic,
    FakeOpenAI,
    FakeProvider,
    Scripted,
    anthropic_error,
    anthropic_message,
    openai_completion,
    openai_error,
)

if TYPE_CHECKING:
    from evaluation.adapters import AnthropicClient, OpenAIChatClient

# The clients are named through their package (``adapters.OpenAIChatClient``), which loads a
# client's SDK (about 2.5 s of CPU for both) when a test first names it, not when pytest collects
# this module in every xdist worker; one worker runs the tests that load them (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("sdk")

KEY = "sk-mirrorbench-SECRET-7f3a9c2e1b5d"
SYSTEM = "You are a robot standing in front of a mirror. End with Choice: [n]."
QUESTION = "Where is the mark? 1) forehead 2) left cheek 3) right cheek"
SIZE = 1024
FAST = RetryPolicy(max_attempts=6, base_delay_s=0.5, max_delay_s=60.0, jitter=0.0)


class Sleeps(list[float]):
    """A stand-in for time.sleep that records the delays instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture(scope="module")
def png() -> bytes:
    """A 1024x1024 noise PNG (noise, so no encoder could shrink it unnoticed)."""
    buffer = io.BytesIO()
    Image.effect_noise((SIZE, SIZE), 60).convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def conversation(png: bytes) -> list[Message]:
    return [
        Message("system", (TextPart(SYSTEM),)),
        Message("user", (TextPart(QUESTION), ImagePart(png, SIZE, SIZE, label="current view"))),
    ]


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


ClientFactory = Callable[..., Any]


@pytest.fixture
def openai_client(
    fake_openai: FakeOpenAI, sleeps: Sleeps, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ClientFactory]:
    """Build OpenAIChatClients pointed at the fake server, with the key in the environment."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    made: list[OpenAIChatClient] = []

    def build(**overrides: Any) -> OpenAIChatClient:
        options: dict[str, Any] = {"retry": FAST, "timeout_s": 5.0, "sleep": sleeps}
        options.update(overrides)
        client = adapters.OpenAIChatClient("gpt-test", base_url=fake_openai.base_url, **options)
        made.append(client)
        return client

    yield build
    for client in made:
        client.close()


@pytest.fixture
def anthropic_client(
    fake_anthropic: FakeAnthropic, sleeps: Sleeps, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ClientFactory]:
    """Build AnthropicClients pointed at the fake server, with the key in the environment."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    made: list[AnthropicClient] = []

    def build(model: str = "claude-test", **overrides: Any) -> AnthropicClient:
        options: dict[str, Any] = {"retry": FAST, "timeout_s": 5.0, "sleep": sleeps}
        options.update(overrides)
        client = adapters.AnthropicClient(model, base_url=fake_anthropic.base_url, **options)
        made.append(client)
        return client

    yield build
    for client in made:
        client.close()


def assert_full_size_png(data: bytes, sent: bytes) -> None:
    """``data`` is byte for byte the PNG that was sent, and that PNG is 1024x1024."""
    assert data == sent
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == (SIZE, SIZE)
    assert Image.open(io.BytesIO(data)).size == (SIZE, SIZE)


# OpenAI-compatible chat completions.


def test_openai_sends_the_full_png_with_high_detail_and_the_system_role(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, png: bytes, conversation: list[Message]
) -> None:
    reply = openai_client().complete(conversation)

    (request,) = fake_openai.requests
    assert request.path == "/v1/chat/completions"
    body = request.body
    assert body["model"] == "gpt-test"
    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM}
    assert user["role"] == "user"
    text, image = user["content"]
    assert text == {"type": "text", "text": QUESTION}
    assert image["type"] == "image_url"
    assert image["image_url"]["detail"] == "high"
    url = image["image_url"]["url"]
    prefix = "data:image/png;base64,"
    assert url.startswith(prefix)
    assert_full_size_png(base64.b64decode(url.removeprefix(prefix), validate=True), png)
    assert reply.text == DEFAULT_TEXT


def test_openai_sends_temperature_zero_and_nothing_else_by_default(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, conversation: list[Message]
) -> None:
    reply = openai_client().complete(conversation)

    body = fake_openai.requests[0].body
    assert {k: v for k, v in body.items() if k not in ("model", "messages")} == {"temperature": 0}
    assert "max_tokens" not in body and "max_completion_tokens" not in body
    assert "seed" not in body
    assert body.get("stream") in (None, False)
    assert reply.request["params"] == {"temperature": 0.0}
    assert reply.request["not_sent"] == {}


def test_openai_sends_max_tokens_and_seed_only_when_set(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, conversation: list[Message]
) -> None:
    capped = openai_client(params=GenerationParams(max_tokens=512)).complete(conversation)
    seeded = openai_client(params=GenerationParams(seed=7)).complete(conversation)

    first, second = (r.body for r in fake_openai.requests)
    assert (first["max_tokens"], first["temperature"]) == (512, 0)
    assert "seed" not in first
    assert capped.request["params"] == {"max_tokens": 512, "temperature": 0.0}
    assert (second["seed"], second["temperature"]) == (7, 0)
    assert "max_tokens" not in second
    assert seeded.request["params"] == {"temperature": 0.0, "seed": 7}


def test_openai_request_params_are_the_body_sent(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, conversation: list[Message]
) -> None:
    for params in (GenerationParams(), GenerationParams(max_tokens=300, seed=1)):
        reply = openai_client(params=params).complete(conversation)
        body = fake_openai.requests[-1].body
        sent = {k: v for k, v in body.items() if k not in ("model", "messages")}
        assert reply.request["params"] == sent


def test_openai_records_model_id_fingerprint_usage_latency_and_request(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, png: bytes, conversation: list[Message]
) -> None:
    reply = openai_client().complete(conversation)

    assert reply.refusal is None
    assert reply.model_id == OPENAI_MODEL_ID
    assert reply.fingerprint == OPENAI_FINGERPRINT
    assert (reply.input_tokens, reply.output_tokens) == (1234, 56)
    assert reply.latency_s > 0
    assert reply.attempts == 1
    assert reply.request == {
        "images": [
            {"width": SIZE, "height": SIZE, "format": "png", "detail": "high", "bytes": len(png)}
        ],
        "base_url": fake_openai.base_url,
        "params": {"temperature": 0.0},
        "not_sent": {},
    }


def test_openai_sends_assistant_turns_as_text_in_order(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, png: bytes
) -> None:
    image = ImagePart(png, SIZE, SIZE)
    conversation = [
        Message("system", (TextPart(SYSTEM),)),
        Message("user", (TextPart("step 1"), image)),
        Message("assistant", (TextPart("Choice: [1]"),)),
        Message("user", (TextPart("step 2"), image)),
    ]
    reply = openai_client().complete(conversation)

    roles = [m["role"] for m in fake_openai.requests[0].body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert fake_openai.requests[0].body["messages"][2]["content"] == "Choice: [1]"
    assert len(reply.request["images"]) == 2


# Retries.


def test_openai_retries_429_and_500_honouring_retry_after(
    openai_client: ClientFactory,
    fake_openai: FakeOpenAI,
    sleeps: Sleeps,
    conversation: list[Message],
) -> None:
    fake_openai.enqueue(
        Scripted(
            429, openai_error("Rate limit reached", type="rate_limit_error"), {"Retry-After": "2"}
        ),
        Scripted(500, openai_error("The server had an error", type="server_error")),
    )
    reply = openai_client().complete(conversation)

    assert len(fake_openai.requests) == 3
    assert sleeps == [2.0, 1.0]  # Retry-After, then the backoff for the 2nd retry (0.5 * 2)
    assert reply.attempts == 3
    assert reply.text == DEFAULT_TEXT


def test_openai_honours_retry_after_ms_and_caps_long_waits(
    openai_client: ClientFactory,
    fake_openai: FakeOpenAI,
    sleeps: Sleeps,
    conversation: list[Message],
) -> None:
    fake_openai.enqueue(
        Scripted(429, openai_error("slow down"), {"retry-after-ms": "1500", "Retry-After": "9"}),
        Scripted(503, openai_error("unavailable"), {"Retry-After": "3600"}),
    )
    openai_client().complete(conversation)

    assert sleeps == [1.5, 60.0]


def test_connection_errors_and_timeouts_are_retried(
    openai_client: ClientFactory,
    fake_openai: FakeOpenAI,
    sleeps: Sleeps,
    conversation: list[Message],
) -> None:
    fake_openai.enqueue(Scripted(drop=True), Scripted(delay_s=1.0))
    reply = openai_client(timeout_s=0.3).complete(conversation)

    assert reply.attempts == 3
    assert len(sleeps) == 2


def test_transport_error_after_the_retry_budget_with_the_last_status(
    openai_client: ClientFactory,
    fake_openai: FakeOpenAI,
    sleeps: Sleeps,
    conversation: list[Message],
) -> None:
    fake_openai.enqueue(
        Scripted(429, openai_error("rate limited")),
        Scripted(500, openai_error("boom")),
        Scripted(502, "Bad Gateway"),
    )
    client = openai_client(retry=RetryPolicy(max_attempts=3, base_delay_s=1.0, jitter=0.0))
    with pytest.raises(TransportError) as caught:
        client.complete(conversation)

    assert caught.value.status == 502
    assert caught.value.attempts == 3
    assert "502" in str(caught.value)
    assert len(fake_openai.requests) == 3
    assert sleeps == [1.0, 2.0]


def test_transport_error_after_connection_errors_has_no_status(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, conversation: list[Message]
) -> None:
    fake_openai.enqueue(Scripted(drop=True), Scripted(drop=True))
    with pytest.raises(TransportError) as caught:
        openai_client(retry=RetryPolicy(max_attempts=2, jitter=0.0)).complete(conversation)

    assert caught.value.status is None
    assert caught.value.attempts == 2


def test_the_sdk_does_not_retry_on_its_own(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, conversation: list[Message]
) -> None:
    fake_openai.enqueue(Scripted(500, openai_error("boom")))
    with pytest.raises(TransportError) as caught:
        openai_client(retry=RetryPolicy(max_attempts=1)).complete(conversation)

    assert (caught.value.status, caught.value.attempts) == (500, 1)
    assert len(fake_openai.requests) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_openai_other_client_errors_fail_at_once(
    status: int,
    openai_client: ClientFactory,
    fake_openai: FakeOpenAI,
    sleeps: Sleeps,
    conversation: list[Message],
) -> None:
    fake_openai.enqueue(Scripted(status, openai_error("Invalid image payload", code="bad_thing")))
    with pytest.raises(TransportError) as caught:
        openai_client().complete(conversation)

    assert caught.value.status == status
    assert caught.value.attempts == 1
    assert str(status) in str(caught.value)
    assert "Invalid image payload" in str(caught.value)
    assert len(fake_openai.requests) == 1
    assert sleeps == []


def test_anthropic_retries_overloaded_and_fails_at_once_on_401(
    anthropic_client: ClientFactory,
    fake_anthropic: FakeAnthropic,
    sleeps: Sleeps,
    conversation: list[Message],
) -> None:
    fake_anthropic.enqueue(
        Scripted(529, anthropic_error("Overloaded", type="overloaded_error"), {"retry-after": "2"}),
        Scripted(500, anthropic_error("Internal", type="api_error")),
    )
    client = anthropic_client()
    reply = client.complete(conversation)
    assert reply.attempts == 3
    assert sleeps == [2.0, 1.0]

    fake_anthropic.enqueue(
        Scripted(401, anthropic_error("invalid x-api-key", type="authentication_error"))
    )
    with pytest.raises(TransportError) as caught:
        client.complete(conversation)
    assert (caught.value.status, caught.value.attempts) == (401, 1)
    assert len(fake_anthropic.requests) == 4


# Refusals and prompts too long are answers, not transport errors.


def test_openai_refusal_is_an_answer(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, conversation: list[Message]
) -> None:
    fake_openai.enqueue(Scripted(body=openai_completion(None, refusal="I can't help with that.")))
    reply = openai_client().complete(conversation)

    assert reply.refusal == "refusal"
    assert reply.text == "I can't help with that."
    assert reply.model_id == OPENAI_MODEL_ID


def test_openai_content_filter_is_an_answer(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, conversation: list[Message]
) -> None:
    fake_openai.enqueue(Scripted(body=openai_completion("", finish_reason="content_filter")))
    reply = openai_client().complete(conversation)

    assert reply.refusal == "content_filter"
    assert reply.text == ""


@pytest.mark.parametrize(
    "error",
    [
        openai_error("Too long.", code="context_length_exceeded", param="messages"),
        openai_error(
            "This model's maximum context length is 32768 tokens. However, you "
            "requested 40000 tokens."
        ),
    ],
    ids=["openai-code", "vllm-message"],
)
def test_openai_context_length_is_an_answer(
    error: dict[str, Any],
    openai_client: ClientFactory,
    fake_openai: FakeOpenAI,
    sleeps: Sleeps,
    conversation: list[Message],
) -> None:
    fake_openai.enqueue(Scripted(400, error))
    reply = openai_client().complete(conversation)

    assert reply.refusal == "context_length"
    assert reply.text == ""
    assert reply.attempts == 1
    assert reply.request["provider_error"]["status"] == 400
    assert len(fake_openai.requests) == 1
    assert sleeps == []


def test_anthropic_refusal_is_an_answer(
    anthropic_client: ClientFactory, fake_anthropic: FakeAnthropic, conversation: list[Message]
) -> None:
    fake_anthropic.enqueue(Scripted(body=anthropic_message("I won't.", stop_reason="refusal")))
    reply = anthropic_client().complete(conversation)

    assert (reply.refusal, reply.text) == ("refusal", "I won't.")


@pytest.mark.parametrize(
    "answer",
    [
        Scripted(400, anthropic_error("prompt is too long: 250000 tokens > 200000 maximum")),
        Scripted(
            413, anthropic_error("Request exceeds the maximum size", type="request_too_large")
        ),
    ],
    ids=["prompt-too-long", "request-too-large"],
)
def test_anthropic_context_length_is_an_answer(
    answer: Scripted,
    anthropic_client: ClientFactory,
    fake_anthropic: FakeAnthropic,
    conversation: list[Message],
) -> None:
    fake_anthropic.enqueue(answer)
    reply = anthropic_client().complete(conversation)

    assert reply.refusal == "context_length"
    assert len(fake_anthropic.requests) == 1


# Settings a model rejects are dropped (and recorded), not fatal.


def test_openai_switches_to_max_completion_tokens_when_max_tokens_is_rejected(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, conversation: list[Message]
) -> None:
    fake_openai.enqueue(
        Scripted(
            400,
            openai_error(
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                code="unsupported_parameter",
                param="max_tokens",
            ),
        )
    )
    client = openai_client(  # resending is not a retry
        retry=RetryPolicy(max_attempts=1), params=GenerationParams(max_tokens=4000)
    )
    reply = client.complete(conversation)
    client.complete(conversation)

    first, resent, later = (r.body for r in fake_openai.requests)
    assert first["max_tokens"] == 4000
    for body in (resent, later):
        assert "max_tokens" not in body
        assert body["max_completion_tokens"] == 4000
    assert reply.attempts == 2
    assert reply.request["params"] == {"max_completion_tokens": 4000, "temperature": 0.0}
    assert "max_completion_tokens" in reply.request["not_sent"]["max_tokens"]


def test_openai_drops_a_rejected_temperature(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, conversation: list[Message]
) -> None:
    fake_openai.enqueue(
        Scripted(
            400,
            openai_error(
                "Unsupported value: 'temperature' does not support 0 with this model. "
                "Only the default (1) value is supported.",
                code="unsupported_value",
                param="temperature",
            ),
        )
    )
    reply = openai_client().complete(conversation)

    assert "temperature" not in fake_openai.requests[1].body
    assert "temperature" not in reply.request["params"]
    assert "temperature" in reply.request["not_sent"]


@pytest.mark.parametrize(
    "message",
    [
        "`temperature` is deprecated for this model.",  # Opus 4.7 and later
        "temperature: Extra inputs are not permitted",  # any model on API version 2026-10-21
    ],
)
def test_anthropic_drops_a_rejected_temperature(
    message: str,
    anthropic_client: ClientFactory,
    fake_anthropic: FakeAnthropic,
    sleeps: Sleeps,
    conversation: list[Message],
) -> None:
    fake_anthropic.enqueue(Scripted(400, anthropic_error(message)))
    client = anthropic_client()
    reply = client.complete(conversation)
    client.complete(conversation)

    first, resent, later = (r.body for r in fake_anthropic.requests)
    assert first["temperature"] == 0
    assert "temperature" not in resent
    assert "temperature" not in later
    assert sleeps == []
    assert reply.request["params"] == {"max_tokens": ANTHROPIC_FALLBACK_MAX_OUTPUT_TOKENS}
    assert set(reply.request["not_sent"]) == {"temperature"}


# Anthropic messages.


def test_anthropic_sends_system_parameter_full_png_temperature_and_no_seed(
    anthropic_client: ClientFactory,
    fake_anthropic: FakeAnthropic,
    png: bytes,
    conversation: list[Message],
) -> None:
    reply = anthropic_client().complete(conversation)

    (request,) = fake_anthropic.requests
    assert request.path == "/v1/messages"
    assert request.headers["anthropic-version"]
    body = request.body
    assert body["model"] == "claude-test"
    assert body["system"] == SYSTEM
    assert [m["role"] for m in body["messages"]] == ["user"]
    text, image = body["messages"][0]["content"]
    assert text == {"type": "text", "text": QUESTION}
    assert image["type"] == "image"
    assert image["source"]["type"] == "base64"
    assert image["source"]["media_type"] == "image/png"
    assert_full_size_png(base64.b64decode(image["source"]["data"], validate=True), png)
    assert body["temperature"] == 0
    assert body["max_tokens"] == ANTHROPIC_FALLBACK_MAX_OUTPUT_TOKENS  # claude-test is unknown
    assert "seed" not in body
    assert reply.text == DEFAULT_TEXT


def test_anthropic_records_model_id_usage_latency_and_request(
    anthropic_client: ClientFactory,
    fake_anthropic: FakeAnthropic,
    png: bytes,
    conversation: list[Message],
) -> None:
    reply = anthropic_client().complete(conversation)

    assert reply.model_id == ANTHROPIC_MODEL_ID
    assert reply.fingerprint is None
    assert (reply.input_tokens, reply.output_tokens) == (1500, 60)
    assert reply.latency_s > 0
    assert reply.attempts == 1
    assert reply.request["images"] == [
        {"width": SIZE, "height": SIZE, "format": "png", "detail": None, "bytes": len(png)}
    ]
    assert reply.request["base_url"] == fake_anthropic.base_url
    assert reply.request["params"] == {
        "max_tokens": ANTHROPIC_FALLBACK_MAX_OUTPUT_TOKENS,
        "temperature": 0.0,
    }
    assert reply.request["not_sent"] == {}
    assert reply.request["api_version"] == fake_anthropic.requests[0].headers["anthropic-version"]


@pytest.mark.parametrize(
    ("model", "maximum"),
    [
        ("claude-sonnet-4-5", 64000),
        ("claude-sonnet-4-5-20250929", 64000),
        ("claude-sonnet-4-20250514", 64000),
        ("claude-haiku-4-5", 64000),
        ("claude-opus-4-5-20251101", 64000),
        ("claude-opus-4-1-20250805", 32000),
        ("claude-opus-4-20250514", 32000),
        ("claude-opus-4-0", 32000),
        ("claude-3-7-sonnet-latest", 64000),
        ("claude-3-5-sonnet-20241022", 8192),
        ("claude-3-5-haiku-latest", 8192),
        ("claude-3-opus-20240229", 4096),
        ("claude-3-haiku-20240307", 4096),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", 8192),
        ("claude-opus-4-9", ANTHROPIC_FALLBACK_MAX_OUTPUT_TOKENS),
        ("some-proxy-model", ANTHROPIC_FALLBACK_MAX_OUTPUT_TOKENS),
    ],
)
def test_anthropic_max_output_tokens_of_known_models_and_the_fallback(
    model: str, maximum: int
) -> None:
    assert anthropic_max_output_tokens(model) == maximum


@pytest.mark.parametrize(
    ("model", "params", "expected"),
    [
        ("claude-sonnet-4-5", GenerationParams(), 64000),
        ("claude-3-5-haiku-latest", GenerationParams(), 8192),
        ("claude-opus-4-1", GenerationParams(), 32000),
        ("claude-next-1", GenerationParams(), ANTHROPIC_FALLBACK_MAX_OUTPUT_TOKENS),
        ("claude-sonnet-4-5", GenerationParams(max_tokens=1000), 1000),
        ("claude-next-1", GenerationParams(max_tokens=99999), 99999),
    ],
)
def test_anthropic_sends_the_model_maximum_output_unless_the_user_sets_max_tokens(
    model: str,
    params: GenerationParams,
    expected: int,
    anthropic_client: ClientFactory,
    fake_anthropic: FakeAnthropic,
    conversation: list[Message],
) -> None:
    client = anthropic_client(model, params=params)
    reply = client.complete(conversation)

    body = fake_anthropic.requests[0].body
    assert body["max_tokens"] == expected
    assert body["temperature"] == 0
    sent = {k: v for k, v in body.items() if k not in ("model", "messages", "system")}
    assert reply.request["params"] == sent == {"max_tokens": expected, "temperature": 0.0}
    assert client.params == GenerationParams(max_tokens=expected)
    assert adapters.AnthropicClient.sent_params(model, params) == client.params


def test_anthropic_records_a_seed_it_cannot_send(
    anthropic_client: ClientFactory, fake_anthropic: FakeAnthropic, conversation: list[Message]
) -> None:
    reply = anthropic_client(params=GenerationParams(seed=5)).complete(conversation)

    assert "seed" not in fake_anthropic.requests[0].body
    assert "seed" not in reply.request["params"]
    assert "no seed" in reply.request["not_sent"]["seed"]


def test_anthropic_lowers_max_tokens_once_to_the_limit_a_400_states(
    anthropic_client: ClientFactory,
    fake_anthropic: FakeAnthropic,
    sleeps: Sleeps,
    conversation: list[Message],
) -> None:
    too_many = anthropic_error(
        "max_tokens: 64000 > 32000, which is the maximum allowed number of output tokens for "
        "claude-next-1"
    )
    fake_anthropic.enqueue(Scripted(400, too_many))
    client = anthropic_client("claude-next-1", retry=RetryPolicy(max_attempts=1))
    reply = client.complete(conversation)
    client.complete(conversation)

    first, resent, later = (r.body for r in fake_anthropic.requests)
    assert first["max_tokens"] == 64000
    assert resent["max_tokens"] == later["max_tokens"] == 32000
    assert sleeps == []
    assert reply.attempts == 2
    assert reply.request["params"] == {"max_tokens": 32000, "temperature": 0.0}
    assert "64000 is above the model's limit, sent 32000" in reply.request["not_sent"]["max_tokens"]

    # Once: a second such answer fails like any other 400.
    fake_anthropic.enqueue(
        Scripted(400, anthropic_error("max_tokens: 32000 > 16000, which is the maximum allowed"))
    )
    with pytest.raises(TransportError, match="HTTP 400"):
        client.complete(conversation)
    assert fake_anthropic.requests[-1].body["max_tokens"] == 32000


def test_anthropic_rejects_a_system_message_after_the_conversation_started(
    anthropic_client: ClientFactory, fake_anthropic: FakeAnthropic
) -> None:
    late = [Message("user", (TextPart("hi"),)), Message("system", (TextPart(SYSTEM),))]
    with pytest.raises(ValueError, match="system"):
        anthropic_client().complete(late)
    assert fake_anthropic.requests == []


# Images are checked before anything is sent.


def test_an_image_whose_png_disagrees_with_its_declared_size_is_not_sent(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, png: bytes
) -> None:
    wrong = [Message("user", (ImagePart(png, 512, 512, label="current view"),))]
    with pytest.raises(ValueError, match="512x512"):
        openai_client().complete(wrong)
    assert fake_openai.requests == []


def test_an_image_that_is_not_a_png_is_not_sent(
    openai_client: ClientFactory, fake_openai: FakeOpenAI
) -> None:
    jpeg = io.BytesIO()
    Image.new("RGB", (8, 8)).save(jpeg, format="JPEG")
    with pytest.raises(ValueError, match="not a PNG"):
        openai_client().complete([Message("user", (ImagePart(jpeg.getvalue(), 8, 8),))])
    assert fake_openai.requests == []


def test_images_in_system_messages_are_refused(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, png: bytes
) -> None:
    with pytest.raises(ValueError, match="text only"):
        openai_client().complete([Message("system", (ImagePart(png, SIZE, SIZE),))])
    assert fake_openai.requests == []


# API keys.


def key_header(provider: FakeProvider) -> str:
    """The credential header: both SDKs send ``Authorization: Bearer`` (anthropic 2.x too)."""
    return provider.requests[-1].headers["authorization"]


@pytest.mark.parametrize("which", ["openai", "anthropic"])
def test_the_key_is_sent_but_never_logged_raised_or_recorded(
    which: str,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
    conversation: list[Message],
) -> None:
    caplog.set_level(logging.DEBUG)
    server: FakeProvider = request.getfixturevalue(f"fake_{which}")
    client = request.getfixturevalue(f"{which}_client")()
    error = openai_error if which == "openai" else anthropic_error
    server.enqueue(
        Scripted(500, error("boom"), {"Retry-After": "0"}),
        Scripted(200),
        # A server that echoes the key back in its error message.
        Scripted(401, error(f"Incorrect API key provided: {KEY}.")),
    )

    reply = client.complete(conversation)
    assert KEY in key_header(server)  # the key from the environment did reach the server
    with pytest.raises(TransportError) as caught:
        client.complete(conversation)

    assert caught.value.status == 401
    texts = [
        str(caught.value),
        repr(caught.value),
        "".join(traceback.format_exception(caught.value)),
        repr(client),
        repr(reply),
        json.dumps(reply.request),
        caplog.text,
    ]
    formatter = logging.Formatter()
    texts += [formatter.format(record) for record in caplog.records]
    assert any(r.name.startswith(f"{which}.") for r in caplog.records)  # the SDK did log
    assert any(r.name == "evaluation.adapters" for r in caplog.records)  # and so did we
    assert not [text for text in texts if KEY in text]
    assert "[REDACTED]" in str(caught.value)


def test_the_key_comes_from_the_named_environment_variable(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, conversation: list[Message]
) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client = adapters.OpenAIChatClient(
        "qwen-vl-max", base_url=fake_openai.base_url, api_key_env="DASHSCOPE_API_KEY"
    )
    client.complete(conversation)
    client.close()

    assert fake_openai.requests[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("cls", ["OpenAIChatClient", "AnthropicClient"])
def test_a_missing_key_is_an_error_naming_the_variable(
    cls: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client_class: type[OpenAIChatClient] | type[AnthropicClient] = getattr(adapters, cls)
    monkeypatch.delenv("MIRRORBENCH_TEST_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="MIRRORBENCH_TEST_KEY"):
        client_class(
            "some-model", base_url="https://api.example.com/v1", api_key_env="MIRRORBENCH_TEST_KEY"
        )


def test_a_local_server_needs_no_key(
    fake_openai: FakeOpenAI,
    fake_anthropic: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
    conversation: list[Message],
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with adapters.OpenAIChatClient("qwen2.5-vl:7b", base_url=fake_openai.base_url) as local:
        local.complete(conversation)
    with adapters.AnthropicClient("claude-test", base_url=fake_anthropic.base_url) as other:
        other.complete(conversation)

    assert fake_openai.requests[0].headers["authorization"] == "Bearer not-needed"
    assert fake_anthropic.requests[0].headers["authorization"] == "Bearer not-needed"


def test_credentials_in_the_base_url_are_not_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    client = adapters.OpenAIChatClient(
        "m", base_url="https://user:hunter2@llm.example.com:8443/v1?key=abc"
    )

    assert client.base_url == "https://llm.example.com:8443/v1"
    assert "hunter2" not in repr(client)
    assert "abc" not in repr(client)


# Retry policy and Retry-After parsing.


def test_retry_after_parsing() -> None:
    now = 1_750_000_000.0
    assert retry_after_s({"Retry-After": "2"}) == 2.0
    assert retry_after_s({"retry-after": "1.5"}) == 1.5
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "7"}) == 0.25
    http_date = email.utils.formatdate(now + 30, usegmt=True)
    assert retry_after_s({"Retry-After": http_date}, now=now) == 30.0
    assert retry_after_s({"Retry-After": "soon"}) is None
    assert retry_after_s({}) is None
    assert retry_after_s(None) is None


def test_backoff_doubles_is_jittered_and_capped() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=60.0, jitter=0.25)
    assert [policy.delay_s(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 8.0]
    assert policy.delay_s(3, rand=0.999) == pytest.approx(4.0 * (1 - 0.25 * 0.999))
    assert policy.delay_s(20) == 60.0
    assert policy.delay_s(1, retry_after=2.0, rand=0.9) == 2.0  # server delays get no jitter
    assert policy.delay_s(1, retry_after=600.0) == 60.0
    assert policy.delay_s(1, retry_after=-5.0) == 0.0
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


def test_an_http_date_retry_after_is_honoured_end_to_end(
    openai_client: ClientFactory,
    fake_openai: FakeOpenAI,
    sleeps: Sleeps,
    conversation: list[Message],
) -> None:
    later = email.utils.formatdate(usegmt=True)  # "now": the wait is about 0 s, at most 1 s
    fake_openai.enqueue(Scripted(503, openai_error("busy"), {"Retry-After": later}))
    openai_client().complete(conversation)

    (delay,) = sleeps
    assert 0.0 <= delay <= 1.0


# make_client.


def test_make_client_parses_provider_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    local = make_client("openai:qwen2.5-vl:7b", base_url="http://localhost:11434/v1")
    routed = make_client(
        "openai:meta-llama/llama-3.2-11b-vision", base_url="http://127.0.0.1:8000/v1"
    )
    claude = make_client("anthropic:claude-sonnet-4-5", params=GenerationParams(max_tokens=99))

    assert isinstance(local, adapters.OpenAIChatClient)
    assert (local.provider, local.model) == ("openai", "qwen2.5-vl:7b")
    assert routed.model == "meta-llama/llama-3.2-11b-vision"
    assert isinstance(claude, adapters.AnthropicClient)
    assert (claude.provider, claude.model, claude.params.max_tokens) == (
        "anthropic",
        "claude-sonnet-4-5",
        99,
    )


@pytest.mark.parametrize("spec", ["gemini:gemini-2.5-pro", "gpt-4o", "openai:", ":gpt-4o"])
def test_make_client_rejects_bad_specs_naming_the_providers(spec: str) -> None:
    with pytest.raises(ValueError, match="anthropic, openai"):
        make_client(spec)


def test_model_reply_type_is_returned(
    openai_client: ClientFactory, conversation: list[Message]
) -> None:
    assert isinstance(openai_client().complete(conversation), ModelReply)


def test_a_completion_without_choices_is_a_transport_error(
    openai_client: ClientFactory, fake_openai: FakeOpenAI, conversation: list[Message]
) -> None:
    body = openai_completion()
    body["choices"] = []
    fake_openai.enqueue(Scripted(body=body))
    with pytest.raises(TransportError, match="no choices") as caught:
        openai_client().complete(conversation)
    assert (caught.value.status, caught.value.attempts) == (200, 1)
