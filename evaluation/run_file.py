"""A run's options in one TOML file: ``mirrorbench run --config run.toml``.

The file's top-level keys are a ``RunConfig`` (``RunConfig.from_dict`` checks them: an error
names the field), and its ``[execution]`` table how this machine runs it (workers, render
threads, the output path, resuming), which changes no result. The site offers every run's
configuration as such a file (``/runs/<id>/run.toml``), so that ``mirrorbench run --config``
repeats the run; ``docs/exports.md`` shows one.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from evaluation.config import RunConfig, RunConfigError
from evaluation.vocabulary import SCENE_TRACKS
from simulation.catalogue import scene_set, select_scenes

EXECUTION = "execution"
"""The table of the options that change how a run executes, not what it measures."""


@dataclass(frozen=True)
class Execution:
    """How one process runs a configuration (``mirrorbench run``'s options of that kind).

    Attributes:
        workers: Model requests in flight.
        render_threads: Persistent renderers; None: one per core.
        out: The bundle's path; None: ``var/runs/<agent>.jsonl``.
        resume: Keep and skip the episodes the bundle already holds.
    """

    workers: int = 1
    render_threads: int | None = None
    out: str | None = None
    resume: bool = False


@dataclass(frozen=True)
class RunFile:
    """A run file's configuration and execution options."""

    config: RunConfig
    execution: Execution


def run_file_from_dict(data: Mapping[str, Any]) -> RunFile:
    """Return the run file that ``data`` (a parsed TOML document) describes.

    Raises:
        RunConfigError: A key that is no option, or a value its option does not take; the
            error names the option (``execution.workers`` for those of the table).
    """
    values = dict(data)
    table = values.pop(EXECUTION, {})
    if not isinstance(table, Mapping):
        raise RunConfigError(EXECUTION, "expected a table of workers, render_threads, out, resume")
    return RunFile(RunConfig.from_dict(values), _execution(table))


def load_run_file(path: Path) -> RunFile:
    """Read a run file (TOML).

    Raises:
        RunConfigError: The file cannot be read, is not TOML (the error says where), or does
            not describe a run (see ``run_file_from_dict``).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RunConfigError("config", f"cannot read {path}: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RunConfigError("config", f"{path} is not TOML: {exc}") from None
    return run_file_from_dict(data)


def run_file_text(
    config: RunConfig, execution: Execution | None = None, *, comment: Sequence[str] = ()
) -> str:
    """Return ``config`` (and ``execution``'s options other than their defaults) as a run file
    that ``load_run_file`` reads back to the same configuration.

    Options without a value (no base URL, no token cap) are left out: TOML has no null, and an
    absent option takes its default, which is None for both.
    """
    lines = [f"# {line}" for line in comment]
    lines += [
        f"{key} = {_toml(value)}" for key, value in config.as_dict().items() if value is not None
    ]
    if execution is not None:
        changed = [
            (f.name, getattr(execution, f.name))
            for f in fields(execution)
            if getattr(execution, f.name) != f.default and getattr(execution, f.name) is not None
        ]
        if changed:
            lines += ["", f"[{EXECUTION}]", *(f"{key} = {_toml(value)}" for key, value in changed)]
    return "\n".join(lines) + "\n"


def config_from_header(header: Mapping[str, Any]) -> RunConfig:
    """Return the configuration a bundle header describes (for runs stored without one).

    A header that stores its resolved configuration (``config``, written since issue 34) gives
    it back whole, ``pairs`` and ``use_cache`` included, its endpoint as the header's ``model``
    names it (a site shows an outsider only the scheme and host); an older header is read from
    its parts.

    Raises:
        RunConfigError: The header names an agent or a value that no configuration takes.
    """
    stored = header.get("config")
    if isinstance(stored, Mapping):
        resolved = dict(stored)
        model = header.get("model")
        if resolved.get("base_url") and isinstance(model, Mapping) and model.get("base_url"):
            resolved["base_url"] = model["base_url"]
        return RunConfig.from_dict({k: v for k, v in resolved.items() if v is not None})
    agent = header.get("agent") or {}
    renderer = header.get("renderer") or {}
    selection = header.get("selection") or {}
    model = header.get("model") or {}
    generation = header.get("generation") or {}
    data: dict[str, Any] = {
        "agent": agent.get("name"),
        "levels": selection.get("levels"),
        "scenes": _selection_text(selection.get("scenes") or []),
        "base_url": model.get("base_url"),
        "seed": header.get("seed", 0),
        "image_size": renderer.get("image_size"),
        # An agent that looks at no image has 0 in the renderer's field, whatever was asked.
        "image_history": agent.get("image_history", renderer.get("image_history") or None),
        "max_tokens": generation.get("max_tokens"),
        "condition": header.get("condition"),
        "repeats": selection.get("repeats"),
    }
    return RunConfig.from_dict({k: v for k, v in data.items() if v is not None})


def _selection_text(scenes: Sequence[str]) -> str:
    """A list of scene ids as a selection: ``all``, a track's name, else the ids joined."""
    chosen = set(scenes)
    if chosen == set(scene_set()):
        return "all"
    for track in SCENE_TRACKS:
        if chosen == {s.id for s in select_scenes(track.lower())}:
            return track.lower()
    return ",".join(scenes)


def _toml(value: Any) -> str:
    """A TOML value: JSON's strings, integers and arrays are TOML's; booleans are lower case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _execution(table: Mapping[str, Any]) -> Execution:
    known = {f.name for f in fields(Execution)}
    unknown = sorted(set(table) - known)
    if unknown:
        raise RunConfigError(
            f"{EXECUTION}.{unknown[0]}",
            f"is no execution option ({', '.join(f.name for f in fields(Execution))})",
        )
    values: dict[str, Any] = {}
    for name in ("workers", "render_threads"):
        if name in table:
            value = table[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RunConfigError(
                    f"{EXECUTION}.{name}", f"expected a positive whole number, got {value!r}"
                )
            values[name] = value
    if "out" in table:
        if not isinstance(table["out"], str) or not table["out"]:
            raise RunConfigError(f"{EXECUTION}.out", f"expected a path, got {table['out']!r}")
        values["out"] = table["out"]
    if "resume" in table:
        if not isinstance(table["resume"], bool):
            raise RunConfigError(
                f"{EXECUTION}.resume", f"expected true or false, got {table['resume']!r}"
            )
        values["resume"] = table["resume"]
    return Execution(**values)
