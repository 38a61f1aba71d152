"""Fixtures for the evaluation tests: loopback fake model providers."""

from collections.abc import Iterator

import pytest

from tests.evaluation.fake_providers import FakeAnthropic, FakeOpenAI


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running fake OpenAI-compatible server; its base_url ends in ``/v1``."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """A running fake Anthropic messages server."""
    with FakeAnthropic() as server:
        yield server
