"""What tokens cost: prices, dollars per 264 episodes, the Pareto front, and the cached input
tokens a provider reports, measured through the real clients against loopback servers."""

from __future__ import annotations

import pytest

from evaluation import adapters
from evaluation.adapters.retry import RetryPolicy
from evaluation.agents import ModelAgent
from evaluation.cost import check_price, pareto_front, per_full_run, tokens_dollars
from evaluation.messages import Message, TextPart
from evaluation.runner import FrameSource, run_episode
from simulation.catalogue import get_scene
from tests.evaluation.fake_providers import Scripted, anthropic_message, openai_completion

# A client's SDK loads when a test first names its class (``adapters.OpenAIChatClient``), not
# when pytest collects the module in every xdist worker; one worker runs the tests that load them.
pytestmark = pytest.mark.xdist_group("sdk")

PRICE = {"input_per_mtok": 2.5, "output_per_mtok": 10.0, "cached_input_per_mtok": 1.25}


def test_tokens_cost_their_price_and_cached_input_its_own():
    assert tokens_dollars(PRICE, input_tokens=1_000_000, output_tokens=100_000) == 3.5
    # 400k of the input served from the provider's cache, at half the price.
    assert tokens_dollars(
        PRICE, input_tokens=1_000_000, output_tokens=100_000, cached_input_tokens=400_000
    ) == pytest.approx(3.0)
    no_cached_rate = {"input_per_mtok": 2.5, "output_per_mtok": 10.0}
    assert tokens_dollars(
        no_cached_rate, input_tokens=1_000_000, output_tokens=0, cached_input_tokens=400_000
    ) == pytest.approx(2.5)
    assert per_full_run(1.0, 66) == 4.0 and per_full_run(1.0, 0) is None


@pytest.mark.parametrize(
    ("price", "message"),
    [
        ({"input_per_mtok": 1}, "output_per_mtok: required"),
        ({"input_per_mtok": -1, "output_per_mtok": 1}, "input_per_mtok: expected a number"),
        ({"input_per_mtok": 1, "output_per_mtok": "2"}, "output_per_mtok: expected a number"),
        ({"input_per_mtok": 1, "output_per_mtok": 2, "per_image": 1}, "per_image: not a price"),
        ([1, 2], "expected an object"),
    ],
)
def test_a_bad_price_is_refused_naming_the_key(price, message):
    with pytest.raises(ValueError, match=message):
        check_price(price)


def test_the_pareto_front_keeps_the_runs_nothing_beats_cheapest_first():
    points = [(10.0, 0.30), (2.0, 0.20), (5.0, 0.20), (1.0, 0.05), (12.0, 0.25), (2.0, 0.20)]
    # (5, 0.20) costs more than (2, 0.20); (12, 0.25) more than (10, 0.30); twins: the first.
    assert pareto_front(points) == [3, 1, 0]
    assert pareto_front([]) == []


def _cached_usage(prompt: int, cached: int) -> dict:
    body = openai_completion(prompt_tokens=prompt)
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
    return body


def test_the_cached_input_tokens_an_openai_server_reports_are_in_the_step(fake_openai, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake_openai.enqueue(
        Scripted(200, _cached_usage(1000, 0)), Scripted(200, _cached_usage(1200, 896))
    )
    client = adapters.OpenAIChatClient(
        "fake-vl", base_url=fake_openai.base_url, retry=RetryPolicy(max_attempts=1)
    )
    frames = FrameSource(32)
    try:
        record = run_episode(
            get_scene("tienkung-allegro-logo_0"),
            2,
            ModelAgent(client),
            frames=frames,
            image_size=32,
        )
    finally:
        frames.close()
    first, second, third = record["steps"][:3]
    assert first["input_tokens"] == 1000 and first["cached_input_tokens"] == 0
    assert second["input_tokens"] == 1200 and second["cached_input_tokens"] == 896
    # The default answer reports no cache: the step says nothing rather than 0.
    assert "cached_input_tokens" not in third


def test_an_anthropic_server_reports_its_cache_reads(fake_anthropic, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    body = anthropic_message("Choice: [2]")
    body["usage"] = {
        "input_tokens": 100,
        "output_tokens": 7,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 900,
    }
    fake_anthropic.enqueue(Scripted(200, body))
    client = adapters.AnthropicClient(
        "claude-fake", base_url=fake_anthropic.base_url, retry=RetryPolicy(max_attempts=1)
    )
    reply = client.complete([Message("user", (TextPart("hello"),))])
    assert reply.input_tokens == 1000 and reply.cached_input_tokens == 900
