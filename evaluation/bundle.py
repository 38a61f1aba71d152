"""Results bundles: the versioned JSON Lines file a run writes and ``verify`` checks.

Line 1 is the header; every further line is one finished episode. Episodes are appended and
flushed as they finish, so a crash loses at most the episodes in flight. The format is
documented in ``docs/bundle-format.md`` and ``evaluation/schemas/bundle-v1.schema.json``.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import jsonschema_rs

from evaluation.metrics import EpisodeResult
from evaluation.prompts import PROMPT_VERSION
from simulation.catalogue import SCENE_SET_VERSION
from simulation.dynamics import DYNAMICS_VERSION
from simulation.versions import BENCHMARK_VERSION

BUNDLE_VERSION = 1
COMPLETED = "completed"
ERROR = "error"


def benchmark_version() -> dict[str, str]:
    """Return the benchmark version and its parts: scene set, prompt and dynamics versions."""
    return {
        "version": BENCHMARK_VERSION,
        "scene_set": SCENE_SET_VERSION,
        "prompt_version": PROMPT_VERSION,
        "dynamics_version": DYNAMICS_VERSION,
    }


def header_benchmark_version(header: dict[str, Any]) -> str:
    """Return the benchmark version a bundle header names (v1 bundles name only the parts)."""
    benchmark = header.get("benchmark")
    if not isinstance(benchmark, dict):
        return "unknown"
    version = benchmark.get("version")
    if version is None:
        return "v1" if benchmark.get("prompt_version") == "v1" else "unknown"
    return str(version)


def tool_version() -> str:
    """Return the version of the mirrorbench package that writes bundles."""
    try:
        return metadata.version("mirrorbench")
    except metadata.PackageNotFoundError:
        return "unknown"


def make_header(
    *,
    agent: dict[str, Any],
    renderer: dict[str, Any],
    selection: dict[str, Any],
    seed: int,
    created: str | None = None,
    benchmark: dict[str, str] | None = None,
    tool: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return a bundle header; the one place where its fields are put together."""
    return {
        "type": "header",
        "bundle_version": BUNDLE_VERSION,
        "benchmark": benchmark or benchmark_version(),
        "agent": agent,
        "renderer": renderer,
        "selection": selection,
        "seed": seed,
        "created": created or now_iso(),
        "tool": {"name": "mirrorbench", "version": tool_version(), **(tool or {})},
        **(extra or {}),
    }


def now_iso() -> str:
    """Return the current UTC time as ISO 8601, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@cache
def schema() -> dict[str, Any]:
    """Return the bundle's JSON Schema (header and episode definitions)."""
    text = resources.files("evaluation").joinpath("schemas/bundle-v1.schema.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def _validators() -> dict[str, jsonschema_rs.Draft202012Validator]:
    root = schema()
    return {
        kind: jsonschema_rs.Draft202012Validator({**root, "$ref": f"#/$defs/{kind}"})
        for kind in ("header", "episode")
    }


def schema_errors(record: dict[str, Any], kind: str) -> list[str]:
    """Return a readable message per schema violation of a header or an episode record."""
    errors = sorted(
        _validators()[kind].iter_errors(record), key=lambda e: list(map(str, e.instance_path))
    )
    return [
        f"{'/'.join(str(p) for p in e.instance_path) or '(record)'}: {e.message}" for e in errors
    ]


class BundleError(ValueError):
    """A bundle that cannot be read at all (missing, empty, not JSON Lines, wrong version)."""


@dataclass
class Bundle:
    """A parsed bundle: the header and its episode records, in file order."""

    header: dict[str, Any]
    episodes: list[dict[str, Any]] = field(default_factory=list)
    line_numbers: list[int] = field(default_factory=list)
    """File line of each episode record (1-based), for error messages."""
    truncated_tail: bool = False
    """The last line was cut off (an interrupted write); it was ignored."""


def read_bundle(path: Path) -> Bundle:
    """Read a bundle; an unparsable last line (interrupted write) is ignored and flagged."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise BundleError(f"{path}: cannot read: {exc.strerror}") from None
    if not lines:
        raise BundleError(f"{path}: empty file, expected a header line")
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError as exc:
        raise BundleError(f"{path}:1: header is not JSON: {exc.msg}") from None
    if not isinstance(header, dict) or header.get("type") != "header":
        raise BundleError(f'{path}:1: the first line must be the header ("type": "header")')
    if header.get("bundle_version") != BUNDLE_VERSION:
        raise BundleError(
            f"{path}:1: bundle_version {header.get('bundle_version')!r} is not supported "
            f"(expected {BUNDLE_VERSION})"
        )
    bundle = Bundle(header)
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):
                bundle.truncated_tail = True
                break
            raise BundleError(f"{path}:{number}: not JSON: {exc.msg}") from None
        bundle.episodes.append(record)
        bundle.line_numbers.append(number)
    return bundle


METRIC_KEYS = ("tsr", "sir", "fcr", "pcr", "avg")


def episode_record(
    *,
    scene_id: str,
    track: str,
    level: int,
    status: str,
    error: str | None,
    d0_steps: int,
    max_steps: int,
    success: bool,
    distances: list[int],
    steps: list[dict[str, Any]],
    metrics: dict[str, float] | None,
    started: str | None = None,
    finished: str | None = None,
) -> dict[str, Any]:
    """Return an episode's bundle record: the one place where its fields are put together.

    The runner, the site's exporter and its worker all write episodes through here; ``verify``
    and the importer read what it writes. ``started`` and ``finished`` are left out when unknown.
    """
    record: dict[str, Any] = {
        "type": "episode",
        "scene_id": scene_id,
        "track": track,
        "level": level,
        "status": status,
        "error": error or None,
        "d0_steps": d0_steps,
        "max_steps": max_steps,
        "success": success,
        "distances": list(distances),
        "steps": steps,
        "metrics": {m: metrics[m] for m in METRIC_KEYS} if metrics is not None else None,
    }
    if started is not None:
        record["started"] = started
    if finished is not None:
        record["finished"] = finished
    return record


def episode_results(episodes: list[dict[str, Any]]) -> list[EpisodeResult]:
    """Return the metrics module's view of episode records."""
    return [
        EpisodeResult(
            scene_id=e["scene_id"],
            track=e["track"],
            level=e["level"],
            distances=tuple(e["distances"]),
            status=e["status"],
        )
        for e in episodes
    ]


class BundleWriter:
    """Appends episode records to a bundle, one flushed and synced line each, thread-safe."""

    def __init__(self, path: Path, header: dict[str, Any], *, keep: list[dict[str, Any]]) -> None:
        """Start ``path`` afresh with ``header`` and the already finished ``keep`` records.

        The file is rewritten through a temporary file and an atomic rename, so an existing
        bundle is never left half-written.
        """
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("w") as handle:
            for record in (header, *keep):
                handle.write(json.dumps(record, separators=(",", ":")) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(path)
        self._handle = path.open("a")

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with self._lock:
            self._handle.write(line)
            self._handle.flush()
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        with self._lock:
            self._handle.close()

    def __enter__(self) -> BundleWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
