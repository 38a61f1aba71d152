"""Reads: a user's submissions and tokens, the moderators' queue."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from leaderboard.models import ApiToken, Submission


def is_moderator(user: Any) -> bool:
    """Moderators are staff with the permission to change submissions."""
    return bool(
        getattr(user, "is_authenticated", False)
        and user.is_staff
        and user.has_perm("leaderboard.change_submission")
    )


def user_tokens(*, user: Any) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("-created")


def user_submissions(*, user: Any) -> QuerySet[Submission]:
    return Submission.objects.filter(owner=user).select_related("run").order_by("-created")


def submission_visible(*, submission_id: int, user: Any) -> Submission:
    """Return a submission its owner or a moderator may see (Submission.DoesNotExist else)."""
    submissions = Submission.objects.select_related("run", "run__model_entry", "owner")
    if not is_moderator(user):
        submissions = submissions.filter(owner_id=getattr(user, "pk", None))
    return submissions.get(pk=submission_id)


def moderation_queue() -> QuerySet[Submission]:
    """Submissions waiting for a moderator first, then the rest, newest first."""
    return (
        Submission.objects.select_related("run", "owner")
        .order_by("-review", "-created")
        .exclude(review=Submission.Review.DRAFT)
    )
