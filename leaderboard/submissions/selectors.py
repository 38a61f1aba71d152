"""Reads: a user's submissions and tokens, the moderators' queue."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from leaderboard.accounts.roles import is_moderator
from leaderboard.models import ApiToken, Submission


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
