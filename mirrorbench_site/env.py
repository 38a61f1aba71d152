"""Typed readers for settings that come from environment variables.

Each helper fails loudly, naming the variable, when a value cannot be understood: a typo in a
deployment must stop the process at start-up rather than silently fall back to a default.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from pathlib import Path
from typing import Any

import dj_database_url

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


def envint(name: str, default: int, *, minimum: int | None = None) -> int:
    """Return an integer, no smaller than ``minimum`` when one is given."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfiguredEnv(f"{name}={raw!r}: expected an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfiguredEnv(f"{name}={raw!r}: expected an integer >= {minimum}")
    return value


def envfloat(name: str, default: float, *, minimum: float, maximum: float) -> float:
    """Return a number from ``minimum`` to ``maximum``."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfiguredEnv(f"{name}={raw!r}: expected a number") from None
    if not minimum <= value <= maximum:
        raise ImproperlyConfiguredEnv(
            f"{name}={raw!r}: expected a number from {minimum:g} to {maximum:g}"
        )
    return value


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


TrustedProxies = int | tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
"""How many proxies stand in front of the site, or their addresses (see ``client_ip``)."""


def parse_trusted_proxies(name: str, raw: str) -> TrustedProxies:
    """Return a count of proxies (``"1"``), or their addresses and networks, comma-separated
    (``"10.0.0.0/8, 192.0.2.7, fd00::/8"``); 0 for none (empty, unset, ``"0"``)."""
    raw = raw.strip()
    if not raw:
        return 0
    try:
        count = int(raw)
    except ValueError:
        pass
    else:
        if count < 0:
            raise ImproperlyConfiguredEnv(f"{name}={raw!r}: a count of proxies must be >= 0")
        return count
    networks = []
    for item in raw.split(","):
        try:
            networks.append(ipaddress.ip_network(item.strip(), strict=False))
        except ValueError:
            raise ImproperlyConfiguredEnv(
                f"{name}={raw!r}: expected a count of proxies (1), or their addresses or "
                f"networks, comma-separated (10.0.0.0/8, 192.0.2.7); {item.strip()!r} is neither"
            ) from None
    return tuple(networks)


def envproxies(name: str) -> TrustedProxies:
    """Return ``parse_trusted_proxies`` of the variable (0 when it is unset)."""
    return parse_trusted_proxies(name, os.environ.get(name, ""))


def data_dir(base_dir: Path) -> Path:
    """Return the directory that holds all runtime data (``MIRRORBENCH_DATA_DIR``, or ``var/``)."""
    raw = os.environ.get("MIRRORBENCH_DATA_DIR")
    path = Path(raw).expanduser() if raw else base_dir / "var"
    return path.resolve()


def envdatabase(name: str, default: dict[str, Any]) -> dict[str, Any]:
    """Return a Django ``DATABASES`` entry for a PostgreSQL URL, or ``default`` when unset.

    The URL is ``postgres://user:password@host:port/name`` (or ``postgresql://``), parsed by
    dj-database-url; query parameters such as ``?sslmode=require`` become connection options.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    # Messages never echo the URL back: it may hold a password.
    expected = "expected postgres://user:password@host:port/name"
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", raw)
    if scheme is None:
        raise ImproperlyConfiguredEnv(f"{name}: {expected}, got no scheme")
    if scheme[1].lower() not in ("postgres", "postgresql"):
        raise ImproperlyConfiguredEnv(f"{name}: {expected}, got scheme {scheme[1]!r}")
    try:
        # Connections are kept a minute, and checked before each request or task reuses one:
        # after a restart or fail-over of the server, a dead connection is replaced instead of
        # failing the first query of every process that held one.
        entry = dict(dj_database_url.parse(raw, conn_max_age=60, conn_health_checks=True))
    except ValueError as exc:
        raise ImproperlyConfiguredEnv(f"{name}: {expected} ({exc})") from None
    if not entry.get("NAME"):
        raise ImproperlyConfiguredEnv(f"{name}: {expected}; the database name is missing")
    return entry
