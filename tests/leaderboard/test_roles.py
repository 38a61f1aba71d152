"""The one moderator rule (leaderboard.accounts.roles): active staff who may change submissions."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, Group, Permission

from leaderboard.accounts.roles import is_moderator

pytestmark = pytest.mark.django_db


def test_a_moderator_is_active_staff_with_the_submission_permission(django_user_model):
    user = django_user_model.objects.create_user("mod", password="pw-pw-pw-pw")
    assert not is_moderator(user)
    user.user_permissions.add(Permission.objects.get(codename="change_submission"))
    user = django_user_model.objects.get(pk=user.pk)  # permissions are cached per instance
    assert not is_moderator(user)  # not staff
    user.is_staff = True
    user.save()
    assert is_moderator(django_user_model.objects.get(pk=user.pk))
    user.is_active = False
    user.save()
    assert not is_moderator(django_user_model.objects.get(pk=user.pk))
    assert not is_moderator(AnonymousUser()) and not is_moderator(None)


def test_staff_with_other_permissions_only_is_no_moderator(django_user_model):
    user = django_user_model.objects.create_user("staff", password="pw-pw-pw-pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="change_modelentry"))
    assert not is_moderator(django_user_model.objects.get(pk=user.pk))


def test_a_moderators_group_makes_moderators_and_the_header_shows_the_queue(
    client, django_user_model
):
    group = Group.objects.create(name="Moderators")
    group.permissions.add(Permission.objects.get(codename="change_submission"))
    user = django_user_model.objects.create_user("mod", password="pw-pw-pw-pw", is_staff=True)
    user.groups.add(group)
    client.force_login(user)
    header = client.get("/").content.decode().split("</header>")[0]
    assert 'href="/moderation/"' in header
    assert client.get("/moderation/").status_code == 200
    user.groups.clear()
    header = client.get("/").content.decode().split("</header>")[0]
    assert 'href="/moderation/"' not in header
    assert client.get("/moderation/").status_code == 403
