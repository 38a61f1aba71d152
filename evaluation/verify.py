"""``mirrorbench verify``: replay a bundle through the dynamics and check every claim in it.

No rendering is needed: the recorded responses are parsed again, the moves replayed on the
grid, and every recorded option, execution flag, distance, hand cell, success flag and metric
compared with what the replay gives. Anything that disagrees is reported, one line each. A
bundle of a control condition (its header's ``condition``) is replayed under that condition:
its marks, goals and so distances are the condition's.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

from evaluation.bundle import (
    Bundle,
    benchmark_version,
    episode_repeat,
    header_benchmark_version,
    header_repeats,
    schema_errors,
)
from evaluation.metrics import episode_score
from evaluation.parsing import parse_choice
from evaluation.vocabulary import COMPLETED, ERROR, MAIN_CONDITION, METRICS, parse_condition
from simulation.catalogue import Scene, scene_set
from simulation.dynamics import Action, EpisodeState
from simulation.versions import KNOWN_VERSIONS, unknown_version_message

REFUSAL_PREFIX = "no answer: "
_TOLERANCE = 1e-9
MAX_ERRORS_PER_RECORD = 10
"""Schema errors reported per record; a record that breaks more is wrong all over."""
MAX_PROBLEMS = 1000
"""Problems reported per bundle: past them, checking stops and a last line says so."""


def verify_bundle(bundle: Bundle) -> list[str]:
    """Return one message per discrepancy; an empty list means the bundle is consistent.

    At most ``MAX_PROBLEMS`` are returned, then a line saying that checking stopped; each
    record's schema errors are cut at ``MAX_ERRORS_PER_RECORD``. The time and memory taken are
    bounded by the bundle's size: no check does work in proportion to the number of problems
    a record could have.
    """
    problems = list(itertools.islice(_find_problems(bundle), MAX_PROBLEMS + 1))
    if len(problems) > MAX_PROBLEMS:
        problems[MAX_PROBLEMS:] = [
            f"checking stopped after {MAX_PROBLEMS} problems: the bundle is wrong all over"
        ]
    return problems


def _find_problems(bundle: Bundle) -> Iterator[str]:
    """Yield every discrepancy, lazily: the caller stops asking once it has enough."""
    header = bundle.header
    errors = _capped("header (line 1)", schema_errors(header, "header", MAX_ERRORS_PER_RECORD + 1))
    if errors:
        yield from errors
        return
    version = header_benchmark_version(header)
    if version not in KNOWN_VERSIONS:
        yield f"header: {unknown_version_message(version)}"
        return
    if header["benchmark"] != benchmark_version():
        yield (
            f"header: benchmark {header['benchmark']} differs from this verifier's "
            f"{benchmark_version()}"
        )
        return
    try:
        condition = parse_condition(header.get("condition", MAIN_CONDITION))
    except ValueError as exc:
        yield f"header: {exc}"
        return
    known = scene_set(condition)
    selected_scenes = header["selection"]["scenes"]
    for scene in selected_scenes:
        if scene not in known:
            yield f"header: unknown scene {scene!r} in the selection"
    # Every repeat of every selected episode, each checked on its own (a run of one repeat has
    # only repeat 0, which its records do not name).
    repeats = header_repeats(header)
    expected = {
        (s, level, repeat)
        for s in selected_scenes
        for level in header["selection"]["levels"]
        for repeat in range(repeats)
    }
    seen: dict[tuple[str, int, int], int] = {}
    for record, line in zip(bundle.episodes, bundle.line_numbers, strict=True):
        where = f"line {line}"
        errors = schema_errors(record, "episode", MAX_ERRORS_PER_RECORD + 1)
        if errors:
            yield from _capped(where, errors)
            scene_id, level = record.get("scene_id"), record.get("level")
            if isinstance(scene_id, str) and isinstance(level, int):
                # broken, not missing as well
                seen.setdefault((scene_id, level, episode_repeat(record)), line)
            continue
        key = (record["scene_id"], record["level"], episode_repeat(record))
        where = f"line {line} ({_episode_name(*key, repeats)})"
        if key in seen:
            yield f"{where}: duplicate of the episode on line {seen[key]}"
            continue
        seen[key] = line
        if key not in expected:
            yield f"{where}: not part of the header's selection of scenes, levels and repeats"
        for message in _check_episode(record, known):
            yield f"{where}: {message}"
    for scene_id, level, repeat in sorted(expected - set(seen)):
        yield f"missing episode: {_episode_name(scene_id, level, repeat, repeats)}"
    if bundle.truncated_tail:
        yield (
            f"line {bundle.truncated_line}: the last line is cut off (an interrupted write): "
            "run again with --resume"
        )


def _episode_name(scene_id: str, level: int, repeat: int, repeats: int) -> str:
    """How a message names an episode: ``scene L2``, with ``repeat 1`` in a run of several."""
    return f"{scene_id} L{level}" + (f" repeat {repeat}" if repeats > 1 or repeat else "")


def _capped(where: str, errors: list[str]) -> list[str]:
    """Return a record's first ``MAX_ERRORS_PER_RECORD`` schema errors, and a line if more."""
    shown = [f"{where}: {message}" for message in errors[:MAX_ERRORS_PER_RECORD]]
    if len(errors) > MAX_ERRORS_PER_RECORD:
        shown.append(f"{where}: more schema errors; the first {MAX_ERRORS_PER_RECORD} are listed")
    return shown


def _check_episode(record: dict[str, Any], scenes: dict[str, Scene] | None = None) -> list[str]:
    """Return the discrepancies of one episode, replayed in ``scenes`` (the bundle's
    condition's; default the paper's)."""
    try:
        scene = (scene_set() if scenes is None else scenes)[record["scene_id"]]
    except KeyError:
        return [f"unknown scene {record['scene_id']!r}"]
    problems = []
    if record["track"] != scene.track:
        problems.append(f"track {record['track']!r}, but the scene is on the {scene.track} track")
    if record["d0_steps"] != scene.d0_steps or record["max_steps"] != scene.max_steps:
        problems.append(
            f"d0_steps/max_steps {record['d0_steps']}/{record['max_steps']}, expected "
            f"{scene.d0_steps}/{scene.max_steps}"
        )
    state = EpisodeState(scene)
    for i, step in enumerate(record["steps"]):
        at = f"step {i}"
        if step["index"] != i:
            problems.append(f"{at}: index {step['index']}, expected {i}")
        if state.done:
            problems.append(f"{at}: the episode had already ended (success or step budget)")
            break
        problems += [f"{at}: {m}" for m in _check_option(step)]
        option = step["option"]
        transition = state.step(Action(option) if option is not None else None)
        if step["executed"] != transition.executed:
            problems.append(
                f"{at}: executed={step['executed']}, the replay gives {transition.executed}"
            )
        if step["distance_steps"] != transition.distance_steps:
            problems.append(
                f"{at}: distance {step['distance_steps']}, "
                f"the replay gives {transition.distance_steps}"
            )
        if tuple(step["hand_cell"]) != transition.cell:
            problems.append(
                f"{at}: hand cell {step['hand_cell']}, the replay gives {list(transition.cell)}"
            )
    if record["distances"] != state.distances:
        problems.append(f"distances {record['distances']}, the replay gives {state.distances}")
    if record["success"] != state.success:
        problems.append(f"success={record['success']}, the replay gives {state.success}")
    if record["status"] == COMPLETED:
        if not state.done:
            problems.append(
                f"completed after {state.steps_taken} steps without success, but the budget is "
                f"{scene.max_steps}"
            )
        problems += _check_metrics(record, state.distances)
    elif record["status"] == ERROR and record["metrics"] is not None:
        problems.append("an episode with status 'error' must not carry metrics")
    return problems


def _check_option(step: dict[str, Any]) -> list[str]:
    parse_error = step["parse_error"]
    if parse_error is not None and parse_error.startswith(REFUSAL_PREFIX):
        return [] if step["option"] is None else ["a refused answer cannot carry an option"]
    parsed = parse_choice(step["response"])
    if parsed.option != step["option"]:
        return [f"option {step['option']}, but the response parses as {parsed.option}"]
    return []


def _check_metrics(record: dict[str, Any], distances: list[int]) -> list[str]:
    recorded = record["metrics"]
    if recorded is None:
        return ["a completed episode must carry metrics"]
    try:
        score = episode_score(distances)
    except ValueError as exc:
        return [f"metrics cannot be computed: {exc}"]
    wrong = [
        f"{m} {recorded[m]} (expected {getattr(score, m):.6f})"
        for m in METRICS
        if not math.isclose(recorded[m], getattr(score, m), abs_tol=_TOLERANCE)
    ]
    return [f"metrics disagree: {', '.join(wrong)}"] if wrong else []
