"""Releases (``manage.py release VERSION``, ``/releases/``): immutable, self-describing snapshots
of the board, in local storage and in a real S3-compatible bucket on loopback."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import zipfile
from pathlib import Path

import pytest
from django.core.files.storage import storages
from django.core.management import CommandError, call_command
from django.test import override_settings

from leaderboard.models import ModelEntry, Run
from tests.leaderboard.factories import import_run, make_bundle

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def listed_run(module_rows, tmp_path_factory) -> Run:
    """The random baseline on the robot track at every level, listed on the board."""
    bundle = make_bundle(tmp_path_factory.mktemp("releases") / "random.jsonl", "random", "robot")
    with module_rows():
        run = import_run(bundle, "Random", kind=ModelEntry.Kind.BASELINE)
        Run.objects.filter(pk=run.pk).update(listed=True)
        return run


@pytest.fixture
def media(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return Path(settings.MEDIA_ROOT)


def _release_files(root: Path, version: str) -> dict[str, bytes]:
    folder = root / "releases" / version
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_release_holds_every_table_and_listed_run_with_a_checksum_for_each(
    media, listed_run, client
):
    call_command("release", "1.0", "--site-url", "https://bench.example", stdout=io.StringIO())
    files = _release_files(media, "1.0")
    manifest = json.loads(files["manifest.json"])
    names = {f["path"] for f in manifest["files"]}
    for table in ("overall", "level-0", "level-1", "level-2", "level-3", "tracks"):
        assert {f"tables/{table}.csv", f"tables/{table}.parquet"} <= names
    run = listed_run.pk
    assert {f"runs/{run}/bundle.jsonl", f"runs/{run}/details.zip"} <= names
    assert {"versions.json", "runs.json", "CHANGELOG.md"} <= names
    for entry in manifest["files"]:
        data = files[entry["path"]]
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["bytes"], entry["sha256"])
    # The bundle is the one a visitor downloads from the run page; the details name the site.
    assert files[f"runs/{run}/bundle.jsonl"] == client.get(f"/runs/{run}/bundle.jsonl").content
    with zipfile.ZipFile(io.BytesIO(files[f"runs/{run}/details.zip"])) as details:
        assert f"https://bench.example/runs/{run}/" in details.read("README.md").decode()
    versions = json.loads(files["versions.json"])
    assert versions["protocol"] == "v3" and versions["benchmark"]["scene_set"]
    assert manifest["runs"] == [
        {
            "run": run,
            "model": "Random",
            "slug": listed_run.model_entry.slug,
            "kind": "baseline",
            "source": "evaluated",
            "episodes": 72,
            "url": f"https://bench.example/runs/{run}/",
        }
    ]
    assert "The first release." in manifest["changelog"]
    overall = files["tables/overall.csv"].decode()
    assert overall.startswith("rank,model,") and "Random" in overall


def test_the_documented_command_checks_a_downloaded_release(media, listed_run, client, tmp_path):
    call_command("release", "1.0", stdout=io.StringIO())
    response = client.get("/releases/1.0.zip")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="mirrorbench-release-1.0.zip"'
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        archive.extractall(tmp_path / "download")
    folder = tmp_path / "download" / "mirrorbench-release-1.0"
    check = subprocess.run(
        ["sha256sum", "-c", "SHA256SUMS"], cwd=folder, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count(": OK") == len(
        json.loads((folder / "manifest.json").read_text())["files"]
    )
    (folder / "tables" / "overall.csv").write_text("rank,model\n1,Someone else\n")
    tampered = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=folder, capture_output=True)
    assert tampered.returncode != 0 and b"tables/overall.csv: FAILED" in tampered.stdout


def test_a_release_written_twice_from_unchanged_data_is_byte_identical(
    settings, listed_run, tmp_path
):
    written = []
    for place in ("first", "second"):
        settings.MEDIA_ROOT = tmp_path / place
        call_command("release", "2.1.0", "--note", "Spring snapshot.", stdout=io.StringIO())
        written.append(_release_files(tmp_path / place, "2.1.0"))
    assert written[0] == written[1]
    assert len(written[0]) > 15


def test_a_release_is_never_overwritten_and_a_bad_version_is_refused_naming_it(media, listed_run):
    call_command("release", "1.0", stdout=io.StringIO())
    before = _release_files(media, "1.0")
    Run.objects.filter(pk=listed_run.pk).update(listed=False)  # the board changes
    with pytest.raises(CommandError, match=r"^version: release 1.0 exists already"):
        call_command("release", "1.0", stdout=io.StringIO())
    assert _release_files(media, "1.0") == before
    for bad in ("latest", "1.0/../2", "v1", "1.2.3.4"):
        with pytest.raises(CommandError, match=r"^version: expected one to three whole numbers"):
            call_command("release", bad, stdout=io.StringIO())
    # The next release says what changed since.
    call_command("release", "1.1", stdout=io.StringIO())
    changelog = _release_files(media, "1.1")["CHANGELOG.md"].decode()
    assert (
        "Since release 1.0:" in changelog and f"removed: Random (run {listed_run.pk})" in changelog
    )


def test_the_releases_page_lists_each_release_with_its_files(media, listed_run, client):
    empty = client.get("/releases/")
    assert empty.status_code == 200 and b"No release has been written yet" in empty.content
    call_command("release", "1.0", stdout=io.StringIO())
    call_command("release", "1.1", "--note", "Second.", stdout=io.StringIO())
    page = client.get("/releases/").content.decode()
    assert page.index("Release 1.1") < page.index("Release 1.0")
    assert "sha256sum -c SHA256SUMS" in page and "/releases/1.1.zip" in page
    assert f'href="/releases/1.0/runs/{listed_run.pk}/bundle.jsonl"' in page
    manifest = client.get("/releases/1.0/manifest.json")
    assert manifest.status_code == 200 and manifest["Cache-Control"].endswith("immutable")
    csv = client.get("/releases/1.0/tables/overall.csv")
    assert csv["Content-Type"].startswith("text/plain") and b"Random" in b"".join(csv)
    assert client.get("/releases/1.0/../1.1/manifest.json").status_code == 404
    assert client.get("/releases/1.0/nothing.csv").status_code == 404
    assert client.get("/releases/9.9/manifest.json").status_code == 404
    assert client.get("/releases/9.9.zip").status_code == 404


def test_a_release_is_kept_in_the_s3_bucket_when_one_is_configured(
    listed_run, s3_server, monkeypatch, client
):
    import boto3

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    bucket = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    bucket.create_bucket(Bucket="releases-test")
    s3 = {
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": "releases-test",
                "endpoint_url": s3_server,
                "region_name": "us-east-1",
                "file_overwrite": False,
                "default_acl": None,
            },
        },
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    with override_settings(STORAGES=s3, S3_BUCKET="releases-test"):
        storages._storages.clear()
        try:
            call_command("release", "3.0", stdout=io.StringIO())
            objects = bucket.list_objects_v2(Bucket="releases-test")["Contents"]
            keys = {o["Key"] for o in objects}
            manifest = json.loads(
                bucket.get_object(Bucket="releases-test", Key="releases/3.0/manifest.json")[
                    "Body"
                ].read()
            )
            assert keys == {f"releases/3.0/{f['path']}" for f in manifest["files"]} | {
                "releases/3.0/SHA256SUMS",
                "releases/3.0/manifest.json",
            }
            for entry in manifest["files"][:3]:
                body = bucket.get_object(
                    Bucket="releases-test", Key=f"releases/3.0/{entry['path']}"
                )
                assert hashlib.sha256(body["Body"].read()).hexdigest() == entry["sha256"]
            with pytest.raises(CommandError, match="exists already"):
                call_command("release", "3.0", stdout=io.StringIO())
            # The page lists it from the bucket; a file is the bucket's to serve.
            assert "Release 3.0" in client.get("/releases/").content.decode()
            served = client.get("/releases/3.0/tables/overall.csv")
            assert served.status_code == 302
            assert served["Location"].startswith(f"{s3_server}/releases-test/releases/3.0/")
            assert {
                o["Key"] for o in bucket.list_objects_v2(Bucket="releases-test")["Contents"]
            } == keys
        finally:
            storages._storages.clear()
