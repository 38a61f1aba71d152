"""From an Inspect log to a results bundle: ``mirrorbench import-inspect LOG --out BUNDLE``.

Each sample becomes an episode record. Its steps are the model calls of its ``step <i>`` spans:
the responses, tokens, timings and model ids come from the log, the actions are read from the
responses again and replayed on the grid (``simulation.dynamics``), so every option, distance
and hand cell of the bundle is the replay's, as ``mirrorbench verify`` then checks. What the
log itself claims (each step's outcome in the sample's store, the scorer's distances and
metrics) must agree with the replay; a log that disagrees (edited, or written by other code) is
refused, naming the sample and the step. So is a log of another benchmark version, of another
task, of several epochs, or generated with a temperature other than the protocol's 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from inspect_ai.event import ModelEvent, SpanBeginEvent
from inspect_ai.log import EvalLog, EvalSample, read_eval_log, read_eval_log_samples
from inspect_ai.model import GenerateConfig, ModelOutput

from evaluation.agents import reply_decision
from evaluation.bundle import (
    BUNDLE_VERSION,
    BundleWriter,
    benchmark_version,
    episode_record,
    now_iso,
    tool_version,
)
from evaluation.messages import TransportError
from evaluation.metrics import episode_score
from evaluation.public import public_base_url
from evaluation.runner import step_record
from evaluation.vocabulary import COMPLETED, ERROR, MAIN_CONDITION, METRICS, parse_condition
from mirrorbench.client import STEP_SPAN, reply_from_output
from mirrorbench.dataset import sample_id
from mirrorbench.solver import EPISODE_KEY, step_claim
from mirrorbench.task import METADATA_KEY, TASK_NAME
from simulation.catalogue import UnknownSceneError, get_scene
from simulation.dynamics import Action, EpisodeState
from simulation.renderer import frame_key
from simulation.versions import BENCHMARK_VERSION, unknown_version_message

_TOLERANCE = 1e-9
ATTACHMENT = "attachment://"
GENERATION_FIELDS = ("temperature", "max_tokens", "seed", "top_p", "top_k", "reasoning_effort")
"""The generation settings a bundle header records from the model calls' config (when set)."""
SENT_FIELDS = (*GENERATION_FIELDS, "stop_seqs", "frequency_penalty", "presence_penalty")
"""The generation settings a step records (``request.params``) when its call set them."""


class InspectLogRefused(ValueError):
    """An Inspect log that cannot become a results bundle; the message says why."""


@dataclass
class ConvertedLog:
    """A log as a bundle: its header and episode records, in the log's sample order."""

    header: dict[str, Any]
    episodes: list[dict[str, Any]] = field(default_factory=list)


def _task_metadata(log: EvalLog, path: Path) -> dict[str, Any]:
    """Return the task metadata of a MirrorBench log of this benchmark version, or refuse it."""
    spec = log.eval
    if spec.task_registry_name != TASK_NAME and spec.task != TASK_NAME:
        raise InspectLogRefused(f"{path}: a log of task {spec.task!r}, not {TASK_NAME}")
    if str(spec.task_version) != BENCHMARK_VERSION:
        why = unknown_version_message(spec.task_version)
        raise InspectLogRefused(f"{path}: task version {spec.task_version!r}: {why}")
    metadata = (spec.metadata or {}).get(METADATA_KEY)
    if not isinstance(metadata, dict):
        raise InspectLogRefused(f"{path}: the log has no {METADATA_KEY!r} task metadata")
    if metadata.get("benchmark") != benchmark_version():
        raise InspectLogRefused(
            f"{path}: benchmark {metadata.get('benchmark')} differs from this engine's "
            f"{benchmark_version()}"
        )
    if log.status == "started":
        raise InspectLogRefused(f"{path}: the eval has not finished (status 'started')")
    epochs = spec.config.epochs or 1
    if epochs != 1:
        raise InspectLogRefused(
            f"{path}: {epochs} epochs; a bundle holds one episode per scene and level"
        )
    return metadata


def _iso(text: str | None) -> str | None:
    if not text:
        return None
    return datetime.fromisoformat(text).isoformat(timespec="seconds")


def _step_events(sample: EvalSample) -> list[ModelEvent]:
    """Return the model call of each ``step <i>`` span of a sample, in step order."""
    spans = {
        event.id: event.name
        for event in sample.events
        if isinstance(event, SpanBeginEvent) and event.type == STEP_SPAN
    }
    calls = [e for e in sample.events if isinstance(e, ModelEvent) and e.span_id in spans]
    for index, event in enumerate(calls):
        if spans[event.span_id or ""] != f"step {index}":
            raise InspectLogRefused(
                f"{sample.id}: model call {index} is in span {spans[event.span_id or '']!r}, "
                f"expected 'step {index}'"
            )
    return calls


def _answer(output: ModelOutput, sample: EvalSample) -> ModelOutput:
    """Return ``output`` with its answer text in full (a log may keep long texts apart, as
    attachments of the sample: they are read without resolving the frames)."""
    text = output.completion
    if text.startswith(ATTACHMENT):
        attached = sample.attachments.get(text.removeprefix(ATTACHMENT))
        if attached is None:
            raise InspectLogRefused(f"{sample.id}: an answer's text is missing from the log")
        return output.model_copy(update={"completion": attached})
    return output


def _generation(config: GenerateConfig) -> dict[str, Any]:
    settings = config.model_dump(include=set(GENERATION_FIELDS), exclude_none=True)
    return {"temperature": settings.pop("temperature", None), "max_tokens": None, **settings}


def _sent(config: GenerateConfig) -> dict[str, Any]:
    """Return the generation settings a model call asked its provider to send (those set)."""
    return config.model_dump(include=set(SENT_FIELDS), exclude_none=True)


def _fingerprint(event: ModelEvent) -> str | None:
    """Return the provider's system fingerprint, where the log holds the raw response (every
    call with ``--log-model-api``; by default the first few)."""
    response = event.call.response if event.call is not None else None
    fingerprint = response.get("system_fingerprint") if isinstance(response, dict) else None
    return str(fingerprint) if fingerprint is not None else None


@dataclass
class _Replayed:
    record: dict[str, Any]
    generation: dict[str, Any] | None


def _replay_sample(
    sample: EvalSample, renderer: dict[str, Any], condition: str = MAIN_CONDITION
) -> _Replayed:
    """Return the episode record of one sample, its steps replayed under the task's
    ``condition``; refuse what disagrees."""
    where = str(sample.id)
    metadata = sample.metadata or {}
    try:
        scene = get_scene(str(metadata.get("scene")), condition)
    except UnknownSceneError:
        raise InspectLogRefused(f"{where}: unknown scene {metadata.get('scene')!r}") from None
    level = metadata.get("level")
    if not isinstance(level, int) or sample.id != sample_id(scene.id, level):
        raise InspectLogRefused(f"{where}: its id does not name its scene and level {level!r}")
    state = EpisodeState(scene)
    steps: list[dict[str, Any]] = []
    generation: dict[str, Any] | None = None
    status, error = COMPLETED, None
    calls = _step_events(sample)
    if sample.error is not None or sample.limit is not None:
        # What ended the sample may have come after its last answer arrived and before the
        # episode took the step (a message limit counts the answer): that answer was never
        # played. The store lists the steps played.
        played = len(((sample.store or {}).get(EPISODE_KEY) or {}).get("steps") or [])
        if len(calls) - played in (0, 1):
            calls = calls[:played]
    for index, event in enumerate(calls):
        if event.error is not None or event.output is None:
            status, error = ERROR, f"step {index}: the model call failed: {event.error}"
            break
        reply = reply_from_output(_answer(event.output, sample), event.working_time or 0.0)
        reply.fingerprint = _fingerprint(event)
        reply.request = {
            "params": _sent(event.config),
            "cached": event.cache == "read",
            "retries": event.retries or 0,
        }
        if reply.request["params"].get("temperature", 0) != 0:
            raise InspectLogRefused(
                f"{where}: step {index} was sent temperature "
                f"{reply.request['params']['temperature']}; the protocol sends temperature 0"
            )
        generation = generation or _generation(event.config)
        try:
            decision = reply_decision(reply)
        except TransportError as exc:
            status, error = ERROR, str(exc)
            break
        key = frame_key(renderer["version"], scene.id, state.cell, renderer["image_size"])
        transition = state.step(Action(decision.option) if decision.option is not None else None)
        steps.append(step_record(index, decision, transition, key))
    if sample.error is not None:
        status, error = ERROR, error or sample.error.message
    elif sample.limit is not None:
        status, error = ERROR, error or f"the sample's {sample.limit.type} limit ended it"
    _check_claims(sample, steps, state, status)
    metrics = None
    if status == COMPLETED:
        score = episode_score(state.distances)
        metrics = {m: getattr(score, m) for m in METRICS}
    record = episode_record(
        scene_id=scene.id,
        track=scene.track,
        level=level,
        status=status,
        error=error,
        d0_steps=scene.d0_steps,
        max_steps=scene.max_steps,
        success=state.success,
        distances=state.distances,
        steps=steps,
        metrics=metrics,
        started=_iso(sample.started_at),
        finished=_iso(sample.completed_at),
    )
    return _Replayed(record, generation)


def _check_claims(
    sample: EvalSample, steps: list[dict[str, Any]], state: EpisodeState, status: str
) -> None:
    """Refuse a sample whose store or score says anything the replay does not."""
    where = str(sample.id)
    claimed = (sample.store or {}).get(EPISODE_KEY) or {}
    claimed_steps = claimed.get("steps") or []
    if len(claimed_steps) != len(steps):
        raise InspectLogRefused(
            f"{where}: the log records {len(claimed_steps)} steps but holds {len(steps)} "
            "model answers"
        )
    for claim, step in zip(claimed_steps, steps, strict=True):
        replayed = step_claim(step)
        if claim != replayed:
            wrong = ", ".join(
                f"{name} {claim.get(name)!r} (the replay gives {value!r})"
                for name, value in replayed.items()
                if claim.get(name) != value
            )
            raise InspectLogRefused(f"{where}: step {step['index']}: {wrong}")
    if status != COMPLETED:
        return
    if not state.done:
        raise InspectLogRefused(
            f"{where}: the episode is complete in the log but its {len(steps)} answers do not "
            f"end it (budget {state.scene.max_steps}, no success)"
        )
    if claimed.get("distances") != state.distances:
        raise InspectLogRefused(
            f"{where}: distances {claimed.get('distances')}, the replay gives {state.distances}"
        )
    scores = sample.scores or {}
    if not scores:
        raise InspectLogRefused(f"{where}: the sample was not scored")
    for name, score in scores.items():
        value, meta = score.value, score.metadata or {}
        if meta.get("distances") != state.distances:
            raise InspectLogRefused(
                f"{where}: {name} scored distances {meta.get('distances')}, the replay gives "
                f"{state.distances}"
            )
        expected = episode_score(state.distances)
        if not isinstance(value, dict) or any(
            not math.isclose(
                float(value.get(m, math.nan)), getattr(expected, m), abs_tol=_TOLERANCE
            )
            for m in METRICS
        ):
            raise InspectLogRefused(
                f"{where}: {name} scored {value}, the replay gives "
                + ", ".join(f"{m} {getattr(expected, m):.6f}" for m in METRICS)
            )


def _header(
    log: EvalLog, path: Path, metadata: dict[str, Any], generation: dict[str, Any]
) -> dict[str, Any]:
    """Return the bundle header of a log: its model as the agent (the provider and model
    Inspect called), the task's renderer, selection and benchmark, and where it came from.

    Built here rather than from a run configuration: Inspect, not ``mirrorbench run``, chose
    the model and its settings, which only the log records.
    """
    spec = log.eval
    provider, _, model = spec.model.partition("/")
    renderer = metadata["renderer"]
    return {
        "type": "header",
        "bundle_version": BUNDLE_VERSION,
        "benchmark": metadata["benchmark"],
        "agent": {
            "name": f"inspect:{spec.model}",
            "kind": "model",
            "provider": provider,
            "model": model,
            "image_history": renderer["image_history"],
        },
        "renderer": renderer,
        "selection": metadata["selection"],
        **({"condition": metadata["condition"]} if "condition" in metadata else {}),
        "seed": 0,
        "created": _iso(spec.created) or now_iso(),
        "tool": {"name": "mirrorbench", "version": tool_version()},
        "model": {
            "provider": provider,
            "model": model,
            "base_url": public_base_url(spec.model_base_url) if spec.model_base_url else None,
        },
        "generation": generation,
        "inspect": {
            "inspect_ai": spec.packages.get("inspect_ai"),
            "task": spec.task,
            "task_version": spec.task_version,
            "eval_id": spec.eval_id,
            "run_id": spec.run_id,
            "status": log.status,
            "log": path.name,
        },
    }


def _samples(path: Path) -> Iterator[EvalSample]:
    # One sample at a time, its attachments (the frames: about 4 MB an episode at 1024 px)
    # left unresolved: only the answers are read, each resolved alone (_answer).
    yield from read_eval_log_samples(path, all_samples_required=False, resolve_attachments=False)


def convert_log(path: Path) -> ConvertedLog:
    """Return the results bundle of a finished MirrorBench Inspect log.

    Raises:
        InspectLogRefused: Another task, benchmark version, several epochs, a temperature other
            than 0, an unfinished eval, or a claim of the log that the replay contradicts.
    """
    log = read_eval_log(path, header_only=True)
    metadata = _task_metadata(log, path)
    renderer = metadata["renderer"]
    try:
        condition = parse_condition(metadata.get("condition", MAIN_CONDITION))
    except ValueError as exc:
        raise InspectLogRefused(f"{path}: {exc}") from None
    episodes: list[dict[str, Any]] = []
    generation: dict[str, Any] | None = None
    seen: set[str] = set()
    for sample in _samples(path):
        if str(sample.id) in seen:
            raise InspectLogRefused(f"{path}: sample {sample.id} appears twice")
        seen.add(str(sample.id))
        replayed = _replay_sample(sample, renderer, condition)
        episodes.append(replayed.record)
        if generation is None:
            generation = replayed.generation
        elif replayed.generation not in (None, generation):
            raise InspectLogRefused(
                f"{path}: sample {sample.id} was generated with {replayed.generation}, "
                f"others with {generation}"
            )
    if generation is not None and generation["temperature"] not in (None, 0, 0.0):
        raise InspectLogRefused(
            f"{path}: generated with temperature {generation['temperature']}; the protocol "
            "sends temperature 0"
        )
    header = _header(log, path, metadata, generation or {"temperature": 0.0, "max_tokens": None})
    return ConvertedLog(header, episodes)


def write_bundle(converted: ConvertedLog, out: Path) -> None:
    """Write a converted log as a results bundle (replacing ``out`` atomically)."""
    with BundleWriter(out, converted.header, keep=converted.episodes):
        pass
