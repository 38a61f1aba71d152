"""Encryption at rest for the API keys of hosted runs (Fernet: AES-128-CBC with HMAC).

The encryption key comes from ``MIRRORBENCH_KEY_ENCRYPTION_KEY`` (a Fernet key) or, when it is
unset, is derived from ``DJANGO_SECRET_KEY`` (not on an HTTPS deployment: there the system
check ``mirrorbench.E002`` stops the server, and ``encrypt`` refuses). Keys are decrypted only
by the worker that calls the provider, and erased when their run ends.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


class KeyEncryptionKeyMissing(RuntimeError):
    """An HTTPS deployment without MIRRORBENCH_KEY_ENCRYPTION_KEY cannot store API keys."""


def _fernet() -> Fernet:
    configured = settings.MIRRORBENCH_KEY_ENCRYPTION_KEY
    if configured:
        return Fernet(configured.encode())
    if settings.MIRRORBENCH_HTTPS:
        raise KeyEncryptionKeyMissing(
            "hosted runs are off on this server until its administrator sets "
            "MIRRORBENCH_KEY_ENCRYPTION_KEY"
        )
    digest = hashlib.sha256(f"mirrorbench-api-keys|{settings.SECRET_KEY}".encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def encrypt(text: str) -> bytes:
    """Return ``text`` encrypted."""
    return _fernet().encrypt(text.encode())


def decrypt(token: bytes) -> str:
    """Return the decrypted text; raise ValueError when the token was not made with our key."""
    try:
        return _fernet().decrypt(bytes(token)).decode()
    except InvalidToken:
        raise ValueError("the stored API key cannot be decrypted with this server's key") from None
