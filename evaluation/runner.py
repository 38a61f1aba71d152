"""The episode runner: plays (scene, level) episodes concurrently and writes a results bundle.

Episodes run on ``workers`` threads. Agents that look at images get frames rendered on the
thread's own renderer (an OpenGL context belongs to one thread); baselines never trigger
rendering. Each finished episode is appended to the bundle at once. With ``resume`` the
episodes already completed in the bundle are kept and skipped.
"""

from __future__ import annotations

import io
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from evaluation.agents import Agent, Decision, Observation
from evaluation.bundle import (
    BUNDLE_VERSION,
    COMPLETED,
    ERROR,
    BundleWriter,
    benchmark_version,
    now_iso,
    read_bundle,
)
from evaluation.messages import ImagePart, TransportError
from evaluation.metrics import episode_score
from evaluation.prompts import HistoryEntry
from simulation.catalogue import Scene
from simulation.dynamics import Action, EpisodeState
from simulation.render import DEFAULT_SIZE, Renderer, frame_key, renderer_version

AgentFactory = Callable[[], Agent]
RendererFactory = Callable[[], Renderer]


def _default_renderer() -> Renderer:
    from simulation.mujoco_backend import MujocoRenderer

    return MujocoRenderer()


class FrameSource:
    """Renders frames as PNG, one renderer per thread, remembering the scene each has loaded."""

    def __init__(self, size: int, make_renderer: RendererFactory = _default_renderer) -> None:
        self.size = size
        self._make_renderer = make_renderer
        self._local = threading.local()
        self._renderers: list[Renderer] = []
        self._lock = threading.Lock()

    def frame(self, scene: Scene, cell: tuple[int, int, int]) -> tuple[ImagePart, str]:
        """Return the PNG of the view with the hand at ``cell``, and its frame key."""
        from PIL import Image

        renderer = getattr(self._local, "renderer", None)
        if renderer is None:
            renderer = self._make_renderer()
            self._local.renderer, self._local.scene_id = renderer, None
            with self._lock:
                self._renderers.append(renderer)
        if self._local.scene_id != scene.id:
            renderer.load(scene)
            self._local.scene_id = scene.id
        renderer.set_hand(cell)
        pixels = renderer.render(self.size)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="PNG")
        key = frame_key(renderer.version, scene.id, cell, self.size)
        return ImagePart(buffer.getvalue(), self.size, self.size, f"hand at {cell}"), key

    def close(self) -> None:
        with self._lock:
            for renderer in self._renderers:
                renderer.close()
            self._renderers.clear()


def _step_record(
    index: int, decision: Decision, transition: Any, key: str | None
) -> dict[str, Any]:
    reply = decision.reply
    record: dict[str, Any] = {
        "index": index,
        "response": decision.response,
        "option": decision.option,
        "parse_error": decision.parse_error,
        "executed": transition.executed,
        "distance_steps": transition.distance_steps,
        "hand_cell": list(transition.cell),
        "frame_key": key,
    }
    if reply is not None:
        record.update(
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            latency_s=round(reply.latency_s, 4),
            cached=bool(reply.request.get("cached", False)),
            model_id=reply.model_id,
            fingerprint=reply.fingerprint,
            request={k: v for k, v in reply.request.items() if k != "cached"},
        )
    return record


def run_episode(
    scene: Scene,
    level: int,
    agent: Agent,
    *,
    seed: int = 0,
    frames: FrameSource | None = None,
    image_size: int = DEFAULT_SIZE,
    on_step: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Play one episode and return its bundle record.

    A transport error ends the episode with status ``error`` (excluded from every score),
    keeping the steps taken so far.
    """
    started = now_iso()
    agent.start(scene, level, seed)
    state = EpisodeState(scene)
    history: list[HistoryEntry] = []
    steps: list[dict[str, Any]] = []
    shown: list[ImagePart] = []
    version = renderer_version()
    status, error = COMPLETED, None
    while not state.done:
        key: str | None = frame_key(version, scene.id, state.cell, image_size)
        images: tuple[ImagePart, ...] = ()
        if agent.needs_images:
            if frames is None:
                raise ValueError("this agent looks at images: pass a FrameSource")
            current, key = frames.frame(scene, state.cell)
            shown.append(current)
            keep = agent.image_history + 1
            images = tuple(shown[-keep:])
        observation = Observation(
            scene, level, state.steps_taken, state.cell, tuple(history), images
        )
        try:
            decision = agent.act(observation)
        except TransportError as exc:
            status, error = ERROR, f"transport error after {exc.attempts} attempts: {exc}"
            break
        action = Action(decision.option) if decision.option is not None else None
        transition = state.step(action)
        history.append(HistoryEntry(decision.option, transition.executed))
        step = _step_record(len(steps), decision, transition, key)
        steps.append(step)
        if on_step is not None:
            on_step(step)
    metrics = None
    if status == COMPLETED:
        score = episode_score(state.distances)
        metrics = {m: getattr(score, m) for m in ("tsr", "sir", "fcr", "pcr", "avg")}
    return {
        "type": "episode",
        "scene_id": scene.id,
        "track": scene.track,
        "level": level,
        "status": status,
        "error": error,
        "d0_steps": scene.d0_steps,
        "max_steps": scene.max_steps,
        "success": state.success,
        "distances": state.distances,
        "steps": steps,
        "metrics": metrics,
        "started": started,
        "finished": now_iso(),
    }


@dataclass
class Progress:
    """Counts shown by the progress line."""

    total: int
    done: int = 0
    errors: int = 0
    steps: int = 0
    bad: int = 0
    started: float = field(default_factory=time.monotonic)
    stream: TextIO | None = None
    interval_s: float = 0.2
    """Least time between two redraws on a terminal; elsewhere a line every 10 seconds."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _shown: float = 0.0

    def step(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.steps += 1
            self.bad += record["option"] is None

    def episode(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.done += 1
            self.errors += record["status"] == ERROR
            self.show()

    def show(self) -> None:
        if self.stream is None:
            return
        tty = self.stream.isatty()
        now = time.monotonic()
        last = self.done == self.total
        if not last and now - self._shown < (self.interval_s if tty else 10.0):
            return
        self._shown = now
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        width = 24
        filled = int(width * self.done / self.total) if self.total else width
        self.stream.write(
            f"{chr(13) if tty else ''}[{'#' * filled}{'.' * (width - filled)}] "
            f"{self.done}/{self.total} episodes | {self.steps} steps | {self.bad} bad responses | "
            f"{self.errors} errors | ETA {int(eta // 60)}m{int(eta % 60):02d}s "
        )
        if last or not tty:
            self.stream.write("\n")
        self.stream.flush()


@dataclass
class RunResult:
    """What a run did: the bundle path and the counts."""

    path: Path
    ran: int
    skipped: int
    errors: int
    seconds: float


def run(
    make_agent: AgentFactory,
    scenes: Sequence[Scene],
    levels: Sequence[int],
    out: Path,
    *,
    header_extra: dict[str, Any],
    seed: int = 0,
    workers: int = 1,
    resume: bool = False,
    image_size: int = DEFAULT_SIZE,
    make_renderer: RendererFactory = _default_renderer,
    progress_stream: TextIO | None = sys.stderr,
) -> RunResult:
    """Run every (scene, level) episode and write the bundle ``out``.

    ``header_extra`` carries the agent, model and generation metadata. With ``resume`` the
    completed episodes of an existing bundle with the same header are kept and skipped; errored
    and unfinished ones run again.
    """
    probe = make_agent()
    header = {
        "type": "header",
        "bundle_version": BUNDLE_VERSION,
        "benchmark": benchmark_version(),
        "agent": probe.describe(),
        "renderer": {
            "version": renderer_version(),
            "image_size": image_size,
            "image_history": probe.image_history,
        },
        "selection": {"levels": list(levels), "scenes": [s.id for s in scenes]},
        "seed": seed,
        "created": now_iso(),
        "tool": {"name": "mirrorbench"},
        **header_extra,
    }
    keep: list[dict[str, Any]] = []
    if resume and out.exists():
        previous = read_bundle(out)
        _check_resumable(previous.header, header, out)
        header["created"] = previous.header["created"]
        keep = [e for e in previous.episodes if e.get("status") == COMPLETED]
    done = {(e["scene_id"], e["level"]) for e in keep}
    todo = [(s, level) for level in levels for s in scenes if (s.id, level) not in done]
    progress = Progress(total=len(todo), stream=progress_stream)
    frames = FrameSource(image_size, make_renderer) if probe.needs_images else None
    started = time.monotonic()

    def play(scene: Scene, level: int) -> dict[str, Any]:
        return run_episode(
            scene,
            level,
            make_agent(),
            seed=seed,
            frames=frames,
            image_size=image_size,
            on_step=progress.step,
        )

    pool = ThreadPoolExecutor(workers)
    try:
        with BundleWriter(out, header, keep=keep) as writer:
            futures = [pool.submit(play, scene, level) for scene, level in todo]
            for future in as_completed(futures):
                record = future.result()
                writer.append(record)
                progress.episode(record)
    except BaseException:
        # A crash or Ctrl-C: start nothing new; the bundle holds every finished episode.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
        if frames is not None:
            frames.close()
    return RunResult(out, len(todo), len(keep), progress.errors, time.monotonic() - started)


class ResumeError(ValueError):
    """The bundle to resume was written by a different run configuration."""


def _check_resumable(old: dict[str, Any], new: dict[str, Any], path: Path) -> None:
    for field_name in (
        "benchmark",
        "agent",
        "renderer",
        "selection",
        "seed",
        "model",
        "generation",
    ):
        if old.get(field_name) != new.get(field_name):
            raise ResumeError(
                f"{path}: cannot resume, its {field_name} {old.get(field_name)!r} differs from "
                f"this run's {new.get(field_name)!r}; use another --out or drop --resume"
            )
