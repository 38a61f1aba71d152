"""Fixtures for the evaluation tests: loopback fake model providers.

The fakes listen on 127.0.0.1, which the outbound policy refuses by default: each fixture opts
in with ``MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS=1``, as a user of a local model server does.
"""

from collections.abc import Iterator

import pytest

from evaluation.outbound import ALLOW_PRIVATE_ENV
from tests.evaluation.fake_providers import FakeAnthropic, FakeOpenAI


@pytest.fixture
def allow_private(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let model clients built from now on call loopback addresses."""
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")


@pytest.fixture
def fake_openai(allow_private: None) -> Iterator[FakeOpenAI]:
    """A running fake OpenAI-compatible server; its base_url ends in ``/v1``."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def fake_anthropic(allow_private: None) -> Iterator[FakeAnthropic]:
    """A running fake Anthropic messages server."""
    with FakeAnthropic() as server:
        yield server
