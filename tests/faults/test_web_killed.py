"""The web process killed (SIGKILL) while it verifies an uploaded bundle: no submission, run,
entry or stored bundle is left behind, no spooled copy outlives the next upload, and the same
bundle uploaded again to a new web process is accepted once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings

from leaderboard.models import ModelEntry, Run, Submission
from tests.faults.processes import start_web, wait_until
from tests.faults.servers import free_port, wait_for_port
from tests.leaderboard.factories import UserFactory, make_bundle
from tests.leaderboard.workers import stop_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.waits]

META = {"model_name": "My VLM 7B", "kind": "open-weights", "params_b": "7"}


def upload(port: int, key: str, bundle: bytes) -> requests.Response:
    return requests.post(
        f"http://127.0.0.1:{port}/api/submissions/",
        data=META,
        files={"bundle": ("results.jsonl", bundle, "application/jsonl")},
        headers={"Authorization": f"Token {key}"},
        timeout=120,
    )


def files_under(folder: Path) -> list[str]:
    found = folder.rglob("*") if folder.is_dir() else []
    return sorted(str(p.relative_to(folder)) for p in found if p.is_file())


def test_a_web_process_killed_while_verifying_an_upload_leaves_nothing(tmp_path, fault_row):
    from leaderboard.submissions.tokens import api_token_create

    alice = UserFactory(username="alice")
    key = api_token_create(user=alice, name="ci").key
    bundle = make_bundle(tmp_path / "b.jsonl", "random", scenes="robot", levels=(1,)).read_bytes()
    temp = tmp_path / "web-tmp"  # the web process's TMPDIR: whatever it spools elsewhere
    temp.mkdir()
    data = Path(settings.DATA_DIR)
    media = Path(settings.MEDIA_ROOT) / "submissions"
    # The media folder is the test session's: bundles stored by earlier tests stay in it.
    before = files_under(media)
    env = {"TMPDIR": str(temp)}
    markers = tmp_path / "markers"
    port = free_port()
    web = start_web(
        port,
        env=env,
        slow={"leaderboard.submissions.services:verify_bundle": 120},
        markers=markers,
    )
    answers: list[object] = []
    try:
        wait_for_port(port, timeout=60)
        first = threading.Thread(
            target=lambda: answers.append(_quietly(upload, port, key, bundle)), daemon=True
        )
        first.start()
        wait_until(
            (markers / "verify_bundle").exists, timeout=60, what="the upload was never verified"
        )
        spooled = files_under(data / "tmp") + files_under(temp)
    finally:
        stop_worker(web, kill=True)
    first.join(timeout=30)
    assert spooled, "the bundle was being verified from a spooled copy"
    assert isinstance(answers[0], requests.ConnectionError)
    # Nothing of the upload was stored.
    assert not Submission.objects.exists()
    assert not Run.objects.filter(source=Run.Source.VERIFIED).exists()
    assert not ModelEntry.objects.filter(name=META["model_name"]).exists()
    assert files_under(media) == before
    started = time.monotonic()
    # A port of its own: the killed process's port is free again, and another test's server or
    # client may have taken it since (wait_for_port would then wait for that one).
    port = free_port()
    web = start_web(port, env=env)
    try:
        wait_for_port(port, timeout=60)
        again = upload(port, key, bundle)
        recovered = time.monotonic() - started
    finally:
        stop_worker(web)
    assert again.status_code == 201, again.text[:2000]
    assert again.json()["duplicate"] is False and again.json()["episodes"] == 18
    # Stored once, and the killed process's spooled copy is gone with the next upload.
    submission = Submission.objects.get()
    assert submission.run.episodes.count() == 18
    stored = str(Path(submission.bundle_path).relative_to("submissions"))
    assert files_under(media) == sorted({*before, stored})
    leftovers = files_under(data / "tmp") + files_under(temp)
    fault_row(
        "web killed while verifying an upload",
        1,
        Submission.objects.count(),
        Submission.objects.count() - 1 + len(leftovers),
        recovered,
    )
    assert leftovers == [], leftovers


def _quietly(function, *args):
    try:
        return function(*args)
    except requests.RequestException as exc:
        return exc
