"""API token authentication: ``Authorization: Token <key>`` against the stored SHA-256."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from leaderboard.models import ApiToken
from leaderboard.submissions.tokens import key_hash

LAST_USED_EVERY = timedelta(minutes=1)
"""A token's last use is written at most this often (not on every request)."""


class ApiTokenAuthentication(authentication.TokenAuthentication):
    """DRF's token header, with keys stored hashed and any number of tokens per user."""

    def authenticate_credentials(self, key: str) -> tuple[Any, ApiToken]:
        token = ApiToken.objects.select_related("user").filter(key_hash=key_hash(key)).first()
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token: create one on your profile page.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("This token's user is inactive.")
        now = timezone.now()
        if token.last_used is None or now - token.last_used > LAST_USED_EVERY:
            ApiToken.objects.filter(pk=token.pk).update(last_used=now)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
