"""Writes: a release, an immutable snapshot of everything behind the board.

``release_create`` writes, under ``releases/<version>/`` in the site's storage: every table as
CSV and parquet, every listed run's bundle and details, the protocol and scene-set versions,
``runs.json`` (which run is which model), a changelog entry, ``SHA256SUMS`` (checked with
``sha256sum -c SHA256SUMS``) and, last, ``manifest.json`` (every file with its size and SHA-256).
Nothing in it depends on the moment it is written: the same data give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pandas as pd
import pyarrow as pa
from django.contrib.auth.models import AnonymousUser
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db.models import Max
from django.urls import reverse

from evaluation.bundle import BUNDLE_VERSION, benchmark_version, tool_version
from evaluation.details import parquet_bytes
from evaluation.vocabulary import AVG, LEVEL_KEYS, OVERALL, TRACKS
from leaderboard.boards.selectors import (
    CSV_COLUMNS,
    LeaderboardFilters,
    leaderboard_table,
    tracks_page,
)
from leaderboard.errors import FieldError
from leaderboard.exports import csv_text
from leaderboard.models import Run
from leaderboard.releases.selectors import (
    MANIFEST_FILE,
    SUMS_FILE,
    VERSION_PATTERN,
    release_exists,
    release_list,
    release_path,
)
from leaderboard.runs.details import run_details_zip
from leaderboard.runs.selectors import run_bundle
from simulation.backends import renderer_version
from simulation.versions import BENCHMARK_VERSION

RELEASE_FORMAT = 1
"""The layout of a release's files (this module's docstring); a new layout is a new number."""


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _table_files(version: str) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for table in (OVERALL, *LEVEL_KEYS):
        rows = leaderboard_table(
            table=table, filters=LeaderboardFilters(version=version)
        ).csv_rows()
        name = OVERALL if table == OVERALL else f"level-{table}"
        files[f"tables/{name}.csv"] = csv_text(CSV_COLUMNS, rows).encode()
        frame = pd.DataFrame(rows, columns=CSV_COLUMNS)
        frame["params_b"] = pd.to_numeric(frame["params_b"].replace("", None), errors="coerce")
        files[f"tables/{name}.parquet"] = parquet_bytes(
            pa.Table.from_pandas(frame, preserve_index=False)
        )
    page = tracks_page(version=version)
    rows = [
        [level, *((page.table_iii.get(level) or {}).get(t) for t in TRACKS)]
        for level in (*LEVEL_KEYS, AVG)
    ]
    files["tables/tracks.csv"] = csv_text(["level", *TRACKS], rows).encode()
    frame = pd.DataFrame(rows, columns=["level", *TRACKS])
    files["tables/tracks.parquet"] = parquet_bytes(
        pa.Table.from_pandas(frame, preserve_index=False)
    )
    return files


def _changelog(version: str, note: str, runs: list[dict[str, Any]]) -> bytes:
    previous = next(iter(release_list()), None)
    lines = [f"# MirrorBench release {version}", ""]
    if note:
        lines += [note.strip(), ""]
    lines.append(
        f"{len(runs)} listed run{'' if len(runs) == 1 else 's'} of benchmark {BENCHMARK_VERSION}."
    )
    if previous is None:
        lines.append("The first release.")
    else:
        before = {r["run"]: r["model"] for r in previous.manifest.get("runs", [])}
        now = {r["run"]: r["model"] for r in runs}
        added = [f"{now[k]} (run {k})" for k in now if k not in before]
        removed = [f"{before[k]} (run {k})" for k in before if k not in now]
        lines.append(f"Since release {previous.version}:")
        lines.append("- added: " + (", ".join(added) or "none"))
        lines.append("- removed: " + (", ".join(removed) or "none"))
    return ("\n".join(lines) + "\n").encode()


def release_create(
    *, version: str, site_url: str, note: str = "", log: Callable[[str], None] = lambda _: None
) -> dict[str, Any]:
    """Write release ``version`` and return its manifest.

    Args:
        version: One to three whole numbers joined by dots; a version already written (even in
            part) is refused: a release never changes.
        site_url: The site's address (``https://host``), which the details name for run,
            episode and frame pages.
        note: A line or two for the changelog entry.
        log: Called with each file written.

    Raises:
        FieldError: naming ``version`` when it is malformed or already exists.
    """
    if not VERSION_PATTERN.match(version):
        raise FieldError(
            "version", f"expected one to three whole numbers joined by dots, got {version!r}"
        )
    if release_exists(version=version):
        raise FieldError("version", f"release {version} exists already; a release never changes")
    site = site_url.rstrip("/")

    def absolute(path: str) -> str:
        return site + path

    anonymous = AnonymousUser()  # the release is public: endpoints as a visitor sees them
    listed = list(
        Run.objects.on_board(BENCHMARK_VERSION)
        .exclude(source=Run.Source.REPORTED)
        .select_related("model_entry")
        .order_by("pk")
    )
    files = _table_files(BENCHMARK_VERSION)
    runs: list[dict[str, Any]] = []
    for run in listed:
        records = run_bundle(run=run, user=anonymous)
        files[f"runs/{run.pk}/bundle.jsonl"] = "".join(
            json.dumps(r, separators=(",", ":")) + "\n" for r in records
        ).encode()
        files[f"runs/{run.pk}/details.zip"] = run_details_zip(
            run=run, user=anonymous, absolute=absolute
        )
        runs.append(
            {
                "run": run.pk,
                "model": run.model_entry.name,
                "slug": run.model_entry.slug,
                "kind": run.model_entry.kind,
                "source": run.source,
                "episodes": len(records) - 1,
                "url": absolute(reverse("leaderboard:run", args=[run.pk])),
            }
        )
    finished = Run.objects.on_board(BENCHMARK_VERSION).aggregate(last=Max("finished"))["last"]
    versions = {
        "benchmark": benchmark_version(),
        "protocol": BENCHMARK_VERSION,
        "renderer": renderer_version(),
        "bundle_version": BUNDLE_VERSION,
        "tool": tool_version(),
    }
    files["versions.json"] = _json_bytes(versions)
    files["runs.json"] = _json_bytes(runs)
    files["CHANGELOG.md"] = _changelog(version, note, runs)
    listing = [
        {"path": path, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for path, data in sorted(files.items())
    ]
    files[SUMS_FILE] = "".join(f"{f['sha256']}  {f['path']}\n" for f in listing).encode()
    manifest = {
        "release": version,
        "format": RELEASE_FORMAT,
        "data_as_of": finished.isoformat(timespec="seconds") if finished else None,
        "site": site,
        "versions": versions,
        "runs": runs,
        "changelog": files["CHANGELOG.md"].decode(),
        "files": listing,
    }
    # The manifest goes last: a release without one is unfinished and not listed.
    for path, data in [*sorted(files.items()), (MANIFEST_FILE, _json_bytes(manifest))]:
        target = release_path(version, path)
        saved = default_storage.save(target, ContentFile(data))
        if saved != target:  # another writer got there first
            default_storage.delete(saved)
            raise FieldError("version", f"release {version} is being written by another process")
        log(target)
    return manifest
