"""A bounded pool of persistent renderers that every episode of a process shares.

Model calls and rendering need different amounts of parallelism: a run keeps as many requests
in flight as the provider allows (``--workers``, threads that mostly wait on the network), but
rendering is CPU work that only slows down with more contexts than cores. So episodes ask this
pool for frames, and a few render threads (``threads``, by default the number of cores) make
them, each with one renderer it keeps for its whole life and reuses across episodes and scenes.

- A frame is rendered once, whoever asks: requests for a frame being rendered wait for that
  render, and the last ``keep_bytes`` of PNGs stay in memory (the levels of a scene start with
  the same views).
- Requests from outside an episode (a viewer waiting for a frame) go first. An episode's are
  ordered by what ends a run soonest. While episodes are still to begin (``expect``), or the
  pool does not know, the episode that opened first (``scene_open``) goes first: it ends
  sooner, and the next episode begins in its place. Once every expected episode has begun,
  the run ends when its longest chain of steps (a frame, the model's answer, the next frame)
  does: the episodes with the most steps left (``steps_left``) go first, so all move on at
  once and none is left to finish alone, step after step, while the cores idle. Then in the
  order the requests came.
- Each scene belongs to the render thread that set it up, which keeps its last
  ``keep_scenes`` scenes set up; another thread takes a scene's requests only once they have
  waited ``max_wait_s``.
- Frames are encoded to PNG in the render thread (``evaluation.png``).
- A run says which scenes come next (``expect``): a render thread with nothing to do prepares
  the next ``prepare_ahead`` of them (a backend's ``prepare``: compiling a scene, 0.1-2 s for a
  robot), so the episodes that open them do not wait for it.

An OpenGL context belongs to the thread that made it: each renderer is made, used and closed in
its own render thread. Threads start on the first request (so a process that forks after
making a pool, such as a web server, still works), one more only when every running one is busy,
and stop with ``close()``.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field

from evaluation.memory import release_free_memory
from evaluation.png import encode_png
from simulation.backends import configured_backend, make_renderer_from_env
from simulation.catalogue import Scene, Vec3
from simulation.renderer import Renderer, frame_key

RendererFactory = Callable[[], Renderer]
logger = logging.getLogger(__name__)

DEFAULT_KEEP_SCENES = 10
"""Scenes a render thread keeps set up in its OpenGL context (about 16 MB each for a robot; the
frame buffers are the renderer's, not the scene's). Every open episode moves on at once, so a
thread serves the scenes of all the open episodes it owns in turn (nine each on two threads for
the 18 robot scenes); one set up again each turn would cost 30 ms of CPU a frame."""
DEFAULT_KEEP_MODELS = 12
"""The most scenes a render thread keeps compiled (a robot's is about 14 MB): those of open
episodes beyond ``keep_scenes`` are set up again when asked for (5-25 ms), not compiled."""
DEFAULT_IDLE_SCENES = 2
"""Scenes without an open episode a render thread keeps (the next level of a scene comes
soon after the last one ends)."""
DEFAULT_KEEP_BYTES = 128 * 2**20
"""PNG bytes kept in memory (about 390 frames at 1024 px)."""
DEFAULT_MAX_WAIT_S = 1.0
DEFAULT_PREPARE_AHEAD = 2
"""Expected scenes, not yet open, that idle render threads prepare at most."""


def default_threads() -> int:
    """The number of cores this process may use: the default number of render threads."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _pool_renderer(keep_scenes: int, keep_models: int) -> Renderer:
    # The backend MIRRORBENCH_RENDERER names (MuJoCo by default); never a silent fallback.

    if configured_backend() == "mujoco":
        from simulation.mujoco_backend import MujocoRenderer

        return MujocoRenderer(keep_scenes=keep_scenes, keep_models=keep_models)
    return make_renderer_from_env()


@dataclass
class _Job:
    key: str
    scene: Scene
    cell: Vec3
    size: int
    mirror: bool
    episode: int = 0
    steps_left: int = 0
    queued: float = field(default_factory=time.monotonic)
    future: Future[bytes] = field(default_factory=Future)

    @property
    def scene_key(self) -> tuple[str, bool]:
        return (self.scene.variant_id, self.mirror)


def _rank(job: _Job, all_begun: bool) -> tuple[int, int, int, float]:
    """Where a job goes in the queue, the lowest first (see the module's docstring)."""
    if not job.episode:
        return (0, 0, 0, job.queued)
    if all_begun:
        return (1, -job.steps_left, job.episode, job.queued)
    return (1, job.episode, 0, job.queued)


@dataclass
class PoolStats:
    """What a pool did: frames rendered, served from memory, shared with a render in flight,
    scenes set up by the render threads, and expected scenes prepared ahead of time."""

    rendered: int = 0
    reused: int = 0
    shared: int = 0
    loads: int = 0
    render_s: float = 0.0
    prepared: int = 0


class RenderPool:
    """Renders frames to PNG on ``threads`` persistent renderers; thread-safe."""

    def __init__(
        self,
        threads: int | None = None,
        *,
        make_renderer: RendererFactory | None = None,
        keep_scenes: int = DEFAULT_KEEP_SCENES,
        keep_models: int = DEFAULT_KEEP_MODELS,
        idle_scenes: int = DEFAULT_IDLE_SCENES,
        keep_bytes: int = DEFAULT_KEEP_BYTES,
        max_wait_s: float = DEFAULT_MAX_WAIT_S,
        prepare_ahead: int = DEFAULT_PREPARE_AHEAD,
    ) -> None:
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads!r}")
        self.threads = threads or default_threads()
        self.keep_scenes = keep_scenes
        self.keep_models = max(keep_models, keep_scenes)
        self.idle_scenes = idle_scenes
        self.keep_bytes = keep_bytes
        self.max_wait_s = max_wait_s
        self.prepare_ahead = prepare_ahead
        self._make_renderer = make_renderer or (
            lambda: _pool_renderer(self.keep_scenes, self.keep_models)
        )
        self._cond = threading.Condition()
        self._queue: list[_Job] = []
        self._in_flight: dict[str, _Job] = {}
        self._pngs: OrderedDict[str, bytes] = OrderedDict()
        self._png_bytes = 0
        self._held: list[OrderedDict[tuple[str, bool], None]] = []
        self._owner: dict[tuple[str, bool], int] = {}
        self._refs: dict[tuple[str, bool], int] = {}
        self._episodes = itertools.count(1)
        self._expected: OrderedDict[tuple[str, bool], Scene] = OrderedDict()
        self._ready: set[tuple[str, bool]] = set()  # prepared, not yet open
        self._told = False  # whether expect() was called
        self._waiting: dict[tuple[str, bool], int] = {}  # expected episodes yet to begin
        self._workers: list[threading.Thread] = []
        self._idle = 0
        self._closed = False
        self._version: str | None = None
        self.stats = PoolStats()
        _open_pools.add(self)

    # -- asking for frames -------------------------------------------------------------------

    def version(self) -> str:
        """Return the version of this pool's renderers (part of every frame key)."""
        if self._version is None:
            probe = self._make_renderer()  # cheap: a renderer makes its context on first use
            try:
                self._version = probe.version
            finally:
                probe.close()
        return self._version

    @property
    def busy(self) -> bool:
        """Whether every render thread has work now: none is idle or still to start."""
        with self._cond:
            return len(self._workers) >= self.threads and not self._idle

    def key(self, scene: Scene, cell: Vec3, size: int, *, mirror: bool = True) -> str:
        """Return the frame key of a view this pool renders (of ``scene`` under its condition)."""
        return frame_key(
            self.version(), scene.id, cell, size, mirror=mirror, condition=scene.condition
        )

    @contextmanager
    def scene_open(self, scene: Scene, *, mirror: bool = True) -> Iterator[int]:
        """Mark ``scene`` in use while the block runs (an episode): the render thread that set
        it up keeps it until no episode uses it. Yields the episode's number (1 for the first
        episode opened in this pool, then 2, ...): pass it to ``render``."""
        scene_key = (scene.variant_id, mirror)
        with self._cond:
            self._expected.pop(scene_key, None)
            if scene_key in self._waiting:
                self._waiting[scene_key] -= 1
                if not self._waiting[scene_key]:
                    del self._waiting[scene_key]
            if scene_key in self._ready:
                self._ready.discard(scene_key)
                self._cond.notify_all()  # room to prepare the next expected scene
            self._refs[scene_key] = self._refs.get(scene_key, 0) + 1
            number = next(self._episodes)
        try:
            yield number
        finally:
            with self._cond:
                left = self._refs[scene_key] - 1
                if left:
                    self._refs[scene_key] = left
                else:
                    del self._refs[scene_key]

    def expect(self, scenes: Iterable[Scene], *, mirror: bool = True) -> None:
        """Say that an episode of each of ``scenes`` will open, in this order (after any
        expected before; a scene once per episode): idle render threads prepare the next
        ``prepare_ahead`` scenes, and once all have begun, the longest episodes go first."""
        with self._cond:
            self._told = True
            for scene in scenes:
                scene_key = (scene.variant_id, mirror)
                self._waiting[scene_key] = self._waiting.get(scene_key, 0) + 1
                if scene_key not in self._refs:
                    self._expected.setdefault(scene_key, scene)
            if self._expected:
                self._cond.notify_all()

    def cached(self, key: str) -> bytes | None:
        """Return the PNG of ``key`` if it is in memory."""
        with self._cond:
            png = self._pngs.get(key)
            if png is not None:
                self._pngs.move_to_end(key)
                self.stats.reused += 1
            return png

    def remember(self, key: str, png: bytes) -> None:
        """Keep a frame found elsewhere (a frame store) in memory."""
        with self._cond:
            self._keep(key, png)

    def forget(self, key: str) -> None:
        """Drop ``key`` from memory: the next ``render`` of it renders it again (and is the
        renderer's, so its caller stores it), as when storing it failed."""
        with self._cond:
            png = self._pngs.pop(key, None)
            if png is not None:
                self._png_bytes -= len(png)

    def render(
        self,
        scene: Scene,
        cell: Vec3,
        size: int,
        *,
        mirror: bool = True,
        timeout_s: float | None = None,
        episode: int = 0,
        steps_left: int = 0,
    ) -> tuple[bytes, bool]:
        """Return the PNG of a view and whether this call had it rendered.

        ``episode`` is the number ``scene_open`` gave the episode asking (0, the default, for a
        frame someone waits for, which goes first) and ``steps_left`` the most steps that
        episode may still take: see the order in the module's docstring.

        A frame in memory is returned at once (``False``); a frame being rendered for another
        caller is waited for (``False``); otherwise it is rendered (``True``: the caller that
        gets ``True`` is the one to store it). A rendering error is raised in every caller;
        ``TimeoutError`` after ``timeout_s`` (the frame is still made, and kept in memory).
        """
        key = self.key(scene, cell, size, mirror=mirror)
        with self._cond:
            if self._closed:
                raise RuntimeError("this render pool is closed")
            png = self._pngs.get(key)
            if png is not None:
                self._pngs.move_to_end(key)
                self.stats.reused += 1
                return png, False
            job = self._in_flight.get(key)
            mine = job is None
            if job is None:
                job = _Job(key, scene, cell, size, mirror, episode, steps_left)
                self._in_flight[key] = job
                self._queue.append(job)
                if len(self._queue) > self._idle and len(self._workers) < self.threads:
                    self._start_worker()  # one more renderer only when every one is busy
                self._cond.notify_all()  # the owner of the scene must hear of it
            else:
                # Shared: the place of the most urgent of those waiting for it.
                job.episode = min(job.episode, episode) if job.episode and episode else 0
                job.steps_left = max(job.steps_left, steps_left)
                self.stats.shared += 1
        return job.future.result(timeout=timeout_s), mine

    def close(self) -> None:
        """Stop the render threads (after the frames asked for) and free their renderers."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            workers = list(self._workers)
        for worker in workers:
            if worker is not threading.current_thread():
                worker.join()
        _open_pools.discard(self)

    def __enter__(self) -> RenderPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the render threads ------------------------------------------------------------------

    def _start_worker(self) -> None:
        index = len(self._workers)
        self._held.append(OrderedDict())
        worker = threading.Thread(
            target=self._work, args=(index,), name=f"render-{index}", daemon=True
        )
        self._workers.append(worker)
        worker.start()

    def _keep(self, key: str, png: bytes) -> None:
        if key in self._pngs:
            self._pngs.move_to_end(key)
            return
        self._pngs[key] = png
        self._png_bytes += len(png)
        while self._png_bytes > self.keep_bytes and len(self._pngs) > 1:
            _, dropped = self._pngs.popitem(last=False)
            self._png_bytes -= len(dropped)

    def _pick(self, index: int) -> tuple[_Job | None, float]:
        """The next job for render thread ``index``, or None and how long to wait (lock held).

        Each scene belongs to the thread that set it up: its jobs go there. A thread takes the
        first job, by rank and then by age, of a scene it keeps or that nobody keeps; a job
        for another thread's scene only when it has none of those and that job has waited
        ``max_wait_s`` (stolen: the scene is set up again here, so a thread with work of its
        own never steals).
        """
        now = time.monotonic()
        wait = self.max_wait_s
        stale: _Job | None = None
        begun = self._all_begun()
        for job in sorted(self._queue, key=lambda j: _rank(j, begun)):
            owner = self._owner.get(job.scene_key)
            if owner is None or owner == index:
                return job, 0.0
            waited = now - job.queued
            if waited > self.max_wait_s:
                stale = stale or job
            else:
                wait = min(wait, self.max_wait_s - waited)  # another thread's, not waiting long
        if stale is not None:
            return stale, 0.0
        return None, max(wait, 0.01)

    def _take(self, index: int, job: _Job) -> bool:
        """Give ``job``'s scene to thread ``index``; return whether it must be set up there."""
        self._queue.remove(job)
        scene = job.scene_key
        self._owner[scene] = index
        held = self._held[index]
        setup = scene not in held
        held[scene] = None
        held.move_to_end(scene)
        return setup

    def _to_unload(self, index: int) -> list[tuple[str, bool]]:
        """The scenes thread ``index`` should free now (lock held): those another thread took
        over, the unused ones beyond the ``idle_scenes`` last used, and the least recently used
        beyond ``keep_models``; never the one it has loaded."""
        held = self._held[index]
        scenes = list(held)[:-1]  # the last is the loaded one
        drop = [s for s in scenes if self._owner.get(s) != index]
        idle = [s for s in scenes if s not in drop and not self._refs.get(s)]
        drop += idle[: max(0, len(idle) - self.idle_scenes)]
        kept = [s for s in scenes if s not in drop]
        drop += kept[: max(0, len(kept) + 1 - self.keep_models)]
        for scene in drop:
            del held[scene]
            if self._owner.get(scene) == index:
                del self._owner[scene]
        return drop

    def _all_begun(self) -> bool:
        """Whether every episode expected has begun (lock held); False if none were."""
        return self._told and not self._waiting

    def _next_expected(self) -> tuple[Scene, bool] | None:
        """Take the next expected scene to prepare, if fewer than ``prepare_ahead`` are
        prepared and not yet open (lock held)."""
        if self._closed or not self._expected or len(self._ready) >= self.prepare_ahead:
            return None
        scene_key, scene = self._expected.popitem(last=False)
        self._ready.add(scene_key)
        return scene, scene_key[1]

    def _prepare(self, renderer: Renderer | None, scene: Scene, mirror: bool) -> Renderer | None:
        """Prepare an expected scene with this thread's renderer (made if need be)."""
        try:
            if renderer is None:
                renderer = self._make_renderer()
            prepare = getattr(renderer, "prepare", None)
            if prepare is not None:
                prepare(scene, mirror=mirror)
                release_free_memory()  # what the compiler allocated and freed
                with self._cond:
                    self.stats.prepared += 1
        except Exception:  # only ahead of time: the episode's own load reports it
            logger.debug("preparing %s ahead failed", scene.id, exc_info=True)
        return renderer

    def _work(self, index: int) -> None:
        renderer: Renderer | None = None
        try:
            while True:
                with self._cond:
                    job: _Job | None = None
                    ahead: tuple[Scene, bool] | None = None
                    while not self._closed or self._queue:
                        wait: float | None = None  # nothing queued: until notified
                        if self._queue:
                            job, wait = self._pick(index)
                        if job is not None:
                            break
                        ahead = self._next_expected()
                        if ahead is not None:
                            break
                        self._idle += 1
                        self._cond.wait(wait)
                        self._idle -= 1
                    if job is None and ahead is None:
                        return
                    if job is not None:
                        setup = self._take(index, job)
                if job is None:
                    assert ahead is not None
                    renderer = self._prepare(renderer, *ahead)  # outside the lock
                    continue
                try:
                    started = time.perf_counter()
                    if renderer is None:
                        renderer = self._make_renderer()
                    renderer.load(job.scene, mirror=job.mirror)
                    renderer.set_hand(job.cell)
                    png = encode_png(renderer.render(job.size))
                except BaseException as exc:  # every waiting caller gets the error
                    with self._cond:
                        self._in_flight.pop(job.key, None)
                        for scene in self._held[index]:
                            if self._owner.get(scene) == index:
                                del self._owner[scene]
                        self._held[index].clear()
                    job.future.set_exception(exc)
                    if renderer is not None:  # a failed renderer is not trusted again
                        renderer.close()
                        renderer = None
                    if not isinstance(exc, Exception):
                        raise
                    continue
                with self._cond:
                    self.stats.rendered += 1
                    self.stats.loads += int(setup)
                    self.stats.render_s += time.perf_counter() - started
                    self._keep(job.key, png)
                    self._in_flight.pop(job.key, None)
                    unload = self._to_unload(index)
                job.future.set_result(png)
                free = getattr(renderer, "unload", None)
                if free is not None:
                    for scene_id, mirror in unload:
                        free(scene_id, mirror=mirror)
                if setup or unload:
                    release_free_memory()  # a compile's scratch, a freed scene
        finally:
            if renderer is not None:
                renderer.close()


_open_pools: weakref.WeakSet[RenderPool] = weakref.WeakSet()


def _close_open_pools() -> None:
    for pool in list(_open_pools):
        pool.close()


# Free every renderer in its own thread when the main thread ends: before the atexit hooks,
# one of which (MuJoCo's) terminates the EGL display the contexts live on. The hook that
# concurrent.futures uses to stop its threads; plain atexit where it is missing.
getattr(threading, "_register_atexit", atexit.register)(_close_open_pools)
