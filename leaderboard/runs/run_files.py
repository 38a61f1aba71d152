"""Reads: a run's configuration as a run file, for ``mirrorbench run --config`` to repeat it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from django.urls import reverse

from evaluation.config import RunConfig, RunConfigError
from evaluation.run_file import config_from_header, run_file_text
from leaderboard.models import Run
from leaderboard.runs.selectors import endpoint_visible_whole, run_endpoint


def run_config(*, run: Run) -> RunConfig:
    """Return the configuration of ``run``: the one stored with it, else its bundle header's.

    Raises:
        RunConfigError: The run has neither, or its header names an agent that no
            configuration takes (an Inspect log's, a person's).
        ValueError: A run reported in the paper: it has no configuration.
    """
    if run.config is not None:
        return run.config
    if run.source == Run.Source.REPORTED or run.metadata.get("type") != "header":
        raise ValueError(f"run {run.pk} has no configuration")
    return config_from_header(run.metadata)


def run_config_file(*, run: Run, user: Any, absolute: Callable[[str], str]) -> str:
    """Return ``run``'s configuration as a run file that ``mirrorbench run --config`` repeats,
    its endpoint as ``user`` may see it (``run_endpoint``), never a key.

    Raises:
        RunConfigError, ValueError: As ``run_config``.
    """
    config = run_config(run=run)
    endpoint = run_endpoint(run=run, user=user)
    if config.base_url is not None:
        config = dataclasses.replace(config, base_url=endpoint)
    comment = [
        f"MirrorBench run {run.pk}: {run.model_entry.name}, benchmark {run.benchmark.name}.",
        f"From {absolute(reverse('leaderboard:run', args=[run.pk]))}",
        "Repeat it: mirrorbench run --config run.toml (add [execution] workers = 8 to go faster).",
    ]
    if config.agent_spec.is_model:
        comment.append("The API key comes from the provider's variable, never from this file.")
    if config.base_url is not None and not endpoint_visible_whole(run=run, user=user):
        comment.append("Only the run's owner sees its endpoint's path: here, its scheme and host.")
    return run_file_text(config, comment=comment)


def run_has_config(*, run: Run) -> bool:
    """Whether ``run`` has a configuration that ``mirrorbench run`` takes (``run_config``)."""
    try:
        run_config(run=run)
    except (RunConfigError, ValueError):
        return False
    return True
