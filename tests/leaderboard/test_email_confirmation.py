"""Sign-up confirms the e-mail address; reset mail is bounded and goes to confirmed addresses only
(issue 29, item 10)."""

from __future__ import annotations

import io
import re

import pytest

from leaderboard.models import EmailConfirmation, Run, Submission
from tests.leaderboard.factories import UserFactory, make_bundle

pytestmark = pytest.mark.django_db
PASSWORD = "mirror-mirror-on-the-wall"
SCENE = "male_1-mano_white-splash"
LINK = re.compile(r"https?://testserver(/accounts/confirm/[^/\s]+/)")


@pytest.fixture
def small(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("mail") / "small.jsonl"
    return make_bundle(path, "random", scenes=SCENE, levels=(0,)).read_bytes()


def _signup(client, username: str = "newcomer", email: str = "new@example.org", **meta):
    data = {"username": username, "email": email, "password1": PASSWORD, "password2": PASSWORD}
    return client.post("/accounts/signup/", data, **meta)


def _upload(client, content: bytes):
    bundle = io.BytesIO(content)
    bundle.name = "b.jsonl"
    return client.post(
        "/api/submissions/", {"model_name": "New VLM", "kind": "open-weights", "bundle": bundle}
    )


def _reset(client, email: str, **meta):
    return client.post("/accounts/password_reset/", {"email": email}, **meta)


def test_an_unconfirmed_user_cannot_submit_until_they_follow_the_link(
    client, small, mailoutbox, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    assert _signup(client).status_code == 302
    (mail,) = mailoutbox
    assert mail.to == ["new@example.org"] and "confirm" in mail.subject.lower()
    path = LINK.search(mail.body).group(1)
    profile = client.get("/accounts/profile/").content.decode()
    assert "Confirm your e-mail address" in profile and "Send the link again" in profile
    # Browsing and playing are open; uploading, submitting and evaluating are not.
    assert client.get("/").status_code == 200
    assert client.post("/play/start/", {"scene": SCENE, "level": 0}).status_code == 201
    refused = _upload(client, small)
    assert (
        refused.status_code == 400 and "confirm your e-mail address" in refused.json()["email"][0]
    )
    page = client.post(
        "/submit/",
        {"model_name": "New VLM", "kind": "open-weights", "bundle": _file(small)},
    )
    assert page.status_code == 400 and "confirm your e-mail address" in page.content.decode()
    assert not Submission.objects.exists()
    # A tampered link confirms nothing.
    assert client.get(path[:-3] + "xx/").status_code == 400
    assert EmailConfirmation.objects.get().confirmed is None
    confirmed = client.get(path)
    assert confirmed.status_code == 200 and "Address confirmed" in confirmed.content.decode()
    assert EmailConfirmation.objects.get().confirmed is not None
    assert "Confirm your e-mail address" not in client.get("/accounts/profile/").content.decode()
    assert _upload(client, small).status_code == 201


def _file(content: bytes):
    bundle = io.BytesIO(content)
    bundle.name = "b.jsonl"
    return bundle


def test_an_unconfirmed_user_cannot_start_a_hosted_run(client, mailoutbox):
    from django.contrib.auth.models import Permission

    from leaderboard.errors import FieldError
    from leaderboard.runs.services import hosted_run_create

    _signup(client)
    user = EmailConfirmation.objects.get().user
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    with pytest.raises(FieldError) as refused:
        hosted_run_create(user=user, data={"provider": "openai", "model": "m", "levels": [0]})
    assert refused.value.field == "email"
    assert Run.objects.count() == 0


def test_a_link_for_an_address_the_account_no_longer_has_confirms_nothing(client, mailoutbox):
    _signup(client)
    path = LINK.search(mailoutbox[0].body).group(1)
    row = EmailConfirmation.objects.get()
    row.user.email = "other@example.org"
    row.user.save()
    assert client.get(path).status_code == 400
    assert EmailConfirmation.objects.get().confirmed is None


def test_an_unconfirmed_address_gets_no_reset_mail(client, mailoutbox):
    _signup(client)
    client.logout()
    mailoutbox.clear()
    answer = _reset(client, "new@example.org")
    assert answer.status_code == 302 and answer["Location"] == "/accounts/password_reset/done/"
    assert mailoutbox == []
    # Confirmed, it does.
    path = LINK.search(_resend_mail(client, mailoutbox)).group(1)
    client.logout()
    client.get(path)
    mailoutbox.clear()
    _reset(client, "new@example.org")
    assert len(mailoutbox) == 1 and "/accounts/reset/" in mailoutbox[0].body


def _resend_mail(client, mailoutbox) -> str:
    client.force_login(EmailConfirmation.objects.get(user__username="newcomer").user)
    mailoutbox.clear()
    assert client.post("/accounts/confirm-again/").status_code == 200
    return mailoutbox[-1].body


def test_the_reset_mails_for_one_address_are_bounded_and_the_page_says_the_same(
    client, settings, mailoutbox
):
    settings.MIRRORBENCH_MAIL_RATE = "3/hour"
    UserFactory(username="alice", email="alice@example.org")
    answers = [_reset(client, "alice@example.org", REMOTE_ADDR=f"198.51.100.{n}") for n in range(5)]
    assert len(mailoutbox) == 3  # the fourth and fifth send nothing
    assert {(a.status_code, a["Location"]) for a in answers} == {
        (302, "/accounts/password_reset/done/")
    }
    unknown = _reset(client, "nobody@example.org")
    assert (unknown.status_code, unknown["Location"]) == (302, "/accounts/password_reset/done/")
    done = client.get("/accounts/password_reset/done/").content.decode()
    assert "If an account has that address" in done
    assert len(mailoutbox) == 3


def test_reset_mails_from_one_client_are_bounded(client, settings, mailoutbox):
    settings.MIRRORBENCH_MAIL_CLIENT_RATE = "4/hour"
    for n in range(6):
        UserFactory(username=f"user{n}", email=f"user{n}@example.org")
    for n in range(6):
        _reset(client, f"user{n}@example.org", REMOTE_ADDR="203.0.113.9")
    assert len(mailoutbox) == 4
    _reset(client, "user5@example.org", REMOTE_ADDR="203.0.113.10")  # another client may
    assert len(mailoutbox) == 5


def test_mails_to_one_account_are_bounded_whatever_address_and_kind(client, settings, mailoutbox):
    """Confirmation mails and reset mails count together per account."""
    settings.MIRRORBENCH_MAIL_RATE = "2/hour"
    _signup(client)  # one confirmation mail
    assert len(mailoutbox) == 1
    assert client.post("/accounts/confirm-again/", REMOTE_ADDR="198.51.100.1").status_code == 200
    assert len(mailoutbox) == 2
    again = client.post("/accounts/confirm-again/", REMOTE_ADDR="198.51.100.2")
    assert again.status_code == 429 and "No mail was sent" in again.content.decode()
    assert len(mailoutbox) == 2


def test_accounts_made_by_staff_count_as_confirmed(client, mailoutbox, small, settings, tmp_path):
    """No row: made in the admin or by createsuperuser (or before sign-ups confirmed)."""
    from leaderboard.accounts.mail import email_confirmed

    settings.MEDIA_ROOT = tmp_path / "media"
    alice = UserFactory(username="alice", email="alice@example.org")
    assert email_confirmed(alice) and not EmailConfirmation.objects.exists()
    client.force_login(alice)
    assert _upload(client, small).status_code == 201
    _reset(client, "alice@example.org")
    assert len(mailoutbox) == 1


def test_the_access_log_never_shows_a_confirmation_token():
    from mirrorbench_site.access_log import redact

    assert redact("GET /accounts/confirm/eyJ1Ijo1fQ:1abc:sig/ HTTP/1.1") == (
        "GET /accounts/confirm/[token]/ HTTP/1.1"
    )


def test_the_page_offers_nothing_new_to_a_confirmed_user(client):
    alice = UserFactory(username="alice", email="alice@example.org")
    client.force_login(alice)
    assert "Send the link again" not in client.get("/accounts/profile/").content.decode()
    assert client.post("/accounts/confirm-again/").status_code == 302
