"""System checks of the leaderboard's own settings (``manage.py check [--deploy]``)."""

from __future__ import annotations

from typing import Any

from cryptography.fernet import Fernet
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register


@register(Tags.security)
def key_encryption_key_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The hosted runs' API keys are encrypted with a key of their own: a valid Fernet key when
    one is set, and one must be set on an HTTPS deployment (where the site is public)."""
    configured = settings.MIRRORBENCH_KEY_ENCRYPTION_KEY
    if configured:
        try:
            Fernet(configured.encode())
        except ValueError:
            return [
                Error(
                    "MIRRORBENCH_KEY_ENCRYPTION_KEY is not a Fernet key.",
                    hint="Make one with: python -c 'from cryptography.fernet import Fernet; "
                    "print(Fernet.generate_key().decode())'",
                    id="mirrorbench.E001",
                )
            ]
        return []
    if settings.MIRRORBENCH_HTTPS:
        return [
            Error(
                "MIRRORBENCH_HTTPS=1 needs MIRRORBENCH_KEY_ENCRYPTION_KEY: hosted runs' API keys "
                "must not be encrypted with a key derived from the data directory's secret key.",
                hint="Set it from a secret store, apart from the data directory (docs/deploy.md).",
                id="mirrorbench.E002",
            )
        ]
    return []
