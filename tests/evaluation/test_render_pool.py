"""The render pool: a few persistent renderers shared by every episode, each frame made once."""

import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from PIL import Image

from evaluation.render_pool import RenderPool, _Job
from simulation.catalogue import get_scene
from simulation.mujoco_backend import MujocoRenderer

HUMAN = get_scene("male_0-mano_white-splash")
ROBOT = get_scene("tienkung-allegro-logo_0")
OTHER = get_scene("female_1-mano_purple-leaf_1")


def decode(png: bytes) -> np.ndarray:
    import io

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


class CountingRenderer:
    """A stand-in renderer that records which thread used it and can be held mid-render."""

    made: list["CountingRenderer"]
    gate: threading.Event | None = None

    def __init__(self, made, gate=None, fail_on=None):
        self.made, self.gate, self.fail_on = made, gate, fail_on
        self.threads: set[int] = set()
        self.loads: list[str] = []
        self.renders = 0
        self.closed_in: int | None = None
        self.cell = (0, 0, 0)
        self.prepared: list[str] = []
        made.append(self)

    version = "counting-1"
    keep_scenes = 4

    def load(self, scene, *, mirror=True):
        self.threads.add(threading.get_ident())
        if not self.loads or self.loads[-1] != scene.id:
            self.loads.append(scene.id)
        self.scene = scene

    def set_hand(self, cell):
        self.cell = cell

    def prepare(self, scene, *, mirror=True):
        self.threads.add(threading.get_ident())
        self.prepared.append(scene.id)

    def render(self, size=64):
        self.threads.add(threading.get_ident())
        if self.gate is not None:
            assert self.gate.wait(10)
        if self.fail_on is not None and self.cell == self.fail_on:
            raise RuntimeError("the renderer broke")
        self.renders += 1
        value = (sum(self.cell) * 17 + len(self.scene.id)) % 256
        return np.full((size, size, 3), value, np.uint8)

    def close(self):
        self.closed_in = threading.get_ident()


def counting_pool(threads=2, **kw):
    made: list[CountingRenderer] = []
    gate = kw.pop("gate", None)
    fail_on = kw.pop("fail_on", None)
    pool = RenderPool(threads, make_renderer=lambda: CountingRenderer(made, gate, fail_on), **kw)
    pool._version = CountingRenderer.version  # no probe renderer in the counts
    return pool, made


def test_the_pool_draws_the_same_pixels_as_a_renderer_of_its_own():
    with RenderPool(2) as pool, MujocoRenderer() as alone:
        for scene, cell in [(HUMAN, (0, 0, 0)), (ROBOT, (1, 0, 0)), (HUMAN, (0, 1, 0))]:
            png, mine = pool.render(scene, cell, 32)
            alone.load(scene)
            alone.set_hand(cell)
            assert mine and np.array_equal(decode(png), alone.render(32))
        assert pool.key(HUMAN, (0, 0, 0), 32) != pool.key(HUMAN, (0, 0, 0), 48)


def test_a_frame_asked_for_by_many_at_once_is_rendered_once():
    gate = threading.Event()
    pool, made = counting_pool(2, gate=gate)
    with pool, ThreadPoolExecutor(8) as callers:
        answers = [callers.submit(pool.render, HUMAN, (1, 2, 0), 16) for _ in range(8)]
        deadline = time.monotonic() + 10
        while pool.stats.shared < 7 and time.monotonic() < deadline:
            time.sleep(0.01)
        gate.set()
        results = [answer.result() for answer in answers]
    assert len({png for png, _ in results}) == 1
    assert sorted(mine for _, mine in results) == [False] * 7 + [True]  # one caller stores it
    assert pool.stats.rendered == 1 and pool.stats.shared == 7
    assert sum(r.renders for r in made) == 1


def test_many_callers_share_a_bounded_number_of_persistent_renderers():
    pool, made = counting_pool(2)
    cells = [(x, y, 0) for x in range(-3, 4) for y in range(-2, 3)]
    with pool, ThreadPoolExecutor(16) as callers:
        list(callers.map(lambda c: pool.render(HUMAN if c[0] % 2 else ROBOT, c, 16), cells))
        list(callers.map(lambda c: pool.render(OTHER, c, 16), cells))
    # Never more renderers than threads, across episodes and scenes (a second thread starts
    # only when frames wait, so a fast stand-in may need just one).
    assert 1 <= len(made) <= 2
    for renderer in made:
        assert len(renderer.threads) == 1  # each used by one thread only (its GL context's)
        assert renderer.closed_in in renderer.threads  # and freed there
    assert pool.stats.rendered == 2 * len(cells)


def test_the_pool_is_busy_only_while_every_render_thread_has_work():
    gate = threading.Event()
    pool, made = counting_pool(2, gate=gate)
    with pool, ThreadPoolExecutor(2) as callers:
        assert not pool.busy  # no thread started yet: room for work
        first = callers.submit(pool.render, HUMAN, (0, 0, 0), 16)
        assert wait_for(lambda: made and made[0].loads)
        assert not pool.busy  # one thread draws, the other is still free
        second = callers.submit(pool.render, ROBOT, (1, 0, 0), 16)
        assert wait_for(lambda: pool.busy)  # both draw
        gate.set()
        first.result(), second.result()
        assert wait_for(lambda: not pool.busy)  # done: both wait for work


def test_frames_in_memory_are_served_without_rendering_and_memory_is_bounded():
    pool, made = counting_pool(1, keep_bytes=400)
    with pool:
        first, _ = pool.render(HUMAN, (0, 0, 0), 16)
        again, mine = pool.render(HUMAN, (0, 0, 0), 16)
        assert again == first and not mine and pool.stats.reused == 1
        for x in range(1, 20):
            pool.render(HUMAN, (x, 0, 0), 16)
        assert pool._png_bytes <= 400 and len(pool._pngs) < 20
        assert pool.cached(pool.key(HUMAN, (0, 0, 0), 16)) is None  # dropped, oldest first
        pool.remember("stored-elsewhere", b"png")
        assert pool.cached("stored-elsewhere") == b"png"
    assert made[0].renders == 20


def test_a_render_error_reaches_every_caller_and_the_pool_goes_on():
    pool, made = counting_pool(1, fail_on=(9, 9, 9))
    with pool:
        with pytest.raises(RuntimeError, match="the renderer broke"):
            pool.render(HUMAN, (9, 9, 9), 16)
        png, mine = pool.render(HUMAN, (0, 0, 0), 16)  # a fresh renderer takes over
        assert mine and png.startswith(b"\x89PNG")
        with pytest.raises(RuntimeError, match="the renderer broke"):
            pool.render(HUMAN, (9, 9, 9), 16)  # errors are not cached as frames
    assert len(made) == 2  # the broken renderer was closed, a new one made for the next
    assert pool.stats.rendered == 1


def test_a_closed_pool_refuses_new_work():
    pool, _ = counting_pool(1)
    pool.render(HUMAN, (0, 0, 0), 16)
    pool.close()
    with pytest.raises(RuntimeError, match="closed"):
        pool.render(HUMAN, (1, 0, 0), 16)
    with pytest.raises(ValueError, match="threads"):
        RenderPool(0)


def job(scene, cell=(0, 0, 0), age=0.0, episode=0, steps_left=0):
    j = _Job("k" + scene.id + str(cell), scene, cell, 16, True, episode, steps_left)
    j.queued -= age
    return j


def test_a_render_thread_takes_its_scenes_and_new_ones_in_order_others_only_when_they_wait():
    pool, _ = counting_pool(2, max_wait_s=1.0)
    robot, human, other = (ROBOT.id, True), (HUMAN.id, True), (OTHER.id, True)
    # Thread 0 keeps the robot and the human scene; thread 1 keeps the other.
    pool._held = [OrderedDict.fromkeys([robot, human]), OrderedDict.fromkeys([other])]
    pool._owner = {robot: 0, human: 0, other: 1}
    theirs = job(OTHER, episode=1, steps_left=30)
    later, earlier = job(HUMAN, episode=5, steps_left=9), job(ROBOT, (1, 0, 0), 0, 2, 4)
    pool._queue = [theirs, later, earlier]
    assert pool._pick(0)[0] is earlier  # the episode begun first, though asked for last
    new = job(get_scene("male_1-mano_white-splash"), episode=3, steps_left=4)
    pool._queue = [theirs, later, new]
    assert pool._pick(0)[0] is new  # a scene nobody has set up, by the same order
    viewer = job(HUMAN, (4, 0, 0))
    pool._queue = [later, viewer, earlier]
    assert pool._pick(0)[0] is viewer  # a frame someone waits for goes before episodes
    pool._queue = [theirs]
    picked, wait = pool._pick(0)
    assert picked is None and 0 < wait <= 1.0  # thread 1's: left to it, for now
    stale = job(OTHER, (2, 0, 0), age=5.0, episode=9, steps_left=1)
    pool._queue = [stale]
    assert pool._pick(0)[0] is stale  # waited too long: taken by whoever is free
    first = job(OTHER, (3, 0, 0), age=5.0, episode=1, steps_left=30)
    pool._queue = [first, later]
    assert pool._pick(0)[0] is later  # not by a thread with work of its own, though it ranks first
    pool.close()


def test_once_every_expected_episode_has_begun_the_longest_go_first():
    pool, _ = counting_pool(1)
    fewer, more = job(HUMAN, episode=1, steps_left=3), job(ROBOT, episode=2, steps_left=9)
    with pool:
        pool._queue = [fewer, more]
        assert pool._pick(0)[0] is fewer  # not told what comes: the one begun first
        pool.expect([HUMAN, ROBOT, ROBOT])
        with pool.scene_open(HUMAN), pool.scene_open(ROBOT):
            assert pool._pick(0)[0] is fewer  # one robot episode still to begin
            with pool.scene_open(ROBOT):
                assert pool._pick(0)[0] is more  # all begun: the longest chain first
                viewer = job(OTHER)
                pool._queue = [fewer, more, viewer]
                assert pool._pick(0)[0] is viewer  # a viewer still goes before them
        pool._queue = []


def test_episodes_are_numbered_as_they_open_and_a_shared_frame_takes_the_best_place():
    gate = threading.Event()
    pool, made = counting_pool(1, gate=gate)
    opened = (pool.scene_open(ROBOT), pool.scene_open(HUMAN))
    with pool, ThreadPoolExecutor(4) as ask, opened[0] as first, opened[1] as second:
        assert (first, second) == (1, 2)
        blocker = ask.submit(pool.render, ROBOT, (9, 0, 0), 16)
        while not made or made[0].renders or not pool._in_flight:
            time.sleep(0.01)
        late = ask.submit(pool.render, HUMAN, (0, 0, 0), 16, episode=second, steps_left=7)
        while len(pool._queue) < 1:
            time.sleep(0.01)
        assert (pool._queue[0].episode, pool._queue[0].steps_left) == (2, 7)
        also = ask.submit(pool.render, HUMAN, (0, 0, 0), 16, episode=first, steps_left=9)
        while pool.stats.shared < 1:
            time.sleep(0.01)
        assert (pool._queue[0].episode, pool._queue[0].steps_left) == (1, 9)
        shared = ask.submit(pool.render, HUMAN, (0, 0, 0), 16)
        while pool.stats.shared < 2:
            time.sleep(0.01)
        assert pool._queue[0].episode == 0  # the waiting viewer's place, not the episodes'
        gate.set()
        for future in (blocker, late, also, shared):
            future.result(10)


def test_scenes_in_use_stay_set_up_and_unused_ones_are_freed():
    pool, _ = counting_pool(1, keep_scenes=2, keep_models=4, idle_scenes=1)
    scenes = [get_scene(i) for i in ("male_0-mano_white-leaf_0", "male_0-mano_white-leaf_1")]
    with pool, pool.scene_open(HUMAN), pool.scene_open(ROBOT):
        for scene in (HUMAN, ROBOT, *scenes, OTHER):
            pool.render(scene, (0, 0, 0), 16)
        held = list(pool._held[0])
        # Both scenes with an open episode are kept; of the unused ones, only the last used.
        assert held == [(HUMAN.id, True), (ROBOT.id, True), (scenes[1].id, True), (OTHER.id, True)]
    assert pool.stats.loads == 5


def test_a_request_reaches_the_render_thread_that_owns_its_scene():
    # Both threads idle, each owning a scene: a request wakes its scene's thread at once, not
    # whichever thread waited longest (which would leave it for max_wait_s).
    gate = threading.Event()
    pool, made = counting_pool(2, max_wait_s=60.0, gate=gate)
    with pool, ThreadPoolExecutor(2) as ask:
        first = ask.submit(pool.render, ROBOT, (0, 0, 0), 16)
        while not made:
            time.sleep(0.01)
        second = ask.submit(pool.render, HUMAN, (0, 0, 0), 16)
        while len(made) < 2:
            time.sleep(0.01)
        gate.set()
        first.result(10), second.result(10)
        assert set(pool._owner.values()) == {0, 1}
        for scene in (ROBOT, ROBOT, HUMAN, HUMAN, ROBOT):
            cell = (len(made[0].loads) + made[0].renders + made[1].renders, 0, 0)
            pool.render(scene, cell, 16, timeout_s=10)
    assert made[0].renders + made[1].renders == 7


def wait_for(condition, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_idle_render_threads_prepare_the_next_expected_scenes_not_yet_open():
    pool, made = counting_pool(1, prepare_ahead=2)
    fourth = get_scene("male_1-mano_white-splash")
    with pool, pool.scene_open(HUMAN):
        pool.expect([HUMAN, ROBOT, OTHER, fourth])
        pool.render(HUMAN, (0, 0, 0), 16)  # starts the render thread; its frame goes first
        # The open scene is not prepared again; two ahead at most, in the order expected.
        assert wait_for(lambda: made[0].prepared == [ROBOT.id, OTHER.id])
        time.sleep(0.1)
        assert made[0].prepared == [ROBOT.id, OTHER.id]
        with pool.scene_open(ROBOT):  # one of them opens: room for the next
            assert wait_for(lambda: made[0].prepared == [ROBOT.id, OTHER.id, fourth.id])
    assert pool.stats.prepared == 3 and len(made) == 1 and len(made[0].threads) == 1


def test_a_failed_prepare_is_dropped_and_the_episode_loads_as_usual():
    pool, made = counting_pool(1, prepare_ahead=4)
    failing = []

    def prepare(scene, *, mirror=True):
        failing.append(scene.id)
        raise RuntimeError("cannot compile")

    with pool:
        png, mine = pool.render(HUMAN, (0, 0, 0), 16)
        made[0].prepare = prepare
        pool.expect([ROBOT, OTHER])
        assert wait_for(lambda: failing == [ROBOT.id, OTHER.id])
        png, mine = pool.render(ROBOT, (1, 0, 0), 16)  # the episode's own load still works
        assert mine and png.startswith(b"\x89PNG")
    assert pool.stats.prepared == 0
