"""Pages of releases: the list, each file, and a release as one zip."""

from __future__ import annotations

import mimetypes
import zipfile
from io import BytesIO

from django.conf import settings
from django.core.files.storage import default_storage
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponseRedirect,
)
from django.shortcuts import render
from django.views.decorators.http import require_GET

from leaderboard.releases.selectors import (
    MANIFEST_FILE,
    SUMS_FILE,
    Release,
    UnknownRelease,
    release_detail,
    release_file_path,
    release_list,
    release_path,
)

IMMUTABLE = "public, max-age=31536000, immutable"
"""A release never changes: its files may be kept for good."""
ZIP_DATE = (2026, 1, 1, 0, 0, 0)
"""Every member's time in a release's zip: the same release, the same bytes."""


def _release(version: str) -> Release:
    try:
        return release_detail(version=version)
    except UnknownRelease as exc:
        raise Http404(str(exc)) from None


@require_GET
def releases_page(request: HttpRequest) -> HttpResponse:
    releases = release_list()
    context = {"releases": releases, "latest": releases[0] if releases else None}
    return render(request, "leaderboard/releases.html", context)


@require_GET
def release_file(request: HttpRequest, version: str, name: str) -> HttpResponseBase:
    """One file of a release, as its manifest lists it (or the manifest, or ``SHA256SUMS``)."""
    release = _release(version)
    try:
        path = release_file_path(release=release, name=name)
    except UnknownRelease as exc:
        raise Http404(str(exc)) from None
    if settings.S3_BUCKET:
        return HttpResponseRedirect(default_storage.url(path))
    content_type = (
        "text/plain; charset=utf-8"
        if name in (SUMS_FILE,) or name.endswith((".md", ".csv"))
        else mimetypes.guess_type(name)[0] or "application/octet-stream"
    )
    served = FileResponse(default_storage.open(path, "rb"), content_type=content_type)
    served["Cache-Control"] = IMMUTABLE
    return served


def release_zip_bytes(release: Release) -> bytes:
    """Return every file of ``release`` (its manifest and ``SHA256SUMS`` too) in one zip, under
    a folder ``mirrorbench-release-<version>/``."""
    folder = f"mirrorbench-release-{release.version}"
    buffer = BytesIO()
    names = [f["path"] for f in release.files] + [SUMS_FILE, MANIFEST_FILE]
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in names:
            with default_storage.open(release_path(release.version, name), "rb") as handle:
                member = zipfile.ZipInfo(f"{folder}/{name}", date_time=ZIP_DATE)
                member.external_attr = 0o644 << 16
                member.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(member, handle.read())
    return buffer.getvalue()


@require_GET
def release_zip(request: HttpRequest, version: str) -> HttpResponse:
    """``/releases/<version>.zip``: the whole release in one download."""
    release = _release(version)
    response = HttpResponse(release_zip_bytes(release), content_type="application/zip")
    response["Content-Disposition"] = (
        f'attachment; filename="mirrorbench-release-{release.version}.zip"'
    )
    response["Cache-Control"] = IMMUTABLE
    return response
