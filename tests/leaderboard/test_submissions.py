"""Submissions: upload (web, API, CLI), verification before storing, tokens, moderation."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.core.management import call_command

from leaderboard.models import ApiToken, ModelEntry, Run, Submission
from leaderboard.submissions.tokens import api_token_create
from leaderboard.submissions.views import REVIEWED, SUBMITTED
from tests.leaderboard.factories import make_bundle

pytestmark = pytest.mark.django_db
SCENES = "male_0-mano_white-splash,tienkung-allegro-logo_0"
META = {"model_name": "My VLM 7B", "kind": "open-weights", "params_b": "7"}


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> bytes:
    """A random agent's bundle of two scenes at two levels: valid, and partial."""
    path = tmp_path_factory.mktemp("sub") / "small.jsonl"
    return make_bundle(path, "random", scenes=SCENES, levels=(0, 1)).read_bytes()


@pytest.fixture
def moderator_user(moderator):
    from django.contrib.auth.models import Permission

    moderator.user_permissions.add(Permission.objects.get(codename="change_submission"))
    return moderator


def _upload(client, content: bytes, token: str | None = None, **meta):
    data = {**META, **meta, "bundle": io.BytesIO(content)}
    data["bundle"].name = "results.jsonl"
    headers = {"HTTP_AUTHORIZATION": f"Token {token}"} if token else {}
    return client.post("/api/submissions/", data, **headers)


def _nothing_stored() -> None:
    assert not Submission.objects.exists()
    assert not Run.objects.filter(source=Run.Source.VERIFIED).exists()
    assert not ModelEntry.objects.filter(name="My VLM 7B").exists()


# Uploading.


def test_a_bundle_uploaded_with_a_token_becomes_a_private_run_of_its_owner(client, alice, small):
    key = api_token_create(user=alice, name="ci").key
    response = _upload(client, small, key)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["episodes"] == 4 and body["partial"] is True and body["duplicate"] is False
    assert body["url"].endswith(f"/submissions/{body['id']}/")
    submission = Submission.objects.get()
    run = submission.run
    assert run.owner == alice and run.visibility == Run.Visibility.PRIVATE and not run.listed
    assert run.source == Run.Source.VERIFIED and run.episodes.count() == 4
    assert run.model_entry.owner == alice and run.model_entry.params_b == 7
    assert default_storage.exists(submission.bundle_path)
    # The same bytes again: recognised, nothing new stored.
    again = _upload(client, small, key)
    assert again.status_code == 200 and again.json()["id"] == body["id"]
    assert again.json()["duplicate"] is True
    assert Submission.objects.count() == 1 and Run.objects.filter(owner=alice).count() == 1
    # Private: not on the board, not in the public API, not to another user.
    assert client.get(f"/api/runs/{run.pk}/").status_code == 404
    assert "My VLM 7B" not in client.get("/").content.decode()


def test_the_web_form_uploads_and_shows_the_submission_to_its_owner_only(client, alice, bob, small):
    assert client.get("/submit/").status_code == 302  # visitors sign in first
    client.force_login(alice)
    assert "Verified means" in client.get("/submit/").content.decode()
    upload = io.BytesIO(small)
    upload.name = "r.jsonl"
    response = client.post("/submit/", {**META, "bundle": upload})
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "My VLM 7B" in page and "does not prove" in page and "partial" in page
    client.force_login(bob)
    assert client.get(response["Location"]).status_code == 404
    assert client.get("/api/submissions/").json()["count"] == 0


def _lines(content: bytes) -> list[dict]:
    return [json.loads(line) for line in content.splitlines()]


def _dump(records: list[dict]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _edit(change: Callable[[list[dict]], None]) -> Callable[[bytes], bytes]:
    def make(content: bytes) -> bytes:
        records = _lines(content)
        change(records)
        return _dump(records)

    return make


def _set(path: tuple, value) -> Callable[[list[dict]], None]:
    def change(records: list[dict]) -> None:
        target = records
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


BAD_BUNDLES = {
    "malformed JSON": (lambda c: c.replace(b'"type":"episode"', b'"type":episode', 1), "line 2"),
    "truncated file": (lambda c: c[: len(c) - 200], "line 5"),
    "wrong bundle version": (_edit(_set((0, "bundle_version"), 9)), "bundle_version"),
    "unknown benchmark version": (_edit(_set((0, "benchmark", "version"), "v9")), "v9"),
    "unknown scene": (_edit(_set((1, "scene_id"), "male_9-x-y")), "male_9-x-y"),
    "level 4": (_edit(_set((1, "level"), 4)), "4"),
    "action 7": (_edit(_set((1, "steps", 0, "option"), 7)), "7"),
    "edited distance": (_edit(_set((1, "distances", 1), 0)), "distance"),
    "edited executed flag": (
        _edit(lambda r: r[1]["steps"][0].update(executed=not r[1]["steps"][0]["executed"])),
        "executed",
    ),
    "forged success": (_edit(_set((1, "success"), True)), "success"),
    "forged metrics": (_edit(_set((1, "metrics", "tsr"), 1.0)), "tsr"),
    "duplicated episode": (_edit(lambda r: r.append(r[1])), "duplicate of the episode on line 2"),
    "10 MB response": (_edit(_set((1, "steps", 0, "response"), "x" * 10_000_000)), "response"),
    "binary garbage": (lambda c: b"\x00\xff\xfe" * 1000, "UTF-8"),
    "empty file": (lambda c: b"", "empty"),
    "deep nesting": (lambda c: c + b"[" * 100 + b"]" * 100 + b"\n", "nest"),
    "integer too large": (_edit(_set((1, "steps", 0, "input_tokens"), 10**30)), "input_tokens"),
    "negative count": (_edit(_set((1, "steps", 0, "output_tokens"), -5)), "output_tokens"),
}


@pytest.mark.parametrize("case", list(BAD_BUNDLES), ids=list(BAD_BUNDLES))
def test_a_bad_bundle_is_rejected_with_its_reason_and_nothing_is_stored(client, alice, small, case):
    mutate, expected = BAD_BUNDLES[case]
    client.force_login(alice)
    response = _upload(client, mutate(small))
    assert response.status_code == 400, (case, response.content[:300])
    reasons = response.json()
    assert "bundle" in reasons, reasons
    text = " ".join(reasons["bundle"])
    assert expected.lower() in text.lower(), (case, text[:500])
    _nothing_stored()


def test_a_bundle_over_the_size_limit_is_refused_before_reading_it(client, alice, small, settings):
    settings.MIRRORBENCH_MAX_BUNDLE_BYTES = 2048
    client.force_login(alice)
    response = _upload(client, small)
    assert response.status_code == 400
    assert "larger than the limit of 2048 bytes" in response.json()["bundle"][0]
    _nothing_stored()


def test_bad_metadata_names_the_field(client, alice, small):
    client.force_login(alice)
    response = _upload(client, small, kind="baseline", params_b="-1", link="not a url")
    assert response.status_code == 400
    assert set(response.json()) == {"kind", "params_b", "link"}
    ModelEntry.objects.get_or_create(name="Random", defaults={"slug": "random", "kind": "baseline"})
    taken = _upload(client, small, model_name="random")
    assert taken.status_code == 400 and "not yours" in taken.json()["model_name"][0]
    assert not Submission.objects.exists()


def test_an_upload_gives_a_new_entry_the_models_facts(client, alice, small):
    client.force_login(alice)
    response = _upload(
        client,
        small,
        release_date="2025-03-04",
        reasoning="medium",
        licence="Apache-2.0",
        scaffold="agent",
    )
    assert response.status_code == 201, response.content
    entry = ModelEntry.objects.get(name="My VLM 7B")
    assert (entry.release_date.isoformat(), entry.reasoning, entry.licence, entry.scaffold) == (
        "2025-03-04",
        "medium",
        "Apache-2.0",
        "agent",
    )


def test_bad_facts_are_refused_naming_each_field(client, alice, small):
    client.force_login(alice)
    response = _upload(
        client,
        small,
        release_date="04/03/2025",
        reasoning="extreme",
        licence="x" * 101,
        scaffold="robot",
    )
    assert response.status_code == 400
    assert set(response.json()) == {"release_date", "reasoning", "licence", "scaffold"}
    upload = io.BytesIO(small)
    upload.name = "r.jsonl"
    page = client.post("/submit/", {**META, "bundle": upload, "release_date": "2025-02-30"})
    assert page.status_code == 400
    assert 'id="id_release_date"' in page.content.decode() and "valid date" in page.content.decode()
    assert not Submission.objects.exists()


def test_daily_and_concurrent_caps(client, alice, small, settings):
    from mirrorbench_site.cache import limits_cache

    settings.MIRRORBENCH_MAX_SUBMISSIONS_PER_DAY = 1
    client.force_login(alice)
    assert _upload(client, small).status_code == 201
    second = _upload(client, small + b"\n")
    assert second.status_code == 429 and "most allowed is 1 a day" in second.json()["detail"]
    settings.MIRRORBENCH_MAX_SUBMISSIONS_PER_DAY = 10
    settings.MIRRORBENCH_MAX_ACTIVE_VERIFICATIONS = 1
    limits_cache.add(f"verifying:{alice.pk}:0", 1, 60)  # another upload of hers is being verified
    busy = _upload(client, small + b"\n")
    assert busy.status_code == 429 and "being verified" in busy.json()["detail"]


def test_visitors_cannot_upload_or_list(client, small):
    assert _upload(client, small).status_code in (401, 403)
    assert client.get("/api/submissions/").status_code in (401, 403)
    assert _upload(client, small, token="mb_not-a-token").status_code == 401


# Tokens.


def test_a_token_is_shown_once_works_and_stops_working_when_revoked(client, alice, small):
    client.force_login(alice)
    page = client.post("/accounts/tokens/", {"name": "laptop"})
    assert page.status_code == 201
    key = page.context["new_key"]
    assert key in page.content.decode()
    token = ApiToken.objects.get(user=alice)
    assert token.key_hash != key and key not in token.key_hash and token.prefix == key[:10]
    assert key not in client.get("/accounts/profile/").content.decode()  # never again
    client.logout()
    assert client.get("/api/submissions/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    client.force_login(alice)
    assert client.post(f"/accounts/tokens/{token.pk}/revoke/").status_code == 302
    client.logout()
    assert client.get("/api/submissions/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401


def test_the_token_command_prints_a_working_key(client, alice):
    out = io.StringIO()
    call_command("token", "alice", stdout=out)
    key = out.getvalue().strip()
    assert client.get("/api/submissions/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="no user named 'nobody'"):
        call_command("token", "nobody")


def test_signing_up_signs_in_and_bad_input_names_the_field(client):
    bad = client.post(
        "/accounts/signup/",
        {"username": "x", "email": "nope", "password1": "a", "password2": "b"},
    )
    assert bad.status_code == 400
    assert set(bad.context["form"].errors) >= {"username", "email", "password2"}
    ok = client.post(
        "/accounts/signup/",
        {
            "username": "newcomer",
            "email": "n@example.org",
            "password1": "mirror-mirror-on-the-wall",
            "password2": "mirror-mirror-on-the-wall",
        },
    )
    assert ok.status_code == 302 and ok["Location"] == "/accounts/profile/"
    assert client.get("/accounts/profile/").status_code == 200


def test_password_reset_sends_a_link_by_the_configured_backend(client, alice, mailoutbox):
    alice.email = "alice@example.org"
    alice.save()
    response = client.post("/accounts/password_reset/", {"email": "alice@example.org"})
    assert response.status_code == 302
    assert len(mailoutbox) == 1 and "/accounts/reset/" in mailoutbox[0].body


# Moderation.


def test_publish_review_and_the_board(client, alice, bob, moderator_user, bundles):
    client.force_login(alice)
    full = Path(bundles["random"]).read_bytes()
    created = _upload(client, full, model_name="Alice VLM").json()
    submission = Submission.objects.get(pk=created["id"])
    assert submission.partial is False
    # Only the owner publishes; only moderators review.
    client.force_login(bob)
    assert client.post(f"/submissions/{submission.pk}/publish/").status_code == 404
    assert client.get("/moderation/").status_code == 403
    review = {"decision": "approve", "note": "a test of the board"}
    assert client.post(f"/submissions/{submission.pk}/review/", review).status_code == 403
    client.force_login(alice)
    assert client.post(f"/submissions/{submission.pk}/publish/").status_code == 302
    submission.refresh_from_db()
    assert submission.review == Submission.Review.PENDING
    client.force_login(moderator_user)
    assert "Alice VLM" in client.get("/moderation/").content.decode()
    refused = client.post(f"/submissions/{submission.pk}/review/", {"decision": "refuse"})
    assert refused.status_code == 400  # a reason is required
    # The random agent's bundle as a model: approving it needs a reason too.
    silent = client.post(f"/submissions/{submission.pk}/review/", {"decision": "approve"})
    assert silent.status_code == 400 and "needs a written reason" in silent.content.decode()
    approved = client.post(f"/submissions/{submission.pk}/review/", review)
    assert approved.status_code == 302
    run = Run.objects.get(pk=submission.run_id)
    assert run.visibility == Run.Visibility.PUBLIC and run.listed
    client.logout()
    board = client.get("/").content.decode()
    assert "Alice VLM" in board and "verified upload" in board
    # Flagging takes it off the board, with the reason kept.
    client.force_login(moderator_user)
    flag = {"decision": "flag", "note": "relabelled baseline"}
    assert client.post(f"/submissions/{submission.pk}/review/", flag).status_code == 302
    run.refresh_from_db()
    assert not run.listed
    client.logout()
    assert "Alice VLM" not in client.get("/").content.decode()


def test_a_partial_submission_reaches_the_board_only_if_a_moderator_allows_it(
    client, alice, moderator_user, small
):
    client.force_login(alice)
    submission = Submission.objects.get(pk=_upload(client, small).json()["id"])
    client.post(f"/submissions/{submission.pk}/publish/")
    client.force_login(moderator_user)
    client.post(f"/submissions/{submission.pk}/review/", {"decision": "approve", "note": "test"})
    run = Run.objects.get(pk=submission.run_id)
    assert run.visibility == Run.Visibility.PUBLIC and not run.listed
    flag = {"decision": "flag", "note": "partial, checking"}
    client.post(f"/submissions/{submission.pk}/review/", flag)
    allow = {"decision": "approve", "allow_partial": "on", "note": "test"}
    assert client.post(f"/submissions/{submission.pk}/review/", allow).status_code == 302
    run.refresh_from_db()
    assert run.listed
    client.logout()
    board = client.get("/levels/0/").content.decode()  # the bundle has levels 0 and 1
    row = board[board.index("My VLM 7B") :][:2000]
    assert 'class="badge partial"' in row and 'href="/about/#verification"' in row


def _said(response) -> list[str]:
    """The messages the page shows (Django's messages, in base.html)."""
    return [str(m) for m in response.context["messages"]]


def test_uploading_publishing_and_reviewing_each_say_what_they_did(
    client, alice, moderator_user, small
):
    client.force_login(alice)
    bundle = io.BytesIO(small)
    bundle.name = "results.jsonl"
    uploaded = client.post("/submit/", {**META, "bundle": bundle}, follow=True)
    assert _said(uploaded) == [SUBMITTED]
    assert '<ul class="messages" role="status">' in uploaded.content.decode()
    submission = Submission.objects.get()
    # Shown once: the next page does not repeat it.
    assert _said(client.get(f"/submissions/{submission.pk}/")) == []
    published = client.post(f"/submissions/{submission.pk}/publish/", follow=True)
    assert published.redirect_chain == [(f"/submissions/{submission.pk}/", 302)]
    assert _said(published)[0].startswith("Published for review: a moderator will look at it")
    client.force_login(moderator_user)
    review = f"/submissions/{submission.pk}/review/"
    approved = client.post(review, {"decision": "approve", "note": "test"}, follow=True)
    assert _said(approved) == [
        "Approved: My VLM 7B is public but off the board, as a partial bundle whose listing "
        "you did not allow."
    ]
    flagged = client.post(review, {"decision": "flag", "note": "partial"}, follow=True)
    assert _said(flagged) == [REVIEWED["flag"].format(model="My VLM 7B")]
    allow = {"decision": "approve", "allow_partial": "on", "note": "test"}
    listed = client.post(review, allow, follow=True)
    assert _said(listed) == ["Approved: My VLM 7B is on the board."]
    assert "Approved: My VLM 7B is on the board." in listed.content.decode()


def test_submitted_episodes_get_their_frames_queued(
    client, alice, small, django_capture_on_commit_callbacks
):
    from django.conf import settings

    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = _upload(client, small)
    assert response.status_code == 201
    run_id = Submission.objects.get().run_id
    queue = Path(settings.CELERY_BROKER_DIR) / "queue"
    messages = [p.read_text() for p in queue.iterdir() if p.is_file()]
    assert any("run_render_frames" in m and f"({run_id},)" in m for m in messages), run_id


@pytest.mark.django_db(transaction=True)
def test_run_then_submit_from_the_command_line_then_approve_then_the_board(
    live_server, tmp_path, alice, moderator_user, capsys, settings, monkeypatch
):
    """End to end on a live server on loopback: `mirrorbench run`, `mirrorbench submit`."""
    monkeypatch.delenv("MIRRORBENCH_TOKEN", raising=False)
    from evaluation.bundle import episode_results, read_bundle
    from evaluation.cli import main
    from evaluation.metrics import score_json

    settings.MEDIA_ROOT = tmp_path / "media"
    bundle = tmp_path / "oracle.jsonl"
    assert main(["run", "--agent", "oracle", "--out", str(bundle)]) == 0
    key = api_token_create(user=alice, name="cli").key
    url = live_server.url
    argv = ["submit", str(bundle), "--url", url, "--model", "Oracle Relabelled", "--kind"]
    argv += ["proprietary", "--organisation", "Alice Labs"]
    assert main([*argv, "--token", "mb_wrong"]) == 1
    assert "Invalid token" in capsys.readouterr().err
    assert main(argv) == 2  # no token given, none in the environment
    assert "--token" in capsys.readouterr().err
    assert main([*argv, "--token", key]) == 0
    out = capsys.readouterr().out
    submission = Submission.objects.get()
    assert f"{url}/submissions/{submission.pk}/" in out and "264 episodes" in out
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(bundle.read_bytes().replace(b'"success":true', b'"success":false', 1))
    assert main(["submit", str(broken), "--url", url, "--model", "X", "--token", key]) == 1
    assert "does not verify" in capsys.readouterr().err
    assert main(["submit", str(bundle), "--url", url + "/nowhere", "--model", "X", "--token", key])
    # Publish, approve, and the board shows it with the numbers of the bundle.
    submission_publish_and_approve(submission, alice, moderator_user)
    from django.test import Client

    board = Client().get("/").content.decode()
    assert "Oracle Relabelled" in board and "verified upload" in board
    scores = score_json(episode_results(read_bundle(bundle).episodes))
    avg = f"{scores['overall']['overall']['avg']:.3f}"
    assert avg in board


def submission_publish_and_approve(submission, owner, moderator):
    from leaderboard.submissions.services import submission_publish, submission_review

    submission_publish(submission=submission, user=owner)
    submission_review(
        submission=submission, moderator=moderator, decision="approve", note="a test bundle"
    )


def test_a_flagged_entry_keeps_its_page_with_the_moderators_note(
    client, alice, moderator_user, bundles
):
    from leaderboard.submissions.services import submission_review

    client.force_login(alice)
    full = Path(bundles["oracle"]).read_bytes()
    submission = Submission.objects.get(
        pk=_upload(client, full, model_name="Alice Oracle").json()["id"]
    )
    submission_publish_and_approve(submission, alice, moderator_user)
    submission_review(
        submission=submission,
        moderator=moderator_user,
        decision="flag",
        note="an oracle, <b>relabelled</b>",
    )
    client.logout()
    page = client.get(f"/models/{submission.run.model_entry.slug}/").content.decode()
    assert "took it off the board: an oracle, &lt;b&gt;relabelled&lt;/b&gt;" in page
    assert 'href="/about/#verification"' in page and "not which model produced it" in page


@pytest.mark.parametrize("who", ["visitor", "owner", "other", "moderator"])
def test_who_may_see_and_change_a_submission(client, who, alice, bob, moderator_user, small):
    """Pages and API alike: the owner and moderators see it; only moderators review it."""
    client.force_login(alice)
    submission = Submission.objects.get(pk=_upload(client, small).json()["id"])
    client.logout()
    user = {"visitor": None, "owner": alice, "other": bob, "moderator": moderator_user}[who]
    if user is not None:
        client.force_login(user)
    sees = who in ("owner", "moderator")
    page = client.get(f"/submissions/{submission.pk}/")
    api = client.get(f"/api/submissions/{submission.pk}/")
    run_page = client.get(f"/runs/{submission.run_id}/")
    if who == "visitor":
        assert page.status_code == 302 and api.status_code == 401
    else:
        assert page.status_code == (200 if sees else 404)
        assert api.status_code == (200 if sees else 404)
    assert run_page.status_code == (200 if who == "owner" else 404)  # private until approved
    publish = client.post(f"/submissions/{submission.pk}/publish/")
    assert (
        publish.status_code == {"visitor": 302, "owner": 302, "other": 404, "moderator": 400}[who]
    )
    review = client.post(f"/submissions/{submission.pk}/review/", {"decision": "approve"})
    # A moderator may not approve what its owner has not published.
    assert review.status_code == {"visitor": 302, "owner": 403, "other": 403, "moderator": 400}[who]
    listed = client.get("/api/submissions/").json() if user else None
    if user is not None:
        mine = [s["id"] for s in listed["results"]]
        assert (submission.pk in mine) == (who == "owner")


def test_a_moderator_cannot_decide_on_their_own_submission(client, moderator_user, small):
    """The page offers no decision, the review is refused with a reason; another moderator may."""
    from leaderboard.errors import FieldError
    from leaderboard.submissions.services import submission_review
    from tests.leaderboard.factories import UserFactory

    client.force_login(moderator_user)
    submission = Submission.objects.get(pk=_upload(client, small).json()["id"])
    assert client.post(f"/submissions/{submission.pk}/publish/").status_code == 302
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "another moderator must review it" in page and "Record the decision" not in page
    for decision in ({"decision": "approve"}, {"decision": "refuse", "note": "mine"}):
        answer = client.post(f"/submissions/{submission.pk}/review/", decision)
        assert answer.status_code == 400
        assert "your own submission" in answer.content.decode()
    with pytest.raises(FieldError, match="your own submission"):
        submission_review(submission=submission, moderator=moderator_user, decision="approve")
    submission.refresh_from_db()
    assert submission.review == Submission.Review.PENDING and submission.reviewed_by is None
    assert Run.objects.get(pk=submission.run_id).visibility == Run.Visibility.PRIVATE
    other = UserFactory(
        username="other-moderator", is_staff=True, permissions=["leaderboard.change_submission"]
    )
    client.force_login(other)
    approve = {"decision": "approve", "note": "a test bundle"}
    assert client.post(f"/submissions/{submission.pk}/review/", approve).status_code == 302
    submission.refresh_from_db()
    assert submission.review == Submission.Review.APPROVED and submission.reviewed_by == other


def test_the_spool_of_an_upload_whose_process_is_a_zombie_is_swept(tmp_path):
    """A killed web process not yet reaped (a container's first process may never reap it)
    still answers signals: its spool folder goes all the same."""
    import os
    import socket
    import subprocess
    import time

    from leaderboard.submissions.services import _process_alive, _spool_sweep

    child = subprocess.Popen(["true"])
    try:
        for _ in range(200):  # until it has exited, unreaped
            state = Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0]
            if state == "Z":
                break
            time.sleep(0.01)
        assert state == "Z"
        assert not _process_alive(child.pid)
        host = socket.gethostname()
        dead = tmp_path / f"verify-{host}-{child.pid}-abc"
        living = tmp_path / f"verify-{host}-{os.getpid()}-def"
        for folder in (dead, living):
            folder.mkdir()
            (folder / "bundle.jsonl").write_bytes(b"{}")
        _spool_sweep(tmp_path)
        assert not dead.exists() and living.exists()
    finally:
        child.wait()
