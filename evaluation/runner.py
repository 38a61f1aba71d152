"""The episode runner: plays (scene, level) episodes concurrently and writes a results bundle.

``workers`` is the number of model requests in flight. Agents that look at images get their
frames from one render pool per run (``evaluation.render_pool``: ``render_threads`` persistent
renderers, by default one per core, shared by every episode), so more workers never mean more
renderers; baselines never trigger rendering. A frame is on the way between two requests of an
episode, so a run keeps that many more episodes open than it has workers (one per render
thread): while some episodes wait for their frames, the others keep every request slot busy.
Episodes start scene by scene, all levels of a scene together, so the later levels find the
first views in memory. Each finished episode is appended to the bundle at once.
With ``resume`` the episodes already completed in the bundle are kept and skipped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

from evaluation.agents import Agent, AgentFactory, Decision, Observation
from evaluation.bundle import (
    BundleWriter,
    episode_record,
    episode_repeat,
    now_iso,
    read_bundle,
)
from evaluation.config import RunConfig, bundle_header, episode_seed
from evaluation.memory import limit_malloc_arenas
from evaluation.messages import ImagePart, TransportError
from evaluation.metrics import episode_score
from evaluation.progress import RunProgress
from evaluation.prompts import HistoryEntry
from evaluation.render_pool import PoolStats, RenderPool
from evaluation.slots import Admission, RequestSlots
from evaluation.vocabulary import COMPLETED, ERROR, METRICS
from simulation.backends import renderer_version
from simulation.catalogue import Scene, select_scenes
from simulation.dynamics import Action, EpisodeState, Vec3
from simulation.renderer import DEFAULT_SIZE, Renderer, frame_key

RendererFactory = Callable[[], Renderer]


class FrameFunction(Protocol):
    """``frame(cell, steps_left=n) -> (image, frame key)``: a view for an open episode that may
    take at most ``n`` more steps (which orders its frames among the others')."""

    def __call__(self, cell: Vec3, *, steps_left: int = 0) -> tuple[ImagePart, str]: ...


class FrameSource:
    """Frames as PNG for the agents that look: from memory, from a frame store, or rendered.

    Rendering happens in a ``RenderPool`` (``evaluation.render_pool``): a few persistent
    renderers shared by every episode, each frame rendered once whoever asks, recent frames
    kept in memory. Pass the pool to share (a run's, a worker's); without one the source makes
    its own from ``make_renderer`` and closes it in ``close()``.
    """

    def __init__(
        self,
        size: int,
        make_renderer: RendererFactory | None = None,
        *,
        on_render: Callable[[str, bytes], object] | None = None,
        lookup: Callable[[str], bytes | None] | None = None,
        pool: RenderPool | None = None,
        threads: int | None = None,
    ) -> None:
        """``on_render(key, png)`` is called with each frame rendered for this source (e.g. to
        store it); ``lookup(key)`` may return a frame stored earlier (a frame store shared by
        workers), so a frame another worker rendered is read, not rendered again."""
        self.size = size
        self._on_render = on_render
        self._lookup = lookup
        self._owns_pool = pool is None
        self.pool = pool or RenderPool(threads, make_renderer=make_renderer)
        self._lock = threading.Lock()
        self.rendered = 0
        self.reused = 0

    def png(
        self, scene: Scene, cell: Vec3, *, episode: int = 0, steps_left: int = 0
    ) -> tuple[bytes, str]:
        """Return the PNG of the view of ``scene`` with the hand at ``cell``, and its key
        (``episode``, ``steps_left``: see ``RenderPool.render``)."""
        key = self.pool.key(scene, cell, self.size)
        png = self.pool.cached(key)
        if png is None and self._lookup is not None:
            png = self._lookup(key)
            if png is not None:
                self.pool.remember(key, png)
        mine = False
        if png is None:
            png, mine = self.pool.render(
                scene, cell, self.size, episode=episode, steps_left=steps_left
            )
            if mine and self._on_render is not None:
                try:
                    self._on_render(key, png)
                except BaseException:
                    # Not stored: kept in memory, it would be served to every later episode
                    # and never stored at all. Whoever asks next renders and stores it.
                    self.pool.forget(key)
                    raise
        with self._lock:
            if mine:
                self.rendered += 1
            else:
                self.reused += 1
        return png, key

    @contextmanager
    def episode(self, scene: Scene) -> Iterator[FrameFunction]:
        """Yield ``frame(cell, steps_left=n) -> (image, frame key)`` for one episode of
        ``scene``."""

        # Its renderer keeps the scene set up meanwhile.
        with self.pool.scene_open(scene) as number:

            def frame(cell: Vec3, *, steps_left: int = 0) -> tuple[ImagePart, str]:
                png, key = self.png(scene, cell, episode=number, steps_left=steps_left)
                return ImagePart(png, self.size, self.size, f"hand at {cell}"), key

            yield frame

    def version(self) -> str:
        """Return the version of the renderers behind this source."""
        return self.pool.version()

    def close(self) -> None:
        """Close the render pool if this source made it."""
        if self._owns_pool:
            self.pool.close()


def step_record(index: int, decision: Decision, transition: Any, key: str | None) -> dict[str, Any]:
    """Return a step's bundle record: the decision, what the move did, the view's frame key and,
    for a model's reply, what was measured about it (tokens, latency, what was sent)."""
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
        if reply.cached_input_tokens is not None:
            # Only where the provider reports it: other bundles stay as they were.
            record["cached_input_tokens"] = reply.cached_input_tokens
    return record


def _replay(
    state: EpisodeState,
    prior_steps: Sequence[dict[str, Any]],
    steps: list[dict[str, Any]],
    history: list[HistoryEntry],
) -> list[Vec3]:
    """Apply steps stored earlier (a resumed episode).

    Return the cell seen before each step whose answer was read (the views the model had been
    shown as previous images); answers that could not be read stay out of the history.
    """
    cells = []
    for record in prior_steps:
        cell = state.cell
        option = record["option"]
        transition = state.step(Action(option) if option is not None else None)
        stored = (record["executed"], record["distance_steps"], tuple(record["hand_cell"]))
        if stored != (transition.executed, transition.distance_steps, transition.cell):
            raise ValueError(
                f"stored step {record['index']} of {state.scene.id} disagrees with the dynamics"
            )
        if option is not None:
            cells.append(cell)
            history.append(HistoryEntry(option, transition.executed))
        steps.append(record)
    return cells


def _play(
    state: EpisodeState,
    level: int,
    agent: Agent,
    steps: list[dict[str, Any]],
    history: list[HistoryEntry],
    seen_cells: list[Vec3],
    frame: FrameFunction | None,
    image_size: int,
    on_step: Callable[[dict[str, Any]], None] | None,
    slots: RequestSlots | None,
) -> None:
    """Step the episode until it ends, appending a record per step to ``steps``; each model
    call holds one of ``slots``."""
    scene = state.scene
    looks = frame is not None and agent.needs_images
    shown: list[ImagePart] = []
    if looks and frame is not None and seen_cells:
        # A resumed episode shows the model the same earlier views as before the interruption.
        left = scene.max_steps - state.steps_taken
        shown = (
            [frame(cell, steps_left=left)[0] for cell in seen_cells[-agent.image_history :]]
            if agent.image_history
            else []
        )
    version = renderer_version()
    while not state.done:
        key = frame_key(version, scene.id, state.cell, image_size, condition=scene.condition)
        if looks and frame is not None:
            current, key = frame(state.cell, steps_left=scene.max_steps - state.steps_taken)
            shown.append(current)
        images = tuple(shown[-(agent.image_history + 1) :]) if shown else ()
        observation = Observation(
            scene, level, state.steps_taken, state.cell, tuple(history), images
        )
        left = scene.max_steps - state.steps_taken
        with slots.hold(left) if slots is not None else nullcontext():
            decision = agent.act(observation)
        action = Action(decision.option) if decision.option is not None else None
        transition = state.step(action)
        if action is None:
            # As in the reference: an answer that cannot be read stays out of the history,
            # and the view it was given is not kept as the previous image.
            if looks:
                shown.pop()
        else:
            history.append(HistoryEntry(decision.option, transition.executed))
        step = step_record(len(steps), decision, transition, key)
        steps.append(step)
        if on_step is not None:
            on_step(step)


def run_episode(
    scene: Scene,
    level: int,
    agent: Agent,
    *,
    seed: int = 0,
    frames: FrameSource | None = None,
    image_size: int = DEFAULT_SIZE,
    on_step: Callable[[dict[str, Any]], None] | None = None,
    prior_steps: Sequence[dict[str, Any]] = (),
    slots: RequestSlots | None = None,
    repeat: int | None = None,
) -> dict[str, Any]:
    """Play one episode and return its bundle record.

    ``repeat`` is which of its run's repeats the episode is, recorded in the bundle when given
    (a run of several repeats); the agent starts with ``seed`` as it is.

    ``prior_steps`` are the steps of an interrupted attempt, already stored: they are replayed
    (checked against the dynamics, not asked again) and the episode goes on from there.
    ``on_step`` is called with each new step's record as soon as it is taken; each model call
    holds one of ``slots`` (a run's request slots) if given. A transport
    error ends the episode with status ``error`` (excluded from every score), keeping the
    steps taken so far.
    """
    started = now_iso()
    agent.start(scene, level, seed)
    state = EpisodeState(scene)
    steps: list[dict[str, Any]] = []
    history: list[HistoryEntry] = []
    seen_cells = _replay(state, prior_steps, steps, history)
    agent.resume(len(prior_steps))
    if agent.needs_images and frames is None:
        raise ValueError("this agent looks at images: pass a FrameSource")
    status, error = COMPLETED, None
    looks = agent.needs_images and frames is not None
    with frames.episode(scene) if looks and frames is not None else nullcontext() as frame:
        try:
            _play(
                state,
                level,
                agent,
                steps,
                history,
                seen_cells,
                frame,
                image_size,
                on_step,
                slots,
            )
        except TransportError as exc:
            status, error = ERROR, f"transport error after {exc.attempts} attempts: {exc}"
    metrics = None
    if status == COMPLETED:
        score = episode_score(state.distances)
        metrics = {m: getattr(score, m) for m in METRICS}
    return episode_record(
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
        started=started,
        finished=now_iso(),
        repeat=repeat,
    )


@dataclass
class RunResult:
    """What a run did: the bundle path and the counts."""

    path: Path
    ran: int
    skipped: int
    errors: int
    seconds: float
    frames: PoolStats = field(default_factory=PoolStats)
    """Frames rendered, served from memory and shared, and scenes set up (none for baselines)."""


def run(
    make_agent: AgentFactory,
    config: RunConfig,
    out: Path,
    *,
    workers: int = 1,
    resume: bool = False,
    make_renderer: RendererFactory | None = None,
    render_threads: int | None = None,
    progress_stream: TextIO | None = None,
) -> RunResult:
    """Run every (scene, level) episode ``config`` selects, ``config.repeats`` times each, and
    write the bundle ``out``.

    ``make_agent`` makes the agents of ``config.agent`` (``evaluation.config.agent_factory``);
    the header describes ``config`` (``evaluation.config.bundle_header``). With ``resume`` the
    completed episodes of an existing bundle with the same header are kept and skipped; errored
    and unfinished ones run again. Repeat ``r`` of an episode starts its agent with the seed
    ``episode_seed(config.seed, r)`` and is recorded with its ``repeat`` when there are several.

    The scenes are played under ``config.condition`` (their marks, goals and views as it has
    them); the prompts, budgets and metrics are the same under every condition.

    Raises:
        KeyError: ``config.scenes`` names a scene that is not in the scene set.
    """
    limit_malloc_arenas()  # before the worker threads start
    scenes = select_scenes(config.scenes, config.condition)
    levels, seed, image_size = config.levels, config.seed, config.image_size
    wanted = set(config.pairs)
    header = bundle_header(config, scenes=[s.id for s in scenes])
    probe = make_agent()
    keep: list[dict[str, Any]] = []
    if resume and out.exists():
        previous = read_bundle(out)
        _check_resumable(previous.header, header, out)
        header["created"] = previous.header["created"]
        keep = [e for e in previous.episodes if e.get("status") == COMPLETED]
    done = {(e["scene_id"], e["level"], episode_repeat(e)) for e in keep}
    repeats = config.repeats
    # Scene by scene, all its levels and repeats together: they show the same cells (the
    # start, the first moves), which the frame cache then serves instead of the renderer.
    todo = [
        (s, level, repeat)
        for s in scenes
        for level in levels
        for repeat in range(repeats)
        if (s.id, level, repeat) not in done and (not wanted or (s.id, level) in wanted)
    ]
    progress = RunProgress(len(todo), progress_stream)
    frames = (
        FrameSource(image_size, make_renderer, threads=render_threads)
        if probe.needs_images
        else None
    )
    if frames is not None:
        frames.pool.expect(scene for scene, _, _ in todo)  # compiled ahead while the cores idle
    # ``workers`` requests in flight. One more episode open per render thread fills the slot
    # an episode leaves while it waits for its next frame; when slots still go unused while
    # the render threads have nothing queued, one more opens, up to twice the workers.
    extra = frames.pool.threads if frames is not None else 0
    admission = Admission(first=workers + extra, most=2 * workers + extra, total=len(todo))

    def slot_idle() -> None:
        if frames is not None and not frames.pool.busy:
            admission.grow()

    slots = RequestSlots(workers, on_idle=slot_idle if frames is not None else None)
    started = time.monotonic()

    def play(writer: BundleWriter, index: int, scene: Scene, level: int, repeat: int) -> None:
        admission.enter(index)
        try:
            record = run_episode(
                scene,
                level,
                make_agent(),
                seed=episode_seed(seed, repeat),
                frames=frames,
                image_size=image_size,
                on_step=lambda step: progress.step(bad=step["option"] is None),
                slots=slots,
                repeat=repeat if repeats > 1 else None,
            )
            # Stored before the next episode may open: the bundle lists episodes in the order
            # they finish, which with one worker is the run's order, and a crash elsewhere
            # loses no finished episode.
            writer.append(record)
            progress.episode(error=record["status"] == ERROR)
        finally:
            admission.finished()

    pool = ThreadPoolExecutor(max(1, min(admission.most, len(todo))))
    try:
        with BundleWriter(out, header, keep=keep) as writer:
            try:
                futures = [
                    pool.submit(play, writer, i, scene, level, repeat)
                    for i, (scene, level, repeat) in enumerate(todo)
                ]
                for future in as_completed(futures):
                    future.result()  # an episode's crash stops the run
            except BaseException:
                # A crash or Ctrl-C: open nothing new; the episodes already open finish and
                # are stored with every other finished one before the bundle closes.
                admission.close()
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            finally:
                pool.shutdown(wait=True)
    finally:
        if frames is not None:
            frames.close()
        progress.close()
    stats = frames.pool.stats if frames is not None else PoolStats()
    return RunResult(out, len(todo), len(keep), progress.errors, time.monotonic() - started, stats)


class ResumeError(ValueError):
    """The bundle to resume was written by a different run configuration."""


def _check_resumable(old: dict[str, Any], new: dict[str, Any], path: Path) -> None:
    for field_name in (
        "benchmark",
        "agent",
        "renderer",
        "selection",
        "condition",
        "seed",
        "model",
        "generation",
    ):
        if old.get(field_name) != new.get(field_name):
            raise ResumeError(
                f"{path}: cannot resume, its {field_name} {old.get(field_name)!r} differs from "
                f"this run's {new.get(field_name)!r}; use another --out or drop --resume"
            )
