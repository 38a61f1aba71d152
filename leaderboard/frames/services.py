"""Writes: frames, registered by content key and stored as PNG + WebP (+ thumbnail) in storage.

A frame is *registered* (a ``Frame`` row) when a stored episode or the scene gallery shows it,
and *stored* once its files exist. Only registered frames can be served or rendered, so no
request can make the server render an arbitrary view.

Frames are rendered in three places:

* the render worker (``render`` queue): what is rendered eagerly when a run finishes (each
  episode's start and final views: the thumbnails and the gallery) and, when a replay asks for
  an episode with missing frames, the rest of that episode;
* the web process, for the one frame a replay is waiting for (``frame_render_now``);
* a model run's own episodes, which store every frame the model is shown as it is shown.

Each process renders in one pool (``render_pool``: a few persistent renderers, one per core by
default, ``evaluation.render_pool``), whichever thread asks.

What visitors can make the server render is bounded three ways (docs/deploy.md, "Frames"):

* each address, session and account may cause ``MIRRORBENCH_RENDER_RATE`` new frames a period
  (``render_budget_take``; a frame already stored, or already being made, costs nothing);
* a web process renders at most ``MIRRORBENCH_RENDER_QUEUE`` frames for requests at once; past
  that a request is answered 503 with Retry-After at once (``RenderQueueFull``), never queued
  without bound;
* stored frames have a disk budget, ``MIRRORBENCH_FRAMES_MAX_BYTES``: beat's sweep
  (``frames_evict``) deletes the least recently used frames that neither the gallery nor a
  listed run's steps show, and a later request renders such a frame again if it is asked for;
  episode animations (``Animation``) count in the same budget and are evicted with them.
"""

from __future__ import annotations

import contextlib
import heapq
import io
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db.models import Exists, F, OuterRef, Q, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from evaluation.deferred import Deferred
from evaluation.render_pool import RenderPool
from evaluation.vocabulary import MAIN_CONDITION
from leaderboard.bulk import rows_insert
from leaderboard.frames.selectors import (
    FRAME_VARIANTS,
    episode_cells,
    frame_exists,
    frame_path,
    gallery_scenes,
    run_final_cells,
    run_image_size,
    run_scene_cells,
)
from leaderboard.models import Animation, Episode, Frame, Run, Scene, Step
from leaderboard.queue import (
    EPISODE_RENDER_FRAMES,
    RUN_RENDER_FRAMES,
    task_send,
    task_send_on_commit,
)
from leaderboard.runs.limits import counters_take, rate_parse
from leaderboard.runs.selectors import stale_after
from mirrorbench_site.cache import limits_cache
from simulation.backends import renderer_version
from simulation.catalogue import get_scene
from simulation.dynamics import Vec3, goal_cell
from simulation.renderer import DEFAULT_SIZE, frame_key

if TYPE_CHECKING:
    from PIL import Image
else:
    Image = Deferred("PIL.Image")  # the web processes that store no frame never load Pillow

logger = logging.getLogger(__name__)
T = TypeVar("T")

WEBP_QUALITY = 80
THUMB_SIZE = 256
THUMB_QUALITY = 70
RENDER_WAIT_S = 60.0
"""How long a web request waits for the frame it asked for before answering 503."""


def _webp(image: Image.Image, quality: int) -> bytes:
    buffer = io.BytesIO()
    # method 1: a fast encoder setting; a viewer's WebP need not be the smallest possible.
    image.save(buffer, format="WEBP", quality=quality, method=1)
    return buffer.getvalue()


STORE_ATTEMPTS = 6
STORE_BACKOFF_S = 0.5
"""A frame file that cannot be stored is tried ``STORE_ATTEMPTS`` times, waiting this long
after the first failure and twice as long after each next one (at most 8 s): about 15 s of
waiting, beside the S3 client's own retries of each request, rides out a store that answers
503 or cannot be reached for a while, instead of failing the episode that showed the frame."""


class FrameStoreError(Exception):
    """The frame store kept failing (unreachable, 503, disk full): the frame is not stored."""


def _storage_errors() -> tuple[type[BaseException], ...]:
    """The errors a storage backend raises when the store fails, rather than the code."""
    errors: list[type[BaseException]] = [OSError]
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:  # no S3 support installed
        return tuple(errors)
    return (*errors, BotoCoreError, ClientError)


def _stored_with_retries(what: str, operation: Callable[[], T]) -> T:
    """Run a storage ``operation``, again after a backoff while the store fails; return what
    it returned, or raise ``FrameStoreError`` saying ``what`` failed and why."""
    delay = STORE_BACKOFF_S
    for attempt in range(1, STORE_ATTEMPTS + 1):
        try:
            return operation()
        except _storage_errors() as exc:
            if attempt == STORE_ATTEMPTS:
                raise FrameStoreError(
                    f"{what}: the frame store failed {attempt} times, last with "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            logger.warning(
                "%s failed (%s: %s); trying again in %.1f s", what, type(exc).__name__, exc, delay
            )
            time.sleep(delay)
            delay = min(delay * 2, 8.0)
    raise AssertionError("unreachable")


def _save_whole(path: str, data: bytes) -> None:
    """Save ``data`` at ``path`` unless a file is there; remove what a failed save left, and
    the copy kept under another name when another process saved ``path`` first."""
    if default_storage.exists(path):
        return
    try:
        saved = default_storage.save(path, ContentFile(data))
    except BaseException:
        # A full disk leaves a truncated file behind, which would then pass for stored.
        with contextlib.suppress(Exception):
            default_storage.delete(path)
        raise
    if saved != path:
        # Another process (the web and a render worker, two workers' episodes) stored this
        # frame between our look and our save, and the store, which never overwrites, kept
        # ours under another name that nothing would serve or evict. The key names the
        # pixels: theirs will do.
        default_storage.delete(saved)


def frame_store(*, key: str, png: bytes) -> bool:
    """Store a frame's PNG, WebP and thumbnail under its key; return False if already there.

    The PNG is the lossless image a model was shown; the WebP (quality 80) is what the viewer
    loads and the thumbnail (256 px) what episode lists show. A registered row records the
    bytes of each and when they were stored. A store that fails for a while is waited for
    (``STORE_ATTEMPTS``); past that ``FrameStoreError`` is raised and nothing is recorded.
    """
    if _stored_with_retries(f"checking frame {key}", lambda: frame_exists(key)):
        _mark_stored(key)
        return False
    sizes = _frame_files_save(key, png)
    now = timezone.now()
    Frame.objects.filter(pk=key).update(**sizes, stored=now, used=now)
    return True


def _frame_files_save(key: str, png: bytes) -> dict[str, int]:
    """Encode a frame's WebP and thumbnail and save its three files (no database work);
    return the bytes of each, as the row records them."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    thumb = image.copy()
    thumb.thumbnail((THUMB_SIZE, THUMB_SIZE))
    files = {"png": png, "webp": _webp(image, WEBP_QUALITY), "thumb": _webp(thumb, THUMB_QUALITY)}
    # The PNG goes last: frame_exists checks for it, so a half-written frame is not "stored".
    for variant in ("thumb", "webp", "png"):
        path = frame_path(key, variant)
        _stored_with_retries(f"storing {path}", partial(_save_whole, path, files[variant]))
    return {f"{variant}_bytes": len(data) for variant, data in files.items()}


def frame_png(key: str) -> bytes | None:
    """Return a stored frame's PNG, or None when it is not stored (complete) yet, or the store
    cannot be read now (the caller renders the frame instead)."""
    try:
        if not frame_exists(key):
            return None
        with default_storage.open(frame_path(key, "png"), "rb") as handle:
            data: bytes = handle.read()
    except FileNotFoundError:
        return None
    except _storage_errors() as exc:
        logger.warning("Cannot read frame %s from the store (%s: %s)", key, type(exc).__name__, exc)
        return None
    return data


def frame_lost(*, key: str) -> None:
    """Record that a stored frame's files are gone: whoever asks for it next renders it."""
    Frame.objects.filter(pk=key).update(stored=None)


def _mark_stored(key: str) -> None:
    """Record that a frame found in storage is stored (its row may predate the files)."""
    if not Frame.objects.filter(pk=key, stored__isnull=True).exists():
        return
    sizes: dict[str, int | None] = {}
    unknown: tuple[type[BaseException], ...] = (*_storage_errors(), NotImplementedError)
    for variant in FRAME_VARIANTS:
        try:
            sizes[f"{variant}_bytes"] = default_storage.size(frame_path(key, variant))
        except unknown:
            sizes[f"{variant}_bytes"] = None
    Frame.objects.filter(pk=key).update(stored=timezone.now(), **sizes)


@dataclass(frozen=True)
class FrameSpec:
    """What a frame shows: a scene (its row) under a condition, a hand cell, a size, with or
    without the mirror."""

    scene: Scene
    cell: Vec3
    size: int
    mirror: bool = True
    condition: str = MAIN_CONDITION

    @property
    def key(self) -> str:
        return frame_key(
            renderer_version(),
            self.scene.scene_id,
            self.cell,
            self.size,
            mirror=self.mirror,
            condition=self.condition,
        )


def frames_register(specs: Iterable[FrameSpec], *, check_store: bool = True) -> list[str]:
    """Register frames (idempotent) under today's renderer; return their keys in order.

    Frames already in storage (a model run stores what it is shown) are marked stored. With
    ``check_store=False`` the store is not asked (one request a new frame: a HEAD on S3): a
    new row whose files exist stays unmarked until the first render or serve finds them
    (``frames_render`` marks it instead of rendering it).
    """
    specs = list(specs)
    keys = [spec.key for spec in specs]
    known = set(Frame.objects.filter(pk__in=keys).values_list("pk", flat=True))
    version = renderer_version()
    new = {
        key: {
            "key": key,
            "scene_id": spec.scene.pk,
            "cell": list(spec.cell),
            "size": spec.size,
            "mirror": spec.mirror,
            "condition": spec.condition,
            "renderer": version,
        }
        for key, spec in zip(keys, specs, strict=True)
        if key not in known
    }
    rows_insert(Frame, new.values(), ignore_conflicts=True)
    if not check_store:
        return keys
    for key in new:
        try:
            exists = frame_exists(key)
        except _storage_errors() as exc:
            # Registering must not fail with the store (a model run registers each step's frame
            # inside the step's transaction): the row stays unmarked, and whoever next serves
            # or renders the frame finds it stored.
            logger.warning(
                "Cannot check frame %s in the store now (%s: %s); left unmarked",
                key,
                type(exc).__name__,
                exc,
            )
            continue
        if exists:
            _mark_stored(key)
    return keys


def episode_frames_register(episode: Episode, cells: Sequence[Vec3] | None = None) -> list[str]:
    """Register the frames of an episode: its start view, then the view after each step.

    ``cells`` (``selectors.episode_cells``) spares a query when the steps are at hand.
    """
    size = run_image_size(episode.run)
    cells = episode_cells(episode) if cells is None else cells
    condition = episode.run.condition
    return frames_register(
        FrameSpec(episode.scene, cell, size, condition=condition) for cell in cells
    )


def run_frames_register(*, run: Run, check_store: bool = True) -> list[str]:
    """Register the frames of every episode of a run (a few queries); return the keys.

    ``check_store``: as for ``frames_register``."""
    size = run_image_size(run)
    scenes = {s.scene_id: s for s in Scene.objects.filter(episodes__run=run).distinct()}
    specs = [
        FrameSpec(scenes[scene_id], cell, size, condition=run.condition)
        for scene_id, cells in run_scene_cells(run_id=run.pk).items()
        for cell in dict.fromkeys(cells)
    ]
    return frames_register(specs, check_store=check_store)


def run_eager_frame_keys(*, run: Run) -> list[str]:
    """Return the keys of the frames rendered eagerly when a run finishes.

    Each scene's start view and each episode's final view: the thumbnails of the episode
    lists and the first frame of every replay. A replay renders the rest when it is opened.
    """
    size = run_image_size(run)
    scenes = {s.scene_id: s for s in Scene.objects.filter(episodes__run=run).distinct()}
    condition = run.condition
    specs = [FrameSpec(scene, (0, 0, 0), size, condition=condition) for scene in scenes.values()]
    for scene_id, cells in run_final_cells(run_id=run.pk).items():
        specs += [FrameSpec(scenes[scene_id], cell, size, condition=condition) for cell in cells]
    return list(dict.fromkeys(frames_register(specs)))


def run_frames_queue(*, run: Run) -> None:
    """Once the transaction commits, queue the registration and eager frames of ``run``."""
    task_send_on_commit(RUN_RENDER_FRAMES, run.pk)


FRAMES_RECHECK_S = 86_400
"""How long after a run finished ``runs_frames_requeue`` looks after its eager frames."""


def runs_frames_requeue(*, now: datetime | None = None) -> list[int]:
    """Queue again the eager frames that a dead render worker left undone; return those runs.

    A render task killed mid-way (or the ``run_render_frames`` message of a worker killed
    before running it) is gone with the embedded broker, which forgets the messages a worker
    has taken: the run's thumbnails and first replay frames would then never be made. Beat's
    stale check calls this: a run finished, with steps, in the last ``FRAMES_RECHECK_S`` but
    more than ``stale_after`` ago, whose eager frames are not all made (stored, or evicted by
    the disk budget's sweep, which a request renders again if asked for) and none of them was
    stored during ``stale_after`` (nothing is rendering them), gets ``run_render_frames``
    queued again, at most once per ``stale_after``. Rendering stored frames again is skipped,
    so a duplicate costs little. Runs whose frames are all made are remembered in the cache
    and not looked at again.
    """
    now = now or timezone.now()
    cutoff = now - stale_after()
    with_steps = Step.objects.filter(episode__run=OuterRef("pk"))
    recent = list(
        Run.objects.filter(
            status=Run.Status.COMPLETED,
            finished__gte=now - timedelta(seconds=FRAMES_RECHECK_S),
            finished__lt=cutoff,
        )
        .filter(Exists(with_steps))
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    complete = cache.get_many([f"frames-complete:{pk}" for pk in recent])
    queued = []
    for run in Run.objects.filter(
        pk__in=[p for p in recent if f"frames-complete:{p}" not in complete]
    ):
        keys = run_eager_frame_keys(run=run)
        if not frames_unstored(keys, evicted=False):
            cache.set(f"frames-complete:{run.pk}", 1, FRAMES_RECHECK_S)
            continue
        if Frame.objects.filter(pk__in=keys, stored__gte=cutoff).exists():
            continue  # being rendered now
        if cache.add(f"frames-requeued:{run.pk}", 1, int(stale_after().total_seconds())):
            task_send(RUN_RENDER_FRAMES, run.pk)
            queued.append(run.pk)
    return queued


QUEUED_FOR_S = 600
"""An episode queued for rendering is not queued again for this long."""


def episode_frames_queue(*, episode: Episode) -> bool:
    """Queue the rest of an episode's frames on the render queue; return whether it was queued.

    At most once per ``QUEUED_FOR_S`` per episode, however many replays of it are open.
    """
    # In the limits' cache: page traffic must not make an episode queued again and again.
    if not limits_cache.add(f"frames-queued:{episode.pk}", 1, QUEUED_FOR_S):
        return False
    task_send(EPISODE_RENDER_FRAMES, episode.pk)
    return True


GALLERY_CONDITIONS = ("mark-unseen", "moved-mark")
"""The control conditions whose start view each scene's page shows beside the start without
the mirror (which is ``no-mirror``'s)."""


def gallery_frames_register(*, size: int, scenes: Iterable[Scene] | None = None) -> list[str]:
    """Register the scene gallery's frames: per scene (default: every scene of this version),
    the start, the hand at the goal, the start without the mirror, and the start under each
    other control condition (``GALLERY_CONDITIONS``)."""
    specs = []
    for scene in gallery_scenes() if scenes is None else scenes:
        catalogue = get_scene(scene.scene_id)
        specs += [
            FrameSpec(scene, (0, 0, 0), size),
            FrameSpec(scene, goal_cell(catalogue), size),
            FrameSpec(scene, (0, 0, 0), size, mirror=False),
            *(FrameSpec(scene, (0, 0, 0), size, condition=c) for c in GALLERY_CONDITIONS),
        ]
    return frames_register(specs)


@dataclass
class FrameCount:
    rendered: int = 0
    reused: int = 0


_pool_lock = threading.Lock()
_pool: RenderPool | None = None


def render_pool() -> RenderPool:
    """Return this process's render pool, made on first use (so after a fork).

    ``MIRRORBENCH_RENDER_THREADS`` persistent renderers (default: one per core) serve every
    thread of the process: a worker's model episodes and render tasks, a web process's
    on-demand frames. A frame several of them ask for is rendered once.
    """
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = RenderPool(settings.MIRRORBENCH_RENDER_THREADS or None)
        return _pool


def frames_render(keys: Sequence[str]) -> FrameCount:
    """Render and store the registered frames ``keys`` that are not stored yet.

    Frames of another renderer build (registered before an upgrade) cannot be made here and
    are skipped. Frames are asked for scene by scene, so each scene is set up once.
    """
    count = FrameCount()
    frames = Frame.objects.filter(pk__in=list(keys)).select_related("scene")
    wanted = sorted(frames, key=lambda f: (f.scene.scene_id, not f.mirror, f.cell))
    version = renderer_version()
    for frame in wanted:
        if frame.renderer != version:
            continue
        if frame.stored is not None or _stored_with_retries(
            f"checking frame {frame.key}", partial(frame_exists, frame.key)
        ):
            _mark_stored(frame.key)
            count.reused += 1
            continue
        frame_store(key=frame.key, png=_frame_png_render(frame))
        count.rendered += 1
    return count


def _frame_png_render(frame: Frame, timeout_s: float | None = None) -> bytes:
    x, y, z = frame.cell
    png, _ = render_pool().render(
        get_scene(frame.scene.scene_id, frame.condition),
        (x, y, z),
        frame.size,
        mirror=frame.mirror,
        timeout_s=timeout_s,
    )
    return png


def episode_frames_render(*, episode_id: int) -> FrameCount:
    """Register and render the missing frames of an episode."""
    episode = Episode.objects.select_related("scene", "run").get(pk=episode_id)
    return frames_render(episode_frames_register(episode))


def frames_unstored(keys: Iterable[str], *, evicted: bool = True) -> list[str]:
    """Return which of ``keys`` are registered, renderable here and not stored yet.

    ``evicted=False`` leaves out the frames the disk budget's sweep deleted (``frames_evict``:
    stored once, their ``used`` kept): only frames never made are returned.
    """
    unstored = Frame.objects.filter(
        Q(pk__in=list(keys)), stored__isnull=True, renderer=renderer_version()
    )
    if not evicted:
        unstored = unstored.filter(used__isnull=True)
    return list(unstored.values_list("pk", flat=True))


class RenderQueueFull(Exception):
    """This process already renders ``MIRRORBENCH_RENDER_QUEUE`` frames for requests."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"the render queue is full; ask again in {retry_after_s} s")
        self.retry_after_s = retry_after_s


class RenderBudgetExceeded(Exception):
    """The one asking has caused their ``MIRRORBENCH_RENDER_RATE`` of new frames this period."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"too many new frames asked for; ask again in {retry_after_s} s")
        self.retry_after_s = retry_after_s


QUEUE_RETRY_AFTER_S = 2
"""What a request turned away by a full render queue is told to wait (Retry-After)."""

_queue_lock = threading.Lock()
_queue_jobs: dict[str, Future[bytes]] = {}
_queue_executor: ThreadPoolExecutor | None = None
_queue_workers = 0


def _queue_submit(frame: Frame, charge: Callable[[], None] | None = None) -> Future[bytes]:
    """Have ``frame`` rendered for a request, sharing a render already asked for.

    At most ``MIRRORBENCH_RENDER_QUEUE`` frames are being made for requests at once in this
    process, counted until each is made (a request that stopped waiting still holds its
    place): past that, ``RenderQueueFull``. ``charge`` is called only when this call asks for
    a new render, and may refuse it (``RenderBudgetExceeded``).
    """
    global _queue_executor, _queue_workers
    limit = max(1, int(settings.MIRRORBENCH_RENDER_QUEUE))
    with _queue_lock:
        shared = _queue_jobs.get(frame.key)
        if shared is not None:
            return shared
        if len(_queue_jobs) >= limit:
            raise RenderQueueFull(QUEUE_RETRY_AFTER_S)
        if charge is not None:
            charge()
        if _queue_executor is None or _queue_workers != limit:
            _queue_executor = ThreadPoolExecutor(limit, thread_name_prefix="frame-request")
            _queue_workers = limit
        # The pool thread only waits for the render pool: no database work off this thread.
        job = _queue_executor.submit(_frame_png_render, frame)
        _queue_jobs[frame.key] = job

    def done(finished: Future[bytes]) -> None:
        if not finished.cancelled() and finished.exception() is None:
            # For the request that asks again after giving up waiting: no second render.
            render_pool().remember(frame.key, finished.result())
        with _queue_lock:
            if _queue_jobs.get(frame.key) is job:
                del _queue_jobs[frame.key]

    job.add_done_callback(done)
    return job


def frame_render_now(
    key: str,
    *,
    timeout_s: float = RENDER_WAIT_S,
    charge: Callable[[], None] | None = None,
) -> bool:
    """Render one registered frame for a request, wait, and store it.

    Only the pixels are made in the pool (its renderers keep their OpenGL contexts between
    requests), through the bounded render queue (``_queue_submit``); the database and
    storage are used from the calling thread. Returns whether the frame is stored afterwards.

    Raises:
        TimeoutError: Rendering takes longer than ``timeout_s`` (the frame is still made and
            kept in the pool's memory, where the next request finds it at no cost).
        RenderQueueFull: This process renders as many frames for requests as it may.
        RenderBudgetExceeded: ``charge`` refused the new render.
    """
    frame = Frame.objects.select_related("scene").get(pk=key)
    if frame.stored is not None:
        return True
    if frame.renderer != renderer_version():
        return False
    png = render_pool().cached(key)
    if png is None:
        if frame_exists(key):  # its files saved meanwhile (prefetching, another process)
            _mark_stored(key)
            return True
        png = _queue_submit(frame, charge).result(timeout=timeout_s)
    frame_store(key=key, png=png)
    return True


PREFETCH_KEEP_FREE = 2
"""Places of the render queue (``MIRRORBENCH_RENDER_QUEUE``, 8 by default) that prefetching
leaves free for frames someone is waiting for."""


def frames_prefetch(keys: Iterable[str]) -> int:
    """Make, in the background and one after another in the order given (the likeliest
    first), registered frames that someone is likely to ask for next (a player's next views),
    and save their files; return how many are waiting to be made.

    Best effort and never in anyone's way: a frame stored, already in memory or being made is
    skipped; no visitor's render budget is charged; one frame at a time, so the render pool
    keeps a renderer for a frame someone waits for; and only while the bounded render queue
    has more than ``PREFETCH_KEEP_FREE`` places free. On a CPU renderer a background render
    still slows one asked for meanwhile (``benchmarks/play.py``). A made frame's files are
    saved by one thread of this process that does no database work (``_prefetch_store``);
    the request that shows it finds them and records them, and this call (a request's) first
    records those that nobody has asked for, so the disk budget counts them. The caller starts
    it once its transaction commits (the rows must exist for the request that stores them).
    """
    _prefetched_mark_stored()
    keys = list(keys)
    order = {key: rank for rank, key in enumerate(keys)}  # the caller's: likeliest first
    frames = sorted(
        Frame.objects.select_related("scene").filter(  # the render thread reads no row
            pk__in=keys, stored__isnull=True, renderer=renderer_version()
        ),
        key=lambda frame: order[frame.key],
    )
    waiting = len(frames)
    _prefetch_next(frames)  # takes them from the list as it starts them
    return waiting


_prefetch_store_lock = threading.Lock()
_prefetch_store_executor: ThreadPoolExecutor | None = None
_prefetch_pending: set[Future[Any]] = set()
"""Renders and stores that prefetching started and that have not finished."""


def _prefetch_track(future: Future[Any]) -> None:
    with _prefetch_store_lock:
        _prefetch_pending.add(future)

    def finished(done: Future[Any]) -> None:
        with _prefetch_store_lock:
            _prefetch_pending.discard(done)

    future.add_done_callback(finished)


def frames_prefetch_wait(timeout_s: float = 30.0) -> bool:
    """Wait until the frames prefetching is making or storing are done (a chain's next render
    starts before its last one counts as done); return whether all were, within ``timeout_s``.
    For a process about to stop, or a test that must not leave work behind."""
    deadline = time.monotonic() + timeout_s
    while True:
        with _prefetch_store_lock:
            pending = list(_prefetch_pending)
        if not pending:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        futures_wait(pending, timeout=left)


_prefetch_saved: deque[tuple[str, dict[str, int]]] = deque()
"""Frames whose files prefetching saved (key, bytes of each file), for a request thread to
mark stored."""


def _prefetched_mark_stored() -> None:
    """Mark stored the frames whose files prefetching saved since the last call: rows are
    written by request threads only, and a saved frame nobody asked for still counts in the
    disk budget (``frames_stored_bytes``) and can be evicted."""
    while True:
        try:
            key, sizes = _prefetch_saved.popleft()
        except IndexError:
            return
        # One update, with the sizes the saving thread measured (the row may be marked by
        # now: the request that showed the frame).
        now = timezone.now()
        Frame.objects.filter(pk=key, stored__isnull=True).update(**sizes, stored=now, used=now)


def _prefetch_store(key: str, made: Future[bytes]) -> None:
    """Save the files of a frame that prefetching made, in the prefetch's own thread (one per
    process, no database work): the request that shows it then finds the files, records them
    (``frame_store`` -> ``_mark_stored``) and encodes nothing. Best effort: a frame that cannot
    be saved now stays in the render pool's memory, where ``frame_render_now`` finds it."""
    global _prefetch_store_executor
    if made.cancelled() or made.exception() is not None:
        return
    png = made.result()

    def store() -> None:
        try:
            if not frame_exists(key):  # else stored meanwhile, and recorded by whoever did
                _prefetch_saved.append((key, _frame_files_save(key, png)))
        except Exception as exc:  # best effort: the request that shows it stores it
            logger.info("A prefetched frame %s was left unsaved: %s", key, exc)

    with _prefetch_store_lock:
        if _prefetch_store_executor is None:
            _prefetch_store_executor = ThreadPoolExecutor(1, thread_name_prefix="prefetch-store")
        stored = _prefetch_store_executor.submit(store)
    _prefetch_track(stored)


def _prefetch_next(frames: list[Frame]) -> None:
    """Start rendering the first of ``frames`` that needs it; the rest follow when it is made."""
    room = max(1, int(settings.MIRRORBENCH_RENDER_QUEUE)) - PREFETCH_KEEP_FREE
    pool = render_pool()
    while frames:
        frame = frames.pop(0)
        if pool.cached(frame.key) is not None:
            continue
        with _queue_lock:
            if frame.key in _queue_jobs:
                continue
            if len(_queue_jobs) >= room:
                return
        try:
            job = _queue_submit(frame)
        except RenderQueueFull:
            return

        def made(done: Future[bytes], key: str = frame.key) -> None:
            _prefetch_store(key, done)
            _prefetch_next(frames)

        job.add_done_callback(made)  # first: the next render is pending before this one is not
        _prefetch_track(job)
        return


# -- who may cause how many new frames ------------------------------------------------------


def render_budget_take(identities: Sequence[str], *, now: float | None = None) -> None:
    """Count one new frame against each of ``identities`` (an address, a session, an account).

    Raises:
        RenderBudgetExceeded: One of them has caused ``MIRRORBENCH_RENDER_RATE`` new frames in
            this period (fixed periods: ``limits.counters_take``, in the throttles' cache).
    """
    rate = str(settings.MIRRORBENCH_RENDER_RATE)
    now = time.time() if now is None else now
    keys = [(f"render-budget:{identity}", rate) for identity in identities]
    if not counters_take(keys, clock=lambda: now):
        _, period = rate_parse(rate)
        raise RenderBudgetExceeded(int((now // period + 1) * period - now) + 1)


# -- the disk budget --------------------------------------------------------------------------

USED_EVERY_S = 3600
"""A served frame's ``used`` time is written at most this often (a cache key remembers)."""


def frame_used(key: str) -> None:
    """Note that a stored frame was served now (its place in the eviction order)."""
    if cache.add(f"frame-used:{key}", 1, USED_EVERY_S):
        Frame.objects.filter(pk=key).update(used=timezone.now())


def frames_kept_keys() -> set[str]:
    """Keys no eviction touches: the gallery's frames and every frame of a listed run's steps."""
    version = renderer_version()
    kept: set[str] = set()
    for scene in gallery_scenes():
        for cell, mirror in (
            ((0, 0, 0), True),
            (goal_cell(get_scene(scene.scene_id)), True),
            ((0, 0, 0), False),
        ):
            kept.add(frame_key(version, scene.scene_id, cell, DEFAULT_SIZE, mirror=mirror))
        for condition in GALLERY_CONDITIONS:
            kept.add(
                frame_key(version, scene.scene_id, (0, 0, 0), DEFAULT_SIZE, condition=condition)
            )
    for run in Run.objects.filter(listed=True).only("pk", "spec", "metadata", "condition"):
        size = run_image_size(run)
        for scene_id, cells in run_scene_cells(run_id=run.pk).items():
            kept.update(
                frame_key(version, scene_id, cell, size, condition=run.condition)
                for cell in set(cells)
            )
    return kept


def frames_stored_bytes() -> int:
    """Bytes of every stored frame's files (PNG, WebP and thumbnail), as recorded."""
    total = Frame.objects.filter(stored__isnull=False).aggregate(
        total=Sum(
            Coalesce(F("png_bytes"), 0)
            + Coalesce(F("webp_bytes"), 0)
            + Coalesce(F("thumb_bytes"), 0)
        )
    )["total"]
    return int(total or 0)


def animations_stored_bytes() -> int:
    """Bytes of every stored episode animation (``Animation``), as recorded."""
    return int(Animation.objects.aggregate(total=Sum("size_bytes"))["total"] or 0)


@dataclass
class Evicted:
    frames: int = 0
    bytes: int = 0
    stored_bytes: int = 0
    """What is stored afterwards."""
    animations: int = 0


EVICT_TO = 0.9
"""A sweep that must evict brings the frames down to this share of the budget, so that it does
not run again at the next frame stored."""


def frames_evict(*, budget: int | None = None) -> Evicted:
    """Keep the stored frames and episode animations within ``MIRRORBENCH_FRAMES_MAX_BYTES``
    (0: no budget).

    Over the budget, the least recently used of the frames (``used``, else when stored) that no
    listed run and not the gallery shows, and of the animations, are deleted (their files; a
    frame's row stays registered and is rendered again if asked for, never by the stale check:
    it keeps ``used``; an animation's row goes, and a request makes it again) until the rest is
    within ``EVICT_TO`` of the budget. Kept frames are never deleted, even if they alone are
    over it (logged).
    """
    budget = settings.MIRRORBENCH_FRAMES_MAX_BYTES if budget is None else budget
    total = frames_stored_bytes() + animations_stored_bytes()
    result = Evicted(stored_bytes=total)
    if not budget or total <= budget:
        return result
    goal = total - int(budget * EVICT_TO)
    kept = frames_kept_keys()
    chosen: list[str] = []
    animations: list[str] = []
    freed = 0
    frames = (
        (last, key, (png or 0) + (webp or 0) + (thumb or 0), False)
        for last, key, png, webp, thumb in Frame.objects.filter(stored__isnull=False)
        .annotate(last=Coalesce("used", "stored"))
        .order_by("last", "key")
        .values_list("last", "key", "png_bytes", "webp_bytes", "thumb_bytes")
        .iterator(chunk_size=2000)
        if key not in kept
    )
    stored_animations = (
        (used, path, size, True)
        for used, path, size in Animation.objects.order_by("used", "path")
        .values_list("used", "path", "size_bytes")
        .iterator(chunk_size=2000)
    )
    for _, name, size, animation in heapq.merge(frames, stored_animations):
        (animations if animation else chosen).append(name)
        freed += size
        if freed >= goal:
            break
    for start in range(0, len(chosen), 500):
        batch = chosen[start : start + 500]
        # The row first: a request from now on renders the frame again, never serves a
        # half-deleted one.
        # ``used`` stays: it tells an evicted frame from one never made (runs_frames_requeue).
        Frame.objects.filter(pk__in=batch).update(
            stored=None, png_bytes=None, webp_bytes=None, thumb_bytes=None
        )
        for key in batch:
            for variant in FRAME_VARIANTS:
                try:
                    default_storage.delete(frame_path(key, variant))
                except OSError as exc:
                    logger.warning("frame %s: could not delete its %s: %s", key, variant, exc)
    for start in range(0, len(animations), 500):
        batch = animations[start : start + 500]
        Animation.objects.filter(pk__in=batch).delete()  # the row first, as for frames
        for path in batch:
            try:
                default_storage.delete(path)
            except OSError as exc:
                logger.warning("animation %s: could not delete it: %s", path, exc)
    result.frames, result.animations, result.bytes = len(chosen), len(animations), freed
    result.stored_bytes = total - freed
    if result.stored_bytes > budget:
        logger.warning(
            "frames: %d bytes stored after evicting %d frames, over the budget of %d bytes: "
            "the gallery's and listed runs' frames alone are more",
            result.stored_bytes,
            result.frames,
            budget,
        )
    return result
