"""Shared test set-up: headless rendering, empty caches, rows shared by a class of tests.

The data directory is chosen before this file is read (pytest-django loads the settings
first): `make test` passes a fresh `MIRRORBENCH_DATA_DIR`; a bare `pytest` uses `var/`, where
the test database is its own file (`test-db.sqlite3`) and never the site's. Each pytest-xdist
worker works in a folder of its own inside it (tests/xdist_workers.py).
"""

import gc
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import pytest
from _pytest.nodeid import NodeId
from django.db import transaction

from tests.static_index import share_static_index

Unblock = Callable[[], AbstractContextManager[None]]
"""What ``class_rows`` and ``module_rows`` give: ``with rows(): ...`` may use the database."""

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

# The browser fixtures (chromium driven by Playwright) for every test module that uses them;
# fake renders for the tests of who renders frames (tests/leaderboard/render_fakes.py);
# pytester for the tests of the suite's own helpers (tests/test_parts.py).
pytest_plugins = ["tests.leaderboard.browser", "tests.leaderboard.render_fakes", "pytester"]


def pytest_configure(config: pytest.Config) -> None:
    """Passwords are hashed with MD5 in the suite's own process, as Django's testing guide
    advises: the site's PBKDF2 (a million rounds, about 0.4 s a hash) made every sign-in and
    sign-up of a test pay that price (about a minute of the suite's CPU). Processes a test
    starts (web servers, workers) keep the site's hashers; no test checks which one is used.

    WhiteNoise's table of static files is scanned once per process, not once per test client
    (tests/static_index.py).

    Under ``--dist loadgroup``, pytest-xdist deals the tests out in the order the suite gives
    them (``_deal_order``), not reordered by the size of their groups."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    share_static_index()
    _deal_in_suite_order(config)


def _deal_in_suite_order(config: pytest.Config) -> None:
    """Under ``--dist loadgroup``, turn off pytest-xdist's reordering of the units it deals out
    (by their number of tests), which ``_deal_order`` does itself."""
    if getattr(config.option, "dist", None) == "loadgroup" or getattr(
        config.option, "loadgroup", False
    ):
        config.option.loadscopereorder = False


def pytest_collection_finish(session: pytest.Session) -> None:
    """The garbage collector leaves what collection made (modules, test items: alive until the
    end) out of every later collection. Its thresholds are the site's (``mirrorbench_site``,
    loaded with the settings before collection: the youngest generation after 100,000 new
    objects rather than 700); in the suite's own processes, Django's requests and the ORM made
    it run thousands of times, about 7% of a test process's CPU (2.5 s of 36 s for the API,
    page and runner tests, 0.95 s after), and collecting the tests took 5.7 s of CPU a worker
    instead of 5.0 s. The processes a test starts take the thresholds from the same package."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give each test marked ``xdist_group`` its group's suffix (``test_x@browser``), which
    ``--dist loadgroup`` sends to one worker. pytest-xdist (3.8) appends it by setting
    ``item._nodeid``, which pytest 9.2 no longer reads (a node's id is ``item._id``): every
    group was silently ignored, and its tests spread over the workers. Runs after xdist's own
    hook, and adds nothing where that one worked. Then orders the tests as xdist should deal
    them out (``_deal_order``)."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        _group_shared_rows(item)
        groups = sorted(
            {
                str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                for mark in item.iter_markers("xdist_group")
            }
        )
        if groups and not _grouped(item):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")
    items[:] = _deal_order(items)


def _deal_order(items: list[pytest.Item]) -> list[pytest.Item]:
    """Order the tests as pytest-xdist should deal them out, the tests marked ``waits`` (they
    mostly wait on the processes they start: an outage, a worker, a server) spread over the
    whole run.

    pytest-xdist deals out units, a group whole or a test alone, in this order (its own
    reordering is off: ``_deal_in_suite_order``), each worker taking the next unit whenever two
    or fewer of its tests are left. The groups come first, the largest first, as xdist ordered
    them itself; the waiting tests are spread among the groups and the tests alone in proportion
    to their numbers of tests. Dealt out among the tests alone only, they all started after the
    groups, in the last three quarters of the run, and several waited at once: the two cores
    stood idle for 31 s of a core in a run, 15-20 s so. Grouped tests keep their order within
    their group, the others theirs."""
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(_unit(item), []).append(item)
    groups = sorted((unit for unit in units.values() if _grouped(unit[0])), key=len, reverse=True)
    alone = [unit[0] for unit in units.values() if not _grouped(unit[0])]
    waiting = [item for item in alone if item.get_closest_marker("waits")]
    waits = set(waiting)
    others: list[list[pytest.Item]] = [*groups, *([i] for i in alone if i not in waits)]
    step = sum(len(unit) for unit in others) / (len(waiting) + 1)
    order: list[pytest.Item] = []
    placed = dealt = 0
    for unit in others:
        order += unit
        dealt += len(unit)
        while placed < len(waiting) and dealt >= (placed + 1) * step:
            order.append(waiting[placed])
            placed += 1
    return order + waiting[placed:]


def _unit(item: pytest.Item) -> str:
    """What pytest-xdist deals out ``item`` with: its group (``--dist loadgroup``) or itself."""
    return item.nodeid.rpartition("@")[2] if _grouped(item) else item.nodeid


def _grouped(item: pytest.Item) -> bool:
    """Whether ``item`` belongs to an xdist group (its id ends ``@group``)."""
    return "@" in item.nodeid.rpartition("::")[2]


SHARED_ROWS = {"class_rows": "class", "module_rows": "module", "module_snapshot": "module"}
"""The fixtures whose rows a class or a module of tests shares, and that scope."""


def _group_shared_rows(item: pytest.Item) -> None:
    """Send the tests that share a class's or a module's rows to one worker (an
    ``xdist_group`` of their own), so that the rows are made once, not once on every worker
    that runs one of them: ``--dist loadgroup`` spreads the other tests one by one. A test
    already in a group (the browser's) stays there."""
    if item.get_closest_marker("xdist_group"):
        return
    names = getattr(item, "fixturenames", ())
    scopes = {SHARED_ROWS[name] for name in names if name in SHARED_ROWS}
    if not scopes:
        return
    module = item.nodeid.split("::", 1)[0].removesuffix(".py").replace("/", ".")
    cls = getattr(item, "cls", None)
    if "class" in scopes and "module" not in scopes and cls is not None:
        module = f"{module}.{cls.__name__}"
    item.add_marker(pytest.mark.xdist_group(f"rows-{module}"))


@pytest.fixture(autouse=True)
def _empty_cache():
    """Each test starts with no throttle counts and no cached tables: the caches are folders
    shared by the suite, and a flushed database may repeat a data version."""
    from django.core.cache import caches

    from leaderboard.data_version import data_version_cache_clear

    def clear() -> None:
        for alias in ("default", "limits"):
            caches[alias].clear()
        data_version_cache_clear()

    clear()
    yield
    clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Once a test's body is done, and before its fixtures are undone (its render pool, its
    media folder), wait for the frames its play prefetched: their files would otherwise land
    in the next test's media folder."""
    try:
        return (yield)
    finally:
        services = sys.modules.get("leaderboard.frames.services")
        if services is not None:
            assert services.frames_prefetch_wait(60), "prefetching still running a minute on"


def _rows_kept_for_the_scope(django_db_blocker) -> Iterator[Unblock]:
    """Open a transaction that outlives the tests of a scope; roll it back when it ends.

    Rows made inside it (``with rows(): ...``) are there for every test of the scope, as with
    Django's ``setUpTestData``: each test runs in a savepoint of it (pytest-django's ``db``), so
    what a test writes is undone before the next one, and nothing is left for other scopes.
    The database is open only while the rows are made and removed: a test still needs ``db``.
    """
    with django_db_blocker.unblock():
        block = transaction.atomic()
        block.__enter__()
    try:
        yield django_db_blocker.unblock
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            block.__exit__(None, None, None)


@pytest.fixture(scope="class")
def class_rows(django_db_setup, django_db_blocker) -> Iterator[Unblock]:
    """Rows that every test of a class reads, made once for the class (not before each test):
    a class-scoped fixture makes them ``with class_rows(): ...``. Once made, every later test
    of the class sees them, so every test of the class should ask for that fixture."""
    yield from _rows_kept_for_the_scope(django_db_blocker)


@pytest.fixture(scope="module")
def module_rows(django_db_setup, django_db_blocker) -> Iterator[Unblock]:
    """Rows that every test of a module reads, made once for the module: a module-scoped
    fixture makes them ``with module_rows(): ...``. Every later test of the module sees them."""
    yield from _rows_kept_for_the_scope(django_db_blocker)
