"""Shared leaderboard fixtures: the named users, seeded factories, real bundles written once.

The users are the ones every permission test talks about (healthchecks' ``hc/test.py`` has
alice, bob and charlie):

- ``alice`` owns runs and may start hosted ones (``leaderboard.add_run``);
- ``bob`` may start hosted runs too, but does not own alice's;
- ``charlie`` is a signed-in outsider without any permission;
- ``moderator`` is staff with every ``leaderboard.change_*`` permission (the admin).
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import factory.random
import pytest
from _pytest.nodeid import NodeId
from django.contrib.auth.models import Permission
from schemathesis.pytest.plugin import SchemathesisFunction

from tests.leaderboard.factories import UserFactory, make_bundle
from tests.leaderboard.snapshots import DatabaseSnapshot


def pytest_itemcollected(item: pytest.Item) -> None:
    """Name each schemathesis case by its operation in its node id (``test_x[GET /api/]``).

    pytest 9.2 builds a test's node id from its ``originalname`` and parametrization, which
    schemathesis (4.32) leaves out: every operation of a test had the one id ``test_x``, and
    pytest-xdist's ``--dist loadgroup`` (``make test``), which hands tests to workers by node
    id, ran the first operation of each test and none of the others. The id is set from the
    item's name, which holds the operation.
    """
    if isinstance(item, SchemathesisFunction) and item.parent is not None:
        wanted = f"{item.parent.nodeid}::{item.name}"
        if item.nodeid != wanted:
            item._id = NodeId.parse(wanted)


@pytest.fixture(autouse=True)
def _seeded_factories():
    """The factories' fuzzy values and fake names are the same on every run."""
    factory.random.reseed_random("mirrorbench")


@pytest.fixture
def alice(db):
    """The owner: she starts hosted runs and owns them."""
    return UserFactory(username="alice", permissions=["leaderboard.add_run"])


@pytest.fixture
def bob(db):
    """A collaborator: he may start hosted runs as alice may, but her runs are not his."""
    return UserFactory(username="bob", permissions=["leaderboard.add_run"])


@pytest.fixture
def charlie(db):
    """An outsider: signed in, without any permission."""
    return UserFactory(username="charlie")


@pytest.fixture
def moderator(db):
    """Staff who may change every leaderboard row through the admin (not a superuser)."""
    change = Permission.objects.filter(
        content_type__app_label="leaderboard", codename__startswith="change_"
    ).values_list("codename", flat=True)
    return UserFactory(
        username="moderator", is_staff=True, permissions=[f"leaderboard.{c}" for c in change]
    )


@pytest.fixture(scope="module")
def module_snapshot() -> Iterator[DatabaseSnapshot[Any]]:
    """The rows a module's transactional tests share (those of the live server): made by its
    first test, put back before each later one (``DatabaseSnapshot.rows``). Tests inside a
    transaction keep a module's rows with ``module_rows`` (``tests/conftest.py``) instead."""
    snapshot: DatabaseSnapshot[Any] = DatabaseSnapshot()
    yield snapshot
    snapshot.close()


@pytest.fixture(scope="session")
def bundles(tmp_path_factory) -> dict[str, Path]:
    """Full 264-episode bundles of the random, oracle and mirror-confused baselines."""
    folder = tmp_path_factory.mktemp("bundles")
    return {
        name: make_bundle(folder / f"{name}.jsonl", name)
        for name in ("random", "oracle", "mirror-confused")
    }


@pytest.fixture
def s3_server():
    """A real S3-compatible server (moto) on loopback; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
