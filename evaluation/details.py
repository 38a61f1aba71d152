"""A run's per-episode details as parquet: an episodes table, a steps table and a dataset card.

``mirrorbench export-parquet BUNDLE --out DIR`` writes them from a results bundle, and the site
serves the same files for a run (``/runs/<id>/details.zip``), with the address of each episode
and of each frame. The tables hold no image: a step names its frame by key (and, from the site,
by URL), so their size does not depend on the run's image size.

Every column has one type (a count is an integer, a score a float, a time a timestamp), the
same whichever agent played; what a run does not have (tokens for a baseline, a site's URLs in
a command-line export) is null. ``episode_results`` reads the episodes table back into the
metrics module's records, so the tables re-score to the run's tables exactly. The columns are
listed in ``docs/exports.md``.
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from evaluation.confusion import episode_behaviour
from evaluation.deferred import Deferred
from evaluation.metrics import EpisodeResult
from evaluation.public import error_summary
from evaluation.vocabulary import (
    COMPLETED,
    EPISODE_METRICS,
    MAIN_CONDITION,
    METRICS,
    episode_outcome,
)
from simulation.catalogue import Scene, UnknownSceneError, get_scene

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
else:
    # Loaded when a table is built or written: the board's views import this module, and
    # every web process, worker and manage.py command paid about 30 ms for pyarrow.
    pa = Deferred("pyarrow")
    pq = Deferred("pyarrow.parquet")

EPISODES_FILE = "episodes.parquet"
STEPS_FILE = "steps.parquet"
CARD_FILE = "README.md"
LICENSE = "mit"
"""The licence the card declares: the project's own (the results are MirrorBench's output)."""


@functools.cache
def episode_schema() -> pa.Schema:
    """One row per episode. ``episode_key`` joins it with the steps table."""
    return pa.schema(
        [
            pa.field("episode_key", pa.string(), nullable=False),
            pa.field("run_id", pa.int64()),
            pa.field("model", pa.string()),
            pa.field("agent", pa.string(), nullable=False),
            pa.field("benchmark_version", pa.string()),
            pa.field("scene_set", pa.string()),
            pa.field("prompt_version", pa.string()),
            pa.field("dynamics_version", pa.string()),
            pa.field("condition", pa.string(), nullable=False),
            pa.field("renderer_version", pa.string()),
            pa.field("image_size", pa.int32()),
            pa.field("scene_id", pa.string(), nullable=False),
            pa.field("body", pa.string()),
            pa.field("hand", pa.string()),
            pa.field("mark", pa.string()),
            pa.field("track", pa.string(), nullable=False),
            pa.field("level", pa.int8(), nullable=False),
            pa.field("repeat", pa.int32(), nullable=False),
            pa.field("status", pa.string(), nullable=False),
            pa.field("outcome", pa.string()),
            pa.field("success", pa.bool_(), nullable=False),
            pa.field("mirror_confused", pa.bool_()),
            *(pa.field(metric, pa.float64()) for metric in METRICS),
            pa.field("steps", pa.int32(), nullable=False),
            pa.field("d0_steps", pa.int32(), nullable=False),
            pa.field("max_steps", pa.int32(), nullable=False),
            pa.field("distances", pa.list_(pa.int32()), nullable=False),
            pa.field("error", pa.string()),
            pa.field("error_category", pa.string()),
            pa.field("input_tokens", pa.int64()),
            pa.field("output_tokens", pa.int64()),
            pa.field("cached_steps", pa.int32(), nullable=False),
            pa.field("latency_s", pa.float64()),
            pa.field("cost_usd", pa.float64()),
            pa.field("started", pa.timestamp("ms", tz="UTC")),
            pa.field("finished", pa.timestamp("ms", tz="UTC")),
            pa.field("episode_url", pa.string()),
        ]
    )


@functools.cache
def step_schema() -> pa.Schema:
    """One row per step, in episode then step order."""
    return pa.schema(
        [
            pa.field("episode_key", pa.string(), nullable=False),
            pa.field("scene_id", pa.string(), nullable=False),
            pa.field("level", pa.int8(), nullable=False),
            pa.field("repeat", pa.int32(), nullable=False),
            pa.field("index", pa.int32(), nullable=False),
            pa.field("option", pa.int8()),
            pa.field("executed", pa.bool_(), nullable=False),
            pa.field("distance", pa.int32(), nullable=False),
            pa.field("hand_x", pa.int32(), nullable=False),
            pa.field("hand_y", pa.int32(), nullable=False),
            pa.field("hand_z", pa.int32(), nullable=False),
            pa.field("parse_error", pa.string()),
            pa.field("response", pa.string(), nullable=False),
            pa.field("frame_key", pa.string()),
            pa.field("frame_url", pa.string()),
            pa.field("input_tokens", pa.int64()),
            pa.field("output_tokens", pa.int64()),
            pa.field("latency_s", pa.float64()),
            pa.field("cached", pa.bool_(), nullable=False),
            pa.field("model_id", pa.string()),
        ]
    )


@dataclass(frozen=True)
class EpisodeExtras:
    """What a site knows of an episode beyond its bundle record (all optional).

    Attributes:
        url: The episode's replay page.
        cost_usd: What the episode's answered requests cost, where a price is configured.
        frame_urls: The address of the frame each step showed, by step index.
    """

    url: str | None = None
    cost_usd: float | None = None
    frame_urls: Sequence[str | None] = ()


@dataclass(frozen=True)
class Details:
    """A run's details: both tables and the card that describes them."""

    episodes: pa.Table
    steps: pa.Table
    card: str


@dataclass(frozen=True)
class Written:
    """The files ``write_details`` wrote, with their sizes in bytes."""

    paths: dict[str, Path] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)


def episode_key(scene_id: str, level: int, repeat: int = 0) -> str:
    """Return the key that joins an episode's row with its steps: ``<scene>/L<level>/<repeat>``."""
    return f"{scene_id}/L{level}/{repeat}"


def details(
    header: Mapping[str, Any],
    episodes: Sequence[Mapping[str, Any]],
    *,
    run_id: int | None = None,
    model: str | None = None,
    run_url: str | None = None,
    extras: Sequence[EpisodeExtras] | None = None,
) -> Details:
    """Return the details of a run from its bundle header and episode records.

    Args:
        header: The bundle header (benchmark version, agent, model, renderer).
        episodes: Its finished episode records, in any order; rows come out by level, scene
            and repeat.
        run_id: The run's id on a site; by default the header's ``tool.run`` (bundles the
            site exports carry it), else null.
        model: The model's name; by default the header's model, else the agent's name.
        run_url: The run's page, named in the card.
        extras: What a site adds to each episode (its URL, cost, frame URLs), in the order of
            ``episodes``.
    """
    if extras is not None and len(extras) != len(episodes):
        raise ValueError(f"{len(extras)} extras for {len(episodes)} episodes")
    tool = header.get("tool") or {}
    if run_id is None and isinstance(tool.get("run"), int):
        run_id = tool["run"]
    agent = header.get("agent") or {}
    agent_name = str(agent.get("name", "unknown"))
    header_model = (header.get("model") or {}).get("model")
    model = model or header_model or agent_name
    benchmark = header.get("benchmark") or {}
    renderer = header.get("renderer") or {}
    condition = str(header.get("condition") or MAIN_CONDITION)
    run_columns = {
        "run_id": run_id,
        "model": model,
        "agent": agent_name,
        "benchmark_version": benchmark.get("version"),
        "scene_set": benchmark.get("scene_set"),
        "prompt_version": benchmark.get("prompt_version"),
        "dynamics_version": benchmark.get("dynamics_version"),
        "condition": condition,
        "renderer_version": renderer.get("version"),
        "image_size": renderer.get("image_size"),
    }
    paired = list(zip(episodes, extras or [EpisodeExtras()] * len(episodes), strict=True))
    paired.sort(key=lambda p: (p[0]["level"], p[0]["scene_id"], _repeat(p[0])))
    episode_rows: list[dict[str, Any]] = []
    step_rows: list[dict[str, Any]] = []
    for record, extra in paired:
        row = _episode_row(record, extra, condition)
        episode_rows.append({**run_columns, **row})
        step_rows += _step_rows(record, row["episode_key"], extra)
    episodes_table = pa.Table.from_pylist(episode_rows, schema=episode_schema())
    steps_table = pa.Table.from_pylist(step_rows, schema=step_schema())
    card = details_card(
        model=model,
        agent=agent_name,
        run_id=run_id,
        run_url=run_url,
        benchmark=benchmark,
        episodes=episodes_table.num_rows,
        steps=steps_table.num_rows,
    )
    return Details(episodes_table, steps_table, card)


def parquet_bytes(table: pa.Table) -> bytes:
    """Return ``table`` as a parquet file (zstd-compressed, statistics kept)."""
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    return buffer.getvalue()


def write_details(details: Details, out: Path) -> Written:
    """Write ``episodes.parquet``, ``steps.parquet`` and ``README.md`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    files = {
        EPISODES_FILE: parquet_bytes(details.episodes),
        STEPS_FILE: parquet_bytes(details.steps),
        CARD_FILE: details.card.encode(),
    }
    written = Written()
    for name, data in files.items():
        path = out / name
        path.write_bytes(data)
        written.paths[name] = path
        written.sizes[name] = len(data)
    return written


def episode_results(episodes: pa.Table) -> list[EpisodeResult]:
    """Return the metrics module's records of an episodes table (as ``details`` writes it)."""
    columns = episodes.select(["scene_id", "track", "level", "distances", "status"]).to_pylist()
    return [
        EpisodeResult(
            scene_id=row["scene_id"],
            track=row["track"],
            level=row["level"],
            distances=tuple(row["distances"]),
            status=row["status"],
        )
        for row in columns
    ]


def _repeat(record: Mapping[str, Any]) -> int:
    repeat = record.get("repeat", 0)
    return repeat if isinstance(repeat, int) and not isinstance(repeat, bool) else 0


def _scene(scene_id: str, condition: str) -> Scene | None:
    try:
        return get_scene(scene_id, condition)
    except (UnknownSceneError, ValueError):
        return None


def _scene_parts(scene: Scene | None, scene_id: str) -> tuple[str | None, str | None, str | None]:
    """The body, hand and mark of a scene: the catalogue's, else read from its id."""
    if scene is None:
        parts = scene_id.split("-")
        return (parts[0], parts[1], parts[2]) if len(parts) == 3 else (None, None, None)
    return scene.body.id, scene.hand.id, scene.mark.id


def _sum(values: Sequence[Any]) -> Any:
    """The sum of the values that are numbers; None when none is."""
    known = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if not known:
        return None
    if all(isinstance(v, int) for v in known):
        return sum(known)
    return math.fsum(known)


def aware_time(text: Any) -> datetime | None:
    """Return a bundle's ISO 8601 time with its offset as a datetime; None for anything else
    (missing, not text, unreadable, or without an offset)."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _episode_row(record: Mapping[str, Any], extra: EpisodeExtras, condition: str) -> dict[str, Any]:
    scene_id = record["scene_id"]
    scene = _scene(scene_id, condition)
    level = record["level"]
    repeat = _repeat(record)
    steps: Sequence[Mapping[str, Any]] = record.get("steps") or []
    body, hand, mark = _scene_parts(scene, scene_id)
    completed = record["status"] == COMPLETED
    metrics = record.get("metrics") or {}
    summary = error_summary(record.get("error"))
    confused = episode_behaviour(record, scene).mirror_confused if completed and scene else None
    return {
        "episode_key": episode_key(scene_id, level, repeat),
        "scene_id": scene_id,
        "body": body,
        "hand": hand,
        "mark": mark,
        "track": record["track"],
        "level": level,
        "repeat": repeat,
        "status": record["status"],
        "outcome": episode_outcome(record["status"], bool(record.get("success"))),
        "success": bool(record.get("success")),
        "mirror_confused": confused,
        **{m: (float(metrics[m]) if completed and m in metrics else None) for m in METRICS},
        "steps": len(steps),
        "d0_steps": record["d0_steps"],
        "max_steps": record["max_steps"],
        "distances": list(record["distances"]),
        "error": record.get("error"),
        "error_category": summary.category if summary else None,
        "input_tokens": _sum([s.get("input_tokens") for s in steps]),
        "output_tokens": _sum([s.get("output_tokens") for s in steps]),
        "cached_steps": sum(1 for s in steps if s.get("cached")),
        "latency_s": _sum([s.get("latency_s") for s in steps]),
        "cost_usd": extra.cost_usd,
        "started": aware_time(record.get("started")),
        "finished": aware_time(record.get("finished")),
        "episode_url": extra.url,
    }


def _step_rows(record: Mapping[str, Any], key: str, extra: EpisodeExtras) -> list[dict[str, Any]]:
    rows = []
    for position, step in enumerate(record.get("steps") or []):
        cell = list(step.get("hand_cell") or (0, 0, 0))
        rows.append(
            {
                "episode_key": key,
                "scene_id": record["scene_id"],
                "level": record["level"],
                "repeat": _repeat(record),
                "index": step["index"],
                "option": step.get("option"),
                "executed": bool(step.get("executed")),
                "distance": step["distance_steps"],
                "hand_x": cell[0],
                "hand_y": cell[1],
                "hand_z": cell[2],
                "parse_error": step.get("parse_error"),
                "response": step.get("response") or "",
                "frame_key": step.get("frame_key"),
                "frame_url": (
                    extra.frame_urls[position] if position < len(extra.frame_urls) else None
                ),
                "input_tokens": step.get("input_tokens"),
                "output_tokens": step.get("output_tokens"),
                "latency_s": step.get("latency_s"),
                "cached": bool(step.get("cached")),
                "model_id": step.get("model_id"),
            }
        )
    return rows


def _size_category(rows: int) -> str:
    """The Hub's size category of a table of ``rows`` rows."""
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if rows < limit:
            return name
    return "100K<n<1M"


def details_card(
    *,
    model: str,
    agent: str,
    run_id: int | None,
    run_url: str | None,
    benchmark: Mapping[str, Any],
    episodes: int,
    steps: int,
) -> str:
    """Return the dataset card (``README.md``) of a run's details, as the Hugging Face Hub
    reads it: YAML front matter with the two configurations, then how to load them."""
    title = f"MirrorBench details: {model}" + (f" (run {run_id})" if run_id is not None else "")
    front = {
        "pretty_name": title,
        "license": LICENSE,
        "task_categories": ["robotics", "image-text-to-text"],
        "tags": ["mirrorbench", "embodied", "mirror-self-recognition", "evaluation"],
        "size_categories": [_size_category(steps)],
        "configs": [
            {
                "config_name": "episodes",
                "data_files": [{"split": "train", "path": EPISODES_FILE}],
                "default": True,
            },
            {"config_name": "steps", "data_files": [{"split": "train", "path": STEPS_FILE}]},
        ],
    }
    version = benchmark.get("version", "unknown")
    source = f"[run {run_id}]({run_url})" if run_url and run_id is not None else "a results bundle"
    metric_list = ", ".join(m.upper() for m in EPISODE_METRICS)
    return (
        "---\n"
        + yaml.safe_dump(front, sort_keys=False, allow_unicode=True)
        + "---\n\n"
        + f"# {title}\n\n"
        + f"Every episode and step that `{agent}` played in MirrorBench {version}, from {source}: "
        f"{episodes} episodes and {steps} steps. MirrorBench asks a multimodal model, acting "
        "as an embodied agent, to touch a mark on its own body that only a mirror shows.\n\n"
        "- `episodes.parquet`: one row per episode: the scene (body, hand, mark, track), the "
        f"prompt level, the status and outcome, the paper's metrics ({metric_list} and their "
        "mean AVG; null for an episode that ended in error), the distance trajectory, tokens, "
        "latency and, from a site, cost and the replay's URL.\n"
        "- `steps.parquet`: one row per step: the answer, the option read from it (1 up, "
        "2 down, 3 left, 4 right, 5 forward, 6 backward), whether the move was executed, the "
        "distance to the mark after it, the hand's cell, and the key (from a site, the URL) "
        "of the image the model saw before answering. `episode_key` joins the tables.\n\n"
        "The tables hold no images. Only completed episodes count in the scores; the level "
        "tables pool SIR over steps (improving steps / steps), as the paper does.\n\n"
        "## Load\n\n"
        "```python\n"
        "import pandas as pd\n\n"
        "# numpy_nullable keeps integer columns with nulls (tokens) as integers.\n"
        f'episodes = pd.read_parquet("{EPISODES_FILE}", dtype_backend="numpy_nullable")\n'
        f'steps = pd.read_parquet("{STEPS_FILE}", dtype_backend="numpy_nullable")\n'
        'completed = episodes[episodes["status"] == "completed"]\n'
        'print(completed.groupby(["level", "track"])["tsr"].mean())\n'
        'steps = steps.merge(episodes[["episode_key", "outcome"]], on="episode_key")\n'
        "```\n\n"
        "```python\n"
        "from datasets import load_dataset\n\n"
        f'episodes = load_dataset("parquet", data_files="{EPISODES_FILE}", split="train")\n'
        f'steps = load_dataset("parquet", data_files="{STEPS_FILE}", split="train")\n'
        "```\n\n"
        'The configurations above name the tables: `load_dataset(FOLDER, "steps")` loads '
        "one from the folder holding these files, or from the Hub repository once uploaded.\n"
    )
