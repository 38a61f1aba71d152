"""Writes: accounts, whose user names no two people can tell apart (``leaderboard.accounts.names``).

Every saved user has an ``AccountName`` row with its name's key and skeletons, kept by
``account_name_record`` (connected to the user model's ``post_save`` in ``apps.py``, so
accounts made by ``createsuperuser`` or the admin are compared with too). Sign-up refuses a
name whose key or either skeleton another account has; the unique columns refuse the second of two
look-alike sign-ups at once.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Q

from leaderboard.accounts.names import NameRefused, name_check, name_key, name_skeletons
from leaderboard.errors import FieldError
from leaderboard.models import AccountName

USERNAME_MAX_LENGTH = 150


def account_name_record(*, user: Any) -> AccountName:
    """Store the key and skeleton of ``user``'s name; return the row.

    A value another account already has is left empty: administrators are not refused (the
    older account keeps it, and sign-up compares with that one).
    """
    key = name_key(user.username)
    skeleton, folded = name_skeletons(user.username)  # None: too long to index (admin only)
    row = AccountName.objects.filter(user=user).first()
    if row is not None and (row.key, row.skeleton, row.skeleton_folded) == (key, skeleton, folded):
        return row
    others = AccountName.objects.exclude(user=user)
    row = row or AccountName(user=user)
    row.key = None if others.filter(key=key).exists() else key
    row.skeleton = None if others.filter(skeleton=skeleton).exists() else skeleton
    row.skeleton_folded = None if others.filter(skeleton_folded=folded).exists() else folded
    row.save()
    return row


def username_check(*, username: str) -> str:
    """Return a new account's user name in its display form (NFKC, as Django stores it).

    Raises:
        FieldError: For ``username``: it holds what nobody can see, or another account has it
            (without case) or a name that looks like it.
    """
    try:
        clean = name_check(username, max_length=USERNAME_MAX_LENGTH)
    except NameRefused as exc:
        raise FieldError("username", str(exc)) from None
    if (
        AccountName.objects.filter(key=name_key(clean)).exists()
        or get_user_model().objects.filter(username=clean).exists()
    ):
        raise FieldError("username", "this user name is taken")
    skeleton, folded = name_skeletons(clean)
    alike = Q(skeleton=skeleton) | Q(skeleton_folded=folded)
    other = AccountName.objects.filter(alike).select_related("user").first()
    if other is not None:
        raise FieldError(
            "username",
            f"{clean!r} looks like {other.user.get_username()!r}, the name of an existing "
            "account: names that look the same are the same name; choose another",
        )
    return clean


def account_create(*, username: str, email: str, password: str) -> Any:
    """Create an account (sign-up) and return the user.

    Raises:
        FieldError: For ``username``, as ``username_check``; also when another sign-up took
            the name or a look-alike a moment ago (nothing is written then).
    """
    clean = username_check(username=username)
    taken = FieldError(
        "username",
        f"an account named {clean!r}, or one that looks like it, was created a moment ago: "
        "choose another name",
    )
    try:
        with transaction.atomic():
            user = get_user_model().objects.create_user(
                username=clean, email=email, password=password
            )
            row = AccountName.objects.get(user=user)  # the post_save receiver stored it
            if None in (row.key, row.skeleton, row.skeleton_folded):
                raise taken  # rolls the account back
    except IntegrityError:
        raise taken from None
    return user


def user_saved(sender: Any, instance: Any, raw: bool = False, **kwargs: Any) -> None:
    """``post_save`` receiver of the user model: keep its ``AccountName`` in step."""
    fields = kwargs.get("update_fields")
    if raw or (fields is not None and "username" not in fields):
        return  # a fixture being loaded, or a save of other fields (the last login)
    account_name_record(user=instance)
