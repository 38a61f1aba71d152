"""Writes: the mail the site sends to accounts, and the confirmation of sign-up addresses.

Every mail (a password reset, an address confirmation) is bounded three ways, in fixed periods
(``services.limits.counters_take``): per client address (``MIRRORBENCH_MAIL_CLIENT_RATE``,
counted first, so a client past its rate spends nobody else's), per e-mail address and per
account (``MIRRORBENCH_MAIL_RATE`` each). A request past a rate sends nothing, and the page
says the same as when a mail went, so nobody learns which addresses have accounts.

Sign-up confirms the address: the account gets an unconfirmed ``EmailConfirmation`` and a
mail with a signed link (``confirmation_token``, valid ``CONFIRM_MAX_AGE_S``). Until the link is
followed the account may browse and play but not upload, submit or evaluate
(``confirmed_email_required``), and password resets are not mailed to the address.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import signing
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from leaderboard.errors import FieldError
from leaderboard.models import EmailConfirmation
from leaderboard.runs.limits import counters_take

SALT = "mirrorbench.email-confirmation"
CONFIRM_MAX_AGE_S = 3 * 86_400
"""How long a confirmation link works."""


def mail_allowed(*, email: str, client: str | None, user_id: int | None = None) -> bool:
    """Count one mail to ``email`` (and the account ``user_id``) asked for by ``client``.

    False when the client, the address or the account is past its rate: send nothing then.
    """
    keys = []
    if client:
        keys.append((f"mail:client:{client}", settings.MIRRORBENCH_MAIL_CLIENT_RATE))
    keys.append((f"mail:address:{email.strip().lower()}", settings.MIRRORBENCH_MAIL_RATE))
    if user_id is not None:
        keys.append((f"mail:account:{user_id}", settings.MIRRORBENCH_MAIL_RATE))
    return counters_take(keys)


def email_confirmed(user: Any) -> bool:
    """Whether ``user``'s address is confirmed (accounts that did not sign up count as such)."""
    if not getattr(user, "is_authenticated", False):
        return False
    row = EmailConfirmation.objects.filter(user_id=user.pk).first()
    if row is None:
        return True
    return row.confirmed is not None and row.email.lower() == (user.email or "").lower()


def confirmed_email_required(user: Any) -> None:
    """Refuse an upload, submission or evaluation by an account whose address is unconfirmed.

    Raises:
        FieldError: ``email``, saying how to confirm it.
    """
    if email_confirmed(user):
        return
    raise FieldError(
        "email",
        "confirm your e-mail address first: follow the link we mailed to it when you signed up "
        "(your account page sends a new one). Until then you may browse and play, but not "
        "upload, submit or evaluate.",
    )


def confirmation_token(user: Any) -> str:
    """A signed, URL-safe token naming the account and the address it confirms."""
    return signing.dumps({"u": user.pk, "e": user.email}, salt=SALT, compress=True)


def confirmation_send(*, user: Any, client: str | None, base_url: str) -> bool:
    """Mark ``user``'s address unconfirmed (unless it is already) and mail the link to it.

    ``base_url`` is the site's scheme and host (``request.build_absolute_uri("/")``). Returns
    whether a mail went (False past a rate, or with no address to send to).
    """
    row, created = EmailConfirmation.objects.get_or_create(
        user=user, defaults={"email": user.email}
    )
    if not created and (row.email != user.email or row.confirmed is None):
        row.email, row.confirmed = user.email, None
        row.save(update_fields=["email", "confirmed"])
    elif not created:
        return False  # already confirmed
    if not user.email or not mail_allowed(email=user.email, client=client, user_id=user.pk):
        return False
    path = reverse("leaderboard:email-confirm", kwargs={"token": confirmation_token(user)})
    context = {
        "user": user,
        "link": base_url.rstrip("/") + path,
        "days": CONFIRM_MAX_AGE_S // 86400,
    }
    send_mail(
        render_to_string("registration/email_confirmation_subject.txt", context).strip(),
        render_to_string("registration/email_confirmation_email.txt", context),
        settings.DEFAULT_FROM_EMAIL,
        [user.email],
    )
    return True


def email_confirm(*, token: str) -> Any:
    """Confirm the address a link names; return its account.

    Raises:
        FieldError: ``token``: the link is altered, expired, or names an address the account
            no longer has.
    """
    invalid = FieldError(
        "token",
        f"this confirmation link is not valid, or is older than {CONFIRM_MAX_AGE_S // 86400} "
        "days: sign in and send a new one from your account page",
    )
    try:
        data = signing.loads(token, salt=SALT, max_age=CONFIRM_MAX_AGE_S)
    except signing.BadSignature:  # SignatureExpired is one too
        raise invalid from None
    if not isinstance(data, dict) or not isinstance(data.get("u"), int):
        raise invalid
    row = EmailConfirmation.objects.select_related("user").filter(user_id=data["u"]).first()
    email = str(data.get("e") or "").lower()
    if row is None or row.email.lower() != email or (row.user.email or "").lower() != email:
        raise invalid
    if row.confirmed is None:
        row.confirmed = timezone.now()
        row.save(update_fields=["confirmed"])
    return row.user
