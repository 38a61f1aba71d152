"""Rows a module's transactional tests share (``tests.leaderboard.snapshots``)."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection

from leaderboard.models import ModelEntry, Run
from tests.leaderboard.factories import ModelEntryFactory, UserFactory
from tests.leaderboard.snapshots import DatabaseSnapshot

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_rows_come_back_after_a_transactional_test_emptied_the_tables():
    snapshot = DatabaseSnapshot[dict[str, int]]()
    made = []

    def make() -> dict[str, int]:
        made.append(1)
        entry = ModelEntryFactory(name="kept")
        user = UserFactory(username="alice", permissions=["leaderboard.add_run"])
        return {"entry": entry.pk, "user": user.pk}

    first = snapshot.rows(make)
    try:
        call_command("flush", "--noinput")  # what the end of a transactional test does
        assert not ModelEntry.objects.exists()
        # Emptying the tables made the content types again under new ids; this caches them.
        ContentType.objects.get_for_model(Run)
        assert snapshot.rows(make) == first
        assert made == ([1] if connection.vendor == "sqlite" else [1, 1])
        assert ModelEntry.objects.get(pk=first["entry"]).name == "kept"
        # The content types are the copy's again, in the table and in the cache.
        kind = ContentType.objects.get_for_model(Run)
        assert ContentType.objects.filter(pk=kind.pk).exists()
        permission = Permission.objects.get(content_type=kind, codename="add_run")
        alice = get_user_model().objects.get(pk=first["user"])
        assert permission in alice.user_permissions.all()
        assert alice.has_perm("leaderboard.add_run")
    finally:
        snapshot.close()


def test_what_a_test_changes_is_gone_for_the_next_one():
    snapshot = DatabaseSnapshot[int]()
    pk = snapshot.rows(lambda: ModelEntryFactory(name="kept").pk)
    try:
        ModelEntry.objects.filter(pk=pk).update(name="changed")
        ModelEntryFactory(name="added")
        call_command("flush", "--noinput")
        snapshot.rows(lambda: ModelEntryFactory(name="kept").pk)
        assert list(ModelEntry.objects.values_list("name", flat=True)) == ["kept"]
    finally:
        snapshot.close()
