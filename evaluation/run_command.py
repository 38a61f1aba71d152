"""``mirrorbench run``: turn the command line into agents and a run of the runner."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from evaluation.agents import (
    Agent,
    MirrorConfusedAgent,
    ModelAgent,
    OracleAgent,
    RandomAgent,
    ScriptedAgent,
    ScriptError,
    load_script,
)
from evaluation.cache import CachedClient, ResponseCache
from evaluation.messages import GenerationParams, ModelClient
from evaluation.runner import AgentFactory, ResumeError, run
from simulation.catalogue import UnknownSceneError, select_scenes

BASELINES = ("random", "oracle", "mirror-confused")
PROVIDERS = ("openai", "anthropic")


class AgentSpecError(ValueError):
    """An --agent value that names no agent."""


def data_dir() -> Path:
    """Return the data directory: ``MIRRORBENCH_DATA_DIR``, else ``var/`` in the repository root
    (the site's default too), else ``var/`` in the current directory for an installed package.
    """
    configured = os.environ.get("MIRRORBENCH_DATA_DIR")
    if configured:
        return Path(configured).expanduser()
    root = Path(__file__).resolve().parent.parent
    return (root if (root / "manage.py").exists() else Path.cwd()) / "var"


def agent_spec_check(spec: str) -> None:
    """Raise AgentSpecError unless ``spec`` names an agent (no client or key is needed)."""
    provider, _, rest = spec.partition(":")
    if spec in BASELINES or (provider in (*PROVIDERS, "scripted") and rest):
        return
    raise AgentSpecError(
        f"unknown agent {spec!r}; expected one of {', '.join(BASELINES)}, scripted:FILE, "
        "openai:MODEL or anthropic:MODEL"
    )


def make_agent_factory(
    spec: str,
    *,
    seed: int = 0,
    base_url: str | None = None,
    image_history: int = 1,
    params: GenerationParams | None = None,
    cache: ResponseCache | None = None,
    api_key: str | None = None,
    retry: Any = None,
) -> tuple[AgentFactory, dict[str, Any]]:
    """Return a factory of per-episode agents for ``spec`` and the bundle header's extras."""
    extras: dict[str, Any] = {"model": None, "generation": None}
    if spec == "random":
        return (lambda: RandomAgent(seed)), extras
    if spec == "oracle":
        return OracleAgent, extras
    if spec == "mirror-confused":
        return MirrorConfusedAgent, extras
    provider, _, rest = spec.partition(":")
    if provider == "scripted" and rest:
        responses = load_script(Path(rest))
        return (lambda: ScriptedAgent(responses, source=Path(rest).name)), extras
    if provider in PROVIDERS and rest:
        from evaluation.adapters import make_client, public_base_url

        params = params or GenerationParams(seed=seed)
        client: ModelClient = make_client(
            spec, base_url=base_url, params=params, api_key=api_key, retry=retry
        )
        if cache is not None:
            client = CachedClient(client, cache, base_url)
        extras["model"] = {
            "provider": provider,
            "model": rest,
            "base_url": public_base_url(base_url) if base_url else None,
        }
        extras["generation"] = params.as_dict()
        shared: ModelClient = client

        def model_agent() -> Agent:
            return ModelAgent(shared, image_history=image_history)

        return model_agent, extras
    raise AgentSpecError(
        f"unknown agent {spec!r}; expected one of {', '.join(BASELINES)}, scripted:FILE, "
        "openai:MODEL or anthropic:MODEL"
    )


def run_from_args(args: argparse.Namespace) -> int:
    """Run ``mirrorbench run``; return the exit status."""
    from evaluation.cli import UsageError

    try:
        scenes = select_scenes(args.scenes)
    except UnknownSceneError as exc:
        raise UsageError(str(exc)) from None
    if not scenes:
        raise UsageError("--scenes selected no scene; use all, human, robot or scene ids")
    cache = None
    if not args.no_cache and args.agent.split(":")[0] in PROVIDERS:
        cache = ResponseCache(data_dir() / "cache" / "responses.sqlite3")
    try:
        factory, extras = make_agent_factory(
            args.agent,
            seed=args.seed,
            base_url=args.base_url,
            image_history=args.image_history,
            params=GenerationParams(seed=args.seed, max_tokens=args.max_tokens),
            cache=cache,
        )
    except (AgentSpecError, ScriptError) as exc:
        raise UsageError(str(exc)) from None
    except RuntimeError as exc:  # a missing API key names its variable
        raise UsageError(str(exc)) from None
    safe_name = re.sub(r"[^A-Za-z0-9._-]+", "_", args.agent)
    out = Path(args.out) if args.out else data_dir() / "runs" / f"{safe_name}.jsonl"
    try:
        result = run(
            factory,
            scenes,
            args.levels,
            out,
            header_extra=extras,
            seed=args.seed,
            workers=args.workers,
            resume=args.resume,
            image_size=args.image_size,
            progress_stream=sys.stderr,
        )
    except ResumeError as exc:
        raise UsageError(str(exc)) from None
    finally:
        if cache is not None:
            cache.close()
    print(
        f"{result.path}: {result.ran} episodes run, {result.skipped} kept from before, "
        f"{result.errors} transport errors, {result.seconds:.1f} s",
        file=sys.stderr,
    )
    print(result.path)
    return 0
