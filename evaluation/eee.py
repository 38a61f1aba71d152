"""A run's results in the Every Eval Ever schema (0.3.0): an aggregate file and its samples.

Every Eval Ever (https://github.com/evaleval/every_eval_ever) is a shared form for evaluation
results: an aggregate ``EvaluationLog`` (who evaluated which model with what library and
settings, and each result with its uncertainty) and an instance-level JSONL file, one record
per sample. MirrorBench writes both for a run: ``mirrorbench export-eee BUNDLE --out DIR`` from
a results bundle, and the site at ``/runs/<id>/eee.json`` and ``/runs/<id>/eee-instances.jsonl``.

What goes where (``docs/exports.md`` lists every field):

- One aggregate result per cell of the run's tables and metric: each level's table and the
  overall one (the paper's Tables IV-VII and II), each track and both pooled, TSR, SIR, FCR,
  PCR and AVG, with the 95% bootstrap interval over scenes the site shows (none for the
  paper's reported rows) and, for a run of several repeats, how its repeats differ.
- One instance record per episode, an ``agentic`` interaction: the level's task text, each
  step as a user turn (the view, which the schema cannot hold: its key and, from the site, its
  URL are in ``metadata``) and an assistant turn (the answer), the option read from each
  answer, the episode's TSR as its score (the level's TSR is their mean), its other metrics,
  tokens and latency. The record links to its level and track's TSR result.

The files are named and placed as the Every Eval Ever datastore expects them
(``data/mirrorbench/<developer>/<model>/<uuid>.json`` and ``<uuid>_samples.jsonl``), with a
UUID derived from the evaluation's id, so the same run gives the same bytes. Plain Python: the
``every-eval-ever`` package is not needed to write them (the tests validate them with it).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evaluation.details import Details, aware_time
from evaluation.metrics import (
    D_TH,
    EpisodeResult,
    bootstrap_ci,
    repeat_spread,
    score_json,
)
from evaluation.prompts import OPTION_TEXT, task_text
from evaluation.vocabulary import (
    COMPLETED,
    LEVEL_KEYS,
    MAIN_CONDITION,
    METRIC_NAMES,
    METRICS,
    OVERALL,
    TRACKS,
    condition_label,
    metric_label,
    table_label,
    track_label,
)
from simulation.catalogue import UnknownSceneError, get_scene

SCHEMA_VERSION = "0.3.0"
"""The Every Eval Ever schema these files follow (the ``every-eval-ever`` package's version)."""
COLLECTION = "mirrorbench"
"""The datastore folder the files go under: ``data/mirrorbench/...``."""
LIBRARY = "mirrorbench"
CONFIDENCE = 0.95
N_RESAMPLES = 1000
"""The bootstrap the site computes its intervals with (``evaluation.metrics.bootstrap_ci``,
seed 0), which ``scores_from_results`` repeats for a bundle."""
BOOTSTRAP_METHOD = (
    "percentile bootstrap over scenes, resampled within each track (the levels of a scene stay "
    "paired); with repeats, each drawn scene also draws its repeats"
)

SEEN_IMAGE_NOTE = (
    "The model saw an image before each answer, which the schema has no field for: the user "
    "turn before each answer is that view; metadata.frame_keys names it, metadata.frame_urls "
    "gives its address where a site serves it."
)

# FCR and PCR are 1 - (d - d_th) / (d_0 - d_th): above 1 when the hand ends (or passes) within
# d_th of the mark, at most 2 since d_0 >= d_th + 1; FCR is negative when the episode ends
# further away than it started. SIR and TSR are shares.
_BOUNDS: dict[str, tuple[float | str, float | str]] = {
    "tsr": (0, 1),
    "sir": (0, 1),
    "fcr": ("-Infinity", 2),
    "pcr": (0, 2),
    "avg": ("-Infinity", 1.5),
}
_UNITS = {"tsr": "proportion", "sir": "proportion", "fcr": "ratio", "pcr": "ratio", "avg": "ratio"}
_KINDS = {"tsr": "success_rate", "sir": "ratio", "fcr": "ratio", "pcr": "ratio", "avg": "mean"}
_PATH_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
_DEPLOYMENTS = ("self_deployed", "externally_managed", "unknown")
_AVAILABILITY = ("open_weights", "closed_weights", "unknown")
_RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")


@dataclass(frozen=True)
class Cell:
    """One cell of a run's tables (a table x a track): its scores and their uncertainty.

    Attributes:
        values: Metric -> score, for every name in ``METRICS``.
        interval: Metric -> (low, high), the 95% bootstrap interval; None for reported rows.
        episodes: The completed episodes the cell pools, where known.
        spread: A run of several repeats: ``evaluation.metrics.RepeatSpread.as_dict``.
    """

    values: Mapping[str, float]
    interval: Mapping[str, Sequence[float]] | None = None
    episodes: int | None = None
    spread: Mapping[str, Any] | None = None


Scores = Mapping[tuple[str, str], Cell]
"""A run's cells by (table, track): tables ``"0"``-``"3"`` and ``overall``, tracks ``human``,
``robot`` and ``overall``."""


@dataclass(frozen=True)
class Source:
    """Where the results come from: the aggregate's ``source_metadata``.

    Attributes:
        kind: ``evaluated`` (run by the site), ``verified`` (an uploaded bundle the site
            replayed step by step), ``reported`` (the paper's published table) or ``bundle``
            (a results bundle exported with the command line).
        relationship: The evaluator's relationship to the model (``first_party`` for a
            baseline MirrorBench wrote, ``third_party``, ``other`` where unknown).
        organisation: Who provides the data.
        url: Its address (the site's), if any.
        citation: Where reported results come from.
    """

    kind: str
    relationship: str
    organisation: str = "MirrorBench"
    url: str | None = None
    citation: str | None = None

    def __post_init__(self) -> None:
        if self.relationship not in _RELATIONSHIPS:
            raise ValueError(f"relationship must be one of {_RELATIONSHIPS}")


@dataclass(frozen=True)
class ModelIdentity:
    """The model as the aggregate's ``model_info`` names it.

    Attributes:
        name: Its name (the board's, or the agent's).
        developer: The id's first part: a path component (``openai``, ``mirrorbench``).
        model: The id's second part: a path component (``gpt-4o``, ``random``).
        deployment: ``self_deployed``, ``externally_managed`` or ``unknown``.
        availability: ``open_weights``, ``closed_weights`` or ``unknown``.
        organisation: Its developer as people name it, if known.
        platform: The API it was reached through, if any (``openai``, ``anthropic``).
    """

    name: str
    developer: str
    model: str
    deployment: str = "unknown"
    availability: str = "unknown"
    organisation: str | None = None
    platform: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "developer", path_component(self.developer))
        object.__setattr__(self, "model", path_component(self.model))
        if self.deployment not in _DEPLOYMENTS:
            raise ValueError(f"deployment must be one of {_DEPLOYMENTS}")
        if self.availability not in _AVAILABILITY:
            raise ValueError(f"availability must be one of {_AVAILABILITY}")

    @property
    def id(self) -> str:
        """``developer/model``: what addresses its folder in the datastore."""
        return f"{self.developer}/{self.model}"


@dataclass(frozen=True)
class EeeExport:
    """The two files, as bytes, with the datastore paths they are named for.

    Attributes:
        aggregate: The aggregate ``EvaluationLog``, as a document.
        aggregate_json: It as written (UTF-8, sorted keys, two-space indent).
        aggregate_path: ``data/mirrorbench/<developer>/<model>/<uuid>.json``.
        instances: The samples file (one JSON object a line), or None for reported results.
        instances_path: ``.../<uuid>_samples.jsonl``, or None.
    """

    aggregate: dict[str, Any]
    aggregate_json: bytes
    aggregate_path: str
    instances: bytes | None = None
    instances_path: str | None = None


@dataclass(frozen=True)
class Written:
    """The files ``write_eee`` wrote, with their sizes in bytes."""

    paths: dict[str, Path] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)


def path_component(text: str) -> str:
    """Return ``text`` as one portable datastore folder name: letters, digits, ``.``, ``_``,
    ``+`` and ``-`` kept, other runs of characters made ``-``; never empty, ``data`` or
    ``unknown`` (the datastore refuses them), never ending in a dot."""
    cleaned = _PATH_UNSAFE.sub("-", text.replace(":", "_")).strip("-.")
    if cleaned.lower() in {"", "data", "unknown"}:
        cleaned = f"mirrorbench-{cleaned or 'model'}"
    return cleaned


def result_id(table: str, track: str, metric: str) -> str:
    """Return an aggregate result's id: ``level-2/human/tsr``, ``overall/overall/avg``."""
    return f"{_table_key(table)}/{track}/{metric}"


def scores_from_results(
    results: Sequence[EpisodeResult], n_resamples: int = N_RESAMPLES
) -> dict[tuple[str, str], Cell]:
    """Return a run's cells from its episodes, as the site stores them (``score_json``,
    ``bootstrap_ci`` with seed 0, completed-episode counts and, with repeats, the Overall
    column's ``repeat_spread``)."""
    point = score_json(results)
    intervals = bootstrap_ci(results, n_resamples=n_resamples)
    tables = {**point["levels"], OVERALL: point["overall"]}
    cis = {**intervals["levels"], OVERALL: intervals["overall"]}
    counts: dict[tuple[str, str], int] = {}
    for r in results:
        if r.status != COMPLETED:
            continue
        for table in (str(r.level), OVERALL):
            for track in (r.track.lower(), OVERALL):
                counts[table, track] = counts.get((table, track), 0) + 1
    repeated = any(r.repeat for r in results)
    cells: dict[tuple[str, str], Cell] = {}
    for table, row in tables.items():
        spread = repeat_spread(results, table) if repeated else None
        for track in TRACKS:
            values = row[track]
            if values is None:
                continue
            interval = (cis[table] or {}).get(track)
            cells[table, track] = Cell(
                values=values,
                interval=interval,
                episodes=counts.get((table, track)),
                spread=spread.as_dict() if spread is not None and track == OVERALL else None,
            )
    return cells


def eee_export(
    *,
    header: Mapping[str, Any] | None,
    scores: Scores,
    source: Source,
    model: ModelIdentity,
    retrieved: datetime,
    details: Details | None = None,
    config: Mapping[str, Any] | None = None,
    benchmark: Mapping[str, Any] | None = None,
    run_url: str | None = None,
    scenes_url: str | None = None,
    evaluated: datetime | None = None,
) -> EeeExport:
    """Return a run's Every Eval Ever files.

    Args:
        header: The run's bundle header (versions, agent, generation settings); None for
            reported results.
        scores: The run's cells (``scores_from_results``, or the site's stored rows).
        source: Where the results come from.
        model: The model's identity.
        retrieved: When the record was made: a fixed moment of the run (its end), so that the
            same run gives the same files.
        details: The run's per-episode details (``evaluation.details.details``): the samples
            file is written from them; None for reported results, which have no episodes.
        config: The run's resolved configuration (``RunConfig.as_dict``), if known.
        benchmark: The benchmark's versions when there is no header (a reported run's).
        run_url: The run's page on a site.
        scenes_url: The scene set's page on a site.
        evaluated: When the evaluation ran, if known.
    """
    header = header or {}
    benchmark = dict(header.get("benchmark") or benchmark or {})
    version = str(benchmark.get("version") or "unknown")
    condition = str(header.get("condition") or (config or {}).get("condition") or MAIN_CONDITION)
    stamp = str(int(retrieved.timestamp()))
    evaluation_id = f"{COLLECTION}/{model.id}/{stamp}"
    file_uuid = uuid.UUID(bytes=hashlib.sha256(evaluation_id.encode()).digest()[:16], version=4)
    folder = f"data/{COLLECTION}/{model.developer}/{model.model}"
    aggregate_path = f"{folder}/{file_uuid}.json"
    instances_path = f"{folder}/{file_uuid}_samples.jsonl" if details is not None else None

    generation = _generation_config(header, config)
    source_data = _source_data(benchmark, condition, scenes_url)
    results = []
    for table in (*LEVEL_KEYS, OVERALL):
        for track in TRACKS:
            cell = scores.get((table, track))
            if cell is None:
                continue
            for metric in METRICS:
                results.append(
                    _result(
                        table=table,
                        track=track,
                        metric=metric,
                        cell=cell,
                        version=version,
                        condition=condition,
                        source_data=source_data,
                        generation=generation,
                        evaluated=evaluated,
                    )
                )

    aggregate: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": evaluation_id,
        "retrieved_timestamp": stamp,
        "source_metadata": _source_metadata(source, run_url),
        "eval_library": _library(header, benchmark, condition),
        "model_info": _model_info(model),
        "evaluation_results": results,
    }
    if evaluated is not None:
        aggregate["evaluation_timestamp"] = _iso(evaluated)
    instances: bytes | None = None
    if details is not None and instances_path is not None:
        lines = _instances(
            details,
            evaluation_id=evaluation_id,
            model_id=model.id,
            version=version,
            condition=condition,
        )
        instances = "".join(_json_line(line) for line in lines).encode()
        aggregate["detailed_evaluation_results"] = {
            "format": "jsonl",
            "file_path": instances_path,
            "hash_algorithm": "sha256",
            "checksum": hashlib.sha256(instances).hexdigest(),
            "total_rows": len(lines),
            "additional_details": {"images": SEEN_IMAGE_NOTE},
        }
    return EeeExport(
        aggregate=aggregate,
        aggregate_json=(json.dumps(aggregate, indent=2, sort_keys=True) + "\n").encode(),
        aggregate_path=aggregate_path,
        instances=instances,
        instances_path=instances_path,
    )


def write_eee(export: EeeExport, out: Path) -> Written:
    """Write the files under ``out`` at their datastore paths (``out/data/mirrorbench/...``),
    so that ``out/data`` can be copied into the Every Eval Ever datastore as it is."""
    written = Written()
    files = [(export.aggregate_path, export.aggregate_json)]
    if export.instances is not None and export.instances_path is not None:
        files.append((export.instances_path, export.instances))
    for relative, data in files:
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.paths[relative] = path
        written.sizes[relative] = len(data)
    return written


def bundle_model(header: Mapping[str, Any], model_id: str | None = None) -> ModelIdentity:
    """Return the identity of a bundle's model: ``model_id`` (``developer/model``) when given,
    else the header's provider and model (``openai/gpt-4o``), else, for a baseline,
    ``mirrorbench/<agent>``, else ``local/<agent>``."""
    agent = header.get("agent") or {}
    name = str(agent.get("name") or "unknown")
    described = header.get("model") or {}
    baseline = agent.get("kind") == "baseline"
    platform = described.get("provider") if described else None
    if model_id is not None:
        developer, _, model = model_id.partition("/")
        if not developer or not model:
            raise ValueError(f"model id must be DEVELOPER/MODEL, got {model_id!r}")
    elif described.get("provider") and described.get("model"):
        developer, model = str(described["provider"]), str(described["model"])
    else:
        developer, model = ("mirrorbench" if baseline else "local"), name
    return ModelIdentity(
        name=str(described.get("model") or name),
        developer=developer,
        model=model,
        deployment=(
            "self_deployed"
            if baseline
            else "externally_managed"
            if platform and not described.get("base_url")
            else "unknown"
        ),
        availability="unknown",
        platform=platform,
    )


def bundle_source(header: Mapping[str, Any]) -> Source:
    """Return the source of a bundle exported with the command line: whoever ran it, first
    party for MirrorBench's own baselines, ``other`` (unknown) for a model."""
    baseline = (header.get("agent") or {}).get("kind") == "baseline"
    return Source(kind="bundle", relationship="first_party" if baseline else "other")


def bundle_time(header: Mapping[str, Any], episodes: Sequence[Mapping[str, Any]]) -> datetime:
    """Return the moment a bundle's record is dated by: its last episode's end, else the
    header's ``created``; the epoch when neither reads as a time."""
    moments = [aware_time(e.get("finished")) for e in episodes]
    moments.append(aware_time(header.get("created")))
    known = [m for m in moments if m is not None]
    return max(known) if known else datetime(1970, 1, 1, tzinfo=UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def _table_key(table: str) -> str:
    return OVERALL if table == OVERALL else f"level-{table}"


def _json_line(document: Mapping[str, Any]) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def _strings(values: Mapping[str, Any]) -> dict[str, str]:
    """The schema's ``additional_details``: every value a string, nulls left out."""
    return {
        key: value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        for key, value in values.items()
        if value is not None
    }


def _source_metadata(source: Source, run_url: str | None) -> dict[str, Any]:
    kinds = {
        "evaluated": "evaluated by the MirrorBench site (its workers called the model's API)",
        "verified": "a results bundle uploaded to the MirrorBench site and verified by replaying "
        "every step",
        "reported": "the MirrorBench paper's published tables",
        "bundle": "a MirrorBench results bundle (mirrorbench export-eee)",
    }
    metadata: dict[str, Any] = {
        "source_name": "MirrorBench leaderboard" if source.kind != "bundle" else "MirrorBench",
        # Raw per-episode outputs, whoever ran them; the paper gave only its tables.
        "source_type": "documentation" if source.kind == "reported" else "evaluation_run",
        "source_organization_name": source.organisation,
        "evaluator_relationship": source.relationship,
        "additional_details": _strings(
            {
                "mirrorbench_source": source.kind,
                "provenance": kinds.get(source.kind, source.kind),
                "run_url": run_url,
                "citation": source.citation or None,
            }
        ),
    }
    if source.url:
        metadata["source_organization_url"] = source.url
    return metadata


def _library(
    header: Mapping[str, Any], benchmark: Mapping[str, Any], condition: str
) -> dict[str, Any]:
    tool = header.get("tool") or {}
    renderer = header.get("renderer") or {}
    return {
        "name": str(tool.get("name") or LIBRARY),
        "version": str(tool.get("version") or "unknown"),
        "additional_details": _strings(
            {
                "benchmark_version": benchmark.get("version"),
                "scene_set": benchmark.get("scene_set"),
                "prompt_version": benchmark.get("prompt_version"),
                "dynamics_version": benchmark.get("dynamics_version"),
                "renderer_version": renderer.get("version"),
                "bundle_version": header.get("bundle_version"),
                "condition": condition,
            }
        ),
    }


def _model_info(model: ModelIdentity) -> dict[str, Any]:
    info: dict[str, Any] = {
        "name": model.name,
        "id": model.id,
        "additional_details": {
            "deployment_type": model.deployment,
            "model_availability": model.availability,
        },
    }
    if model.organisation:
        info["developer"] = model.organisation
    if model.platform:
        info["inference_platform"] = model.platform
    return info


def _source_data(
    benchmark: Mapping[str, Any], condition: str, scenes_url: str | None
) -> dict[str, Any]:
    name = f"MirrorBench {benchmark.get('version', '')} scene set {benchmark.get('scene_set', '')}"
    details = _strings(
        {
            "scene_set": benchmark.get("scene_set"),
            "condition": condition,
            "episodes": "66 scenes (48 Human, 18 Robot) x 4 prompt levels",
        }
    )
    if scenes_url:
        return {
            "dataset_name": " ".join(name.split()),
            "source_type": "url",
            "url": [scenes_url],
            "additional_details": details,
        }
    return {
        "dataset_name": " ".join(name.split()),
        "source_type": "other",
        "additional_details": details,
    }


def _generation_config(
    header: Mapping[str, Any], config: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The settings every request was sent with (the header's ``generation``: protocol v3
    sends temperature 0 and nothing else unless asked) and the run's configuration."""
    sent = header.get("generation") or {}
    args: dict[str, Any] = {}
    if isinstance(sent.get("temperature"), int | float):
        args["temperature"] = float(sent["temperature"])
    if isinstance(sent.get("max_tokens"), int) and sent["max_tokens"] >= 1:
        args["max_tokens"] = sent["max_tokens"]
    configured = dict(config or header.get("config") or {})
    renderer = header.get("renderer") or {}
    details = _strings(
        {
            "sent": sent or None,
            "seed": sent.get("seed"),
            "agent": configured.get("agent") or (header.get("agent") or {}).get("name"),
            "image_size": configured.get("image_size") or renderer.get("image_size"),
            "image_history": configured.get("image_history"),
            "levels": configured.get("levels"),
            "scenes": configured.get("scenes"),
            "repeats": configured.get("repeats"),
            "config": configured or None,
        }
    )
    generation: dict[str, Any] = {}
    if args:
        generation["generation_args"] = args
    if details:
        generation["additional_details"] = details
    return generation


def _result(
    *,
    table: str,
    track: str,
    metric: str,
    cell: Cell,
    version: str,
    condition: str,
    source_data: Mapping[str, Any],
    generation: Mapping[str, Any],
    evaluated: datetime | None,
) -> dict[str, Any]:
    low, high = _BOUNDS[metric]
    name = f"MirrorBench {version}, {table_label(table)}, {track_label(track)}"
    if condition != MAIN_CONDITION:
        name += f" ({condition_label(condition)} control)"
    pooling = (
        "the mean of the four level tables"
        if table == OVERALL
        else "TSR, FCR and PCR averaged over episodes, SIR pooled over steps"
    )
    score: dict[str, Any] = {"score": float(cell.values[metric])}
    uncertainty: dict[str, Any] = {}
    if cell.interval is not None and metric in cell.interval:
        lo, hi = cell.interval[metric]
        if math.isfinite(lo) and math.isfinite(hi):
            uncertainty["confidence_interval"] = {
                "lower": float(lo),
                "upper": float(hi),
                "confidence_level": CONFIDENCE,
                "method": BOOTSTRAP_METHOD,
            }
            uncertainty["num_bootstrap_samples"] = N_RESAMPLES
    if cell.episodes is not None:
        uncertainty["num_samples"] = cell.episodes
    if uncertainty:
        score["uncertainty"] = uncertainty
    if cell.spread:
        spread = cell.spread
        score["details"] = _strings(
            {
                "repeats": spread.get("repeats"),
                "repeat_low": _metric_of(spread.get("low"), metric),
                "repeat_high": _metric_of(spread.get("high"), metric),
                "repeat_sd": _metric_of(spread.get("sd"), metric),
                "repeat_paired_episodes": spread.get("paired"),
                "repeat_flipped_episodes": spread.get("flipped"),
                "repeat_flip_rate": spread.get("flip_rate"),
            }
        )
    result: dict[str, Any] = {
        "evaluation_result_id": result_id(table, track, metric),
        "evaluation_name": name,
        "source_data": source_data,
        "metric_config": {
            "evaluation_description": (
                f"{METRIC_NAMES[metric]} of the {track_label(track)} "
                f"{'tracks pooled' if track == OVERALL else 'track'}, {table_label(table)} "
                f"({pooling})"
            ),
            "metric_id": f"mirrorbench.{metric}",
            "metric_name": f"{metric_label(metric)} ({METRIC_NAMES[metric]})",
            "metric_kind": _KINDS[metric],
            "metric_unit": _UNITS[metric],
            "lower_is_better": False,
            "score_type": "continuous",
            "min_score": low,
            "max_score": high,
            "metric_parameters": {"d_th": D_TH},
            "additional_details": {
                "table": _table_key(table),
                "track": track,
                "condition": condition,
            },
        },
        "score_details": score,
    }
    if generation:
        result["generation_config"] = generation
    if evaluated is not None:
        result["evaluation_timestamp"] = _iso(evaluated)
    return result


def _metric_of(values: Any, metric: str) -> Any:
    return values.get(metric) if isinstance(values, Mapping) else None


def _instances(
    details: Details, *, evaluation_id: str, model_id: str, version: str, condition: str
) -> list[dict[str, Any]]:
    steps_by_episode: dict[str, list[dict[str, Any]]] = {}
    for step in details.steps.to_pylist():
        steps_by_episode.setdefault(step["episode_key"], []).append(step)
    return [
        _instance(
            episode,
            steps_by_episode.get(episode["episode_key"], []),
            evaluation_id=evaluation_id,
            model_id=model_id,
            version=version,
            condition=condition,
        )
        for episode in details.episodes.to_pylist()
    ]


def _task(scene_id: str, level: int, condition: str) -> str:
    try:
        return task_text(get_scene(scene_id, condition), level)
    except (UnknownSceneError, ValueError):
        return f"MirrorBench scene {scene_id}, level {level}: reach the mark with your hand."


def _instance(
    episode: Mapping[str, Any],
    steps: Sequence[Mapping[str, Any]],
    *,
    evaluation_id: str,
    model_id: str,
    version: str,
    condition: str,
) -> dict[str, Any]:
    level = str(episode["level"])
    track = str(episode["track"]).lower()
    completed = episode["status"] == COMPLETED
    raw = _task(episode["scene_id"], episode["level"], condition)
    reference = [
        f"an executed move ends within {D_TH} grid step of the {episode['mark'] or 'mark'} "
        f"(start: {episode['d0_steps']} steps away, budget {episode['max_steps']} steps)"
    ]
    messages: list[dict[str, Any]] = []
    attribution: list[dict[str, Any]] = []
    for position, step in enumerate(steps):
        # The user turn is the view shown before the answer: an image the schema cannot hold.
        messages.append({"turn_idx": 2 * position, "role": "user", "content": None})
        turn = 2 * position + 1
        messages.append({"turn_idx": turn, "role": "assistant", "content": step["response"]})
        if step["option"] is not None:
            attribution.append(
                {
                    "turn_idx": turn,
                    "source": f"messages[{turn}].content",
                    "extracted_value": str(step["option"]),
                    "extraction_method": "regex",
                    "is_terminal": position == len(steps) - 1,
                }
            )
    input_tokens, output_tokens = episode["input_tokens"], episode["output_tokens"]
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": evaluation_id,
        "model_id": model_id,
        "evaluation_name": f"MirrorBench {version}, {table_label(level)}, {track_label(track)}",
        "evaluation_result_id": result_id(level, track, "tsr"),
        "sample_id": episode["episode_key"],
        "sample_hash": hashlib.sha256((raw + "".join(reference)).encode()).hexdigest(),
        "interaction_type": "agentic",
        "input": {
            "raw": raw,
            "reference": reference,
            "choices": [f"{action.value}. {text}" for action, text in OPTION_TEXT.items()],
        },
        "output": None,
        "messages": messages,
        "answer_attribution": attribution,
        "evaluation": {
            "score": float(episode["tsr"]) if completed and episode["tsr"] is not None else 0.0,
            "is_correct": bool(completed and episode["success"]),
            "num_turns": len(messages) or None,
        },
        "error": episode["error"],
        "metadata": _strings(
            {
                "scene_id": episode["scene_id"],
                "body": episode["body"],
                "hand": episode["hand"],
                "mark": episode["mark"],
                "track": episode["track"],
                "level": episode["level"],
                "repeat": episode["repeat"],
                "condition": episode["condition"],
                "status": episode["status"],
                "outcome": episode["outcome"],
                "counted": "yes" if completed else "no: ended in error, left out of the scores",
                "mirror_confused": episode["mirror_confused"],
                **{metric: episode[metric] for metric in METRICS},
                "error_category": episode["error_category"],
                "d0_steps": episode["d0_steps"],
                "max_steps": episode["max_steps"],
                "distances": episode["distances"],
                "cached_steps": episode["cached_steps"],
                "cost_usd": episode["cost_usd"],
                "episode_url": episode["episode_url"],
                "frame_keys": [s["frame_key"] for s in steps],
                "frame_urls": (
                    [s["frame_url"] for s in steps] if any(s["frame_url"] for s in steps) else None
                ),
            }
        ),
    }
    if input_tokens is not None or output_tokens is not None:
        record["token_usage"] = {
            "input_tokens": input_tokens or 0,
            "output_tokens": output_tokens or 0,
            "total_tokens": (input_tokens or 0) + (output_tokens or 0),
        }
    if episode["latency_s"] is not None:
        record["performance"] = {"latency_ms": episode["latency_s"] * 1000}
    return record
