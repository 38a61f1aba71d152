"""Reads: the releases kept in storage, their manifests and their files.

A release lives under ``releases/<version>/`` in the site's storage (local files, or the S3
bucket when one is configured); its ``manifest.json`` is written last, so a release without one
is not finished and is not listed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from django.core.files.storage import default_storage

RELEASES_DIR = "releases"
MANIFEST_FILE = "manifest.json"
SUMS_FILE = "SHA256SUMS"
VERSION_PATTERN = re.compile(r"^[0-9]+(\.[0-9]+){0,2}$")
"""A release version: one to three whole numbers joined by dots (``1``, ``1.0``, ``2024.1.3``)."""


class UnknownRelease(LookupError):
    """No finished release of that version, or no such file in it."""


@dataclass(frozen=True)
class Release:
    version: str
    manifest: dict[str, Any]

    @property
    def files(self) -> list[dict[str, Any]]:
        """Each file of the release: ``path``, ``bytes``, ``sha256``."""
        return list(self.manifest.get("files", []))

    @property
    def total_bytes(self) -> int:
        return sum(int(f["bytes"]) for f in self.files)


def release_path(version: str, name: str = "") -> str:
    """Return the storage path of ``name`` in release ``version`` (its folder without a name)."""
    return f"{RELEASES_DIR}/{version}/{name}" if name else f"{RELEASES_DIR}/{version}"


def release_exists(*, version: str) -> bool:
    """Whether anything of release ``version`` is stored, finished or not."""
    folder = release_path(version)
    if default_storage.exists(release_path(version, MANIFEST_FILE)):
        return True
    try:
        folders, files = default_storage.listdir(folder)
    except (FileNotFoundError, OSError):
        return False
    return bool(folders or files)


def release_detail(*, version: str) -> Release:
    """Return release ``version`` (raises ``UnknownRelease`` when it is not finished)."""
    if not VERSION_PATTERN.match(version):
        raise UnknownRelease(f"no release {version!r}")
    path = release_path(version, MANIFEST_FILE)
    if not default_storage.exists(path):
        raise UnknownRelease(f"no release {version!r}")
    with default_storage.open(path, "rb") as handle:
        return Release(version=version, manifest=json.loads(handle.read()))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def release_list() -> list[Release]:
    """Return the finished releases, newest version first."""
    try:
        folders, _ = default_storage.listdir(RELEASES_DIR)
    except (FileNotFoundError, OSError):
        return []
    releases = []
    for version in sorted(
        (v for v in folders if VERSION_PATTERN.match(v)), key=_version_key, reverse=True
    ):
        try:
            releases.append(release_detail(version=version))
        except UnknownRelease:
            continue  # being written
    return releases


def release_file_path(*, release: Release, name: str) -> str:
    """Return the storage path of file ``name`` of ``release``: one its manifest lists, the
    manifest itself or its checksum list (raises ``UnknownRelease`` for any other)."""
    listed = {f["path"] for f in release.files} | {MANIFEST_FILE, SUMS_FILE}
    if name not in listed:
        raise UnknownRelease(f"release {release.version} has no file {name!r}")
    return release_path(release.version, name)
