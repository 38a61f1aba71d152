"""Shared leaderboard fixtures: real bundles written once per session."""

from pathlib import Path

import pytest

from tests.leaderboard.factories import make_bundle


@pytest.fixture(scope="session")
def bundles(tmp_path_factory) -> dict[str, Path]:
    """Full 264-episode bundles of the random, oracle and mirror-confused baselines."""
    folder = tmp_path_factory.mktemp("bundles")
    return {
        name: make_bundle(folder / f"{name}.jsonl", name)
        for name in ("random", "oracle", "mirror-confused")
    }
