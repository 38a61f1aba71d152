"""Who may do what beyond their own things: the one moderator rule.

A moderator is an active staff member with the permission to change submissions (in the admin,
give it to a group, say "Moderators", and put people in it). Moderators review the submission
queue, see any submission and a hosted run's whole endpoint, and may put a run under an entry
that is not theirs. Every check of that goes through ``is_moderator``; templates read it as
``is_moderator`` (the ``roles`` context processor).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

MODERATOR_PERMISSION = "leaderboard.change_submission"


def is_moderator(user: Any) -> bool:
    """Whether ``user`` (a user, an anonymous one, or None) is a moderator."""
    return bool(
        user is not None
        and getattr(user, "is_authenticated", False)
        and user.is_active
        and user.is_staff
        and user.has_perm(MODERATOR_PERMISSION)
    )


def roles(request: HttpRequest) -> dict[str, bool]:
    """Template context: ``is_moderator`` for the signed-in user."""
    return {"is_moderator": is_moderator(getattr(request, "user", None))}
