"""Writes: API tokens. A key is shown once; only its SHA-256 is stored."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from leaderboard.errors import FieldError
from leaderboard.models import ApiToken

KEY_BYTES = 32
MAX_TOKENS_PER_USER = 20


def key_hash(key: str) -> str:
    """Return the stored form of a key."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class NewToken:
    token: ApiToken
    key: str
    """The key itself: shown to its user once, never stored."""


def api_token_create(*, user: Any, name: str) -> NewToken:
    """Create an API token for ``user``; raise FieldError for a bad name or too many tokens."""
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise FieldError("name", "expected a name of 1 to 100 characters, e.g. 'laptop' or 'CI'")
    if ApiToken.objects.filter(user=user).count() >= MAX_TOKENS_PER_USER:
        raise FieldError(
            "name", f"you have {MAX_TOKENS_PER_USER} tokens, the most allowed: revoke one first"
        )
    key = "mb_" + secrets.token_urlsafe(KEY_BYTES)
    token = ApiToken.objects.create(user=user, name=name, prefix=key[:10], key_hash=key_hash(key))
    return NewToken(token, key)


def api_token_revoke(*, user: Any, token_id: int) -> bool:
    """Delete one of ``user``'s tokens; return whether there was one to delete."""
    deleted, _ = ApiToken.objects.filter(user=user, pk=token_id).delete()
    return deleted > 0
