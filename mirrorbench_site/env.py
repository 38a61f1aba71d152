"""Typed readers for settings that come from environment variables.

Each helper fails loudly, naming the variable, when a value cannot be understood: a typo in a
deployment must stop the process at start-up rather than silently fall back to a default.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ImproperlyConfiguredEnv(ValueError):
    """An environment variable holds a value of the wrong shape."""


def envstr(name: str, default: str) -> str:
    """Return the variable's value, or ``default`` when it is unset."""
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    """Return a boolean: 1/true/yes/on or 0/false/no/off (case-insensitive)."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfiguredEnv(
        f"{name}={raw!r}: expected one of 1/0, true/false, yes/no, on/off"
    )


def envint(name: str, default: int) -> int:
    """Return an integer."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfiguredEnv(f"{name}={raw!r}: expected an integer") from None


def envjson(name: str, default: dict[str, Any]) -> dict[str, Any]:
    """Return a JSON object."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ImproperlyConfiguredEnv(f"{name}: not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ImproperlyConfiguredEnv(f"{name}: expected a JSON object")
    return value


def envlist(name: str, default: list[str]) -> list[str]:
    """Return a comma-separated list, stripped of blanks."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def data_dir(base_dir: Path) -> Path:
    """Return the directory that holds all runtime data (``MIRRORBENCH_DATA_DIR``, or ``var/``)."""
    raw = os.environ.get("MIRRORBENCH_DATA_DIR")
    path = Path(raw).expanduser() if raw else base_dir / "var"
    return path.resolve()


def database_from_url(url: str) -> dict[str, Any]:
    """Return a Django DATABASES entry for ``postgres://user:password@host:port/name`` (or
    ``postgresql://``; ``?sslmode=require`` and other query parameters become options)."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ImproperlyConfiguredEnv(
            f"DATABASE_URL: expected postgres://user:password@host:port/name, got scheme "
            f"{parts.scheme!r}"
        )
    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise ImproperlyConfiguredEnv("DATABASE_URL: the database name is missing")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
        "CONN_MAX_AGE": 60,
        "OPTIONS": dict(parse_qsl(parts.query)),
    }
