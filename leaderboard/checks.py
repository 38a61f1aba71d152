"""System checks of the leaderboard's own settings (``manage.py check [--deploy]``)."""

from __future__ import annotations

from typing import Any

from cryptography.fernet import Fernet
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register


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


@register(Tags.security, deploy=True)
def trusted_proxies_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """An HTTPS deployment stands behind a proxy: without MIRRORBENCH_TRUSTED_PROXIES every
    visitor has the proxy's address, and shares one address's limits with everybody."""
    if settings.MIRRORBENCH_HTTPS and not settings.MIRRORBENCH_TRUSTED_PROXIES:
        return [
            Warning(
                "MIRRORBENCH_HTTPS=1 without MIRRORBENCH_TRUSTED_PROXIES: every visitor counts "
                "as the proxy's address, for the sign-in lockout, the throttles and sign-ups.",
                hint="Set MIRRORBENCH_TRUSTED_PROXIES to the number of proxies in front of the "
                "site, or to their addresses (docs/deploy.md, HTTPS).",
                id="mirrorbench.W001",
            )
        ]
    return []


# Backends that never send: the console one writes each message to the process's output, which
# on a served site is its log; the file one to files on the server; the memory one keeps it.
# Password-reset mail holds a link that sets the account's password, so none of them may serve a
# public (HTTPS) site. Django's dummy backend drops mail without keeping it anywhere.
UNSENT_MAIL_BACKENDS = {
    "django.core.mail.backends.console.EmailBackend": "writes every message, password-reset "
    "links included, to the process's output: the log",
    "django.core.mail.backends.filebased.EmailBackend": "writes every message, password-reset "
    "links included, to files on the server",
    "django.core.mail.backends.locmem.EmailBackend": "keeps every message in memory and sends none",
}


@register(Tags.security, deploy=True)
def mail_backend_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """An HTTPS deployment sends its mail: password-reset links never go to a log or a file.

    A deployment check, and ``manage.py serve`` runs the deployment checks before it starts
    anything when ``MIRRORBENCH_HTTPS=1``."""
    what = UNSENT_MAIL_BACKENDS.get(settings.EMAIL_BACKEND)
    if settings.MIRRORBENCH_HTTPS and what:
        return [
            Error(
                f"MIRRORBENCH_HTTPS=1 with DJANGO_EMAIL_BACKEND={settings.EMAIL_BACKEND}, "
                f"which {what}.",
                hint="Set DJANGO_EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend and "
                "DJANGO_EMAIL_HOST (and its user, password, port, TLS) to a mail server "
                "(docs/deploy.md).",
                id="mirrorbench.E003",
            )
        ]
    return []
