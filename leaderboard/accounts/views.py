"""Account pages: sign-up, e-mail confirmation, the profile, API tokens."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from leaderboard.accounts.forms import ApiTokenForm, SignUpForm
from leaderboard.accounts.mail import confirmation_send, email_confirm, email_confirmed
from leaderboard.accounts.services import account_create
from leaderboard.errors import FieldError
from leaderboard.submissions.selectors import user_submissions, user_tokens
from leaderboard.submissions.tokens import api_token_create, api_token_revoke
from leaderboard.throttles import throttled_post
from mirrorbench_site.client_ip import client_ip


@throttled_post(
    "signups",
    counts=lambda response: response.status_code == 302,  # an account was made
    message="Too many sign-ups from your address: the site takes only a few accounts from "
    "one address in a while (MIRRORBENCH_SIGNUP_RATE).",
)
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("leaderboard:profile")
    form = SignUpForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                user = account_create(
                    username=data["username"], email=data["email"], password=data["password1"]
                )
            except FieldError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
            else:
                # Uploads, submissions and evaluations wait for the address to be confirmed.
                sent = confirmation_send(
                    user=user, client=client_ip(request), base_url=request.build_absolute_uri("/")
                )
                login(request, user, backend="django.contrib.auth.backends.ModelBackend")
                welcome = (
                    f"Welcome, {user.get_username()}: your account is made and you are signed in."
                )
                if sent:
                    welcome += f" A confirmation link is on its way to {user.email}."
                messages.success(request, welcome)
                return redirect("leaderboard:profile")
        return render(request, "registration/signup.html", {"form": form}, status=400)
    return render(request, "registration/signup.html", {"form": form})


def _profile_context(user: Any, token_form: ApiTokenForm) -> dict[str, Any]:
    return {
        "tokens": user_tokens(user=user),
        "submissions": user_submissions(user=user),
        "token_form": token_form,
        "email_confirmed": email_confirmed(user),
    }


def email_confirm_view(request: HttpRequest, token: str) -> HttpResponse:
    """The link mailed at sign-up: confirms the address it names (no sign-in needed)."""
    try:
        user = email_confirm(token=token)
    except FieldError as exc:
        context = {"error": exc.message}
        return render(request, "registration/email_confirmed.html", context, status=400)
    return render(request, "registration/email_confirmed.html", {"confirmed_user": user})


@require_POST
@login_required
def email_confirm_again(request: HttpRequest) -> HttpResponse:
    """Mail the confirmation link again (within the mail rates)."""
    if email_confirmed(request.user):
        return redirect("leaderboard:profile")
    sent = confirmation_send(
        user=request.user, client=client_ip(request), base_url=request.build_absolute_uri("/")
    )
    context = _profile_context(request.user, ApiTokenForm())
    context["confirmation_resent"] = sent
    return render(request, "leaderboard/profile.html", context, status=200 if sent else 429)


@login_required
def profile(request: HttpRequest) -> HttpResponse:
    return render(
        request, "leaderboard/profile.html", _profile_context(request.user, ApiTokenForm())
    )


@require_POST
@login_required
@throttled_post("tokens")
def token_create(request: HttpRequest) -> HttpResponse:
    form = ApiTokenForm(request.POST)
    if form.is_valid():
        try:
            new = api_token_create(user=request.user, name=form.cleaned_data["name"])
        except FieldError as exc:
            form.add_error("name", exc.message)
        else:
            context = _profile_context(request.user, ApiTokenForm())
            context["new_key"], context["new_token"] = new.key, new.token
            return render(request, "leaderboard/profile.html", context, status=201)
    context = _profile_context(request.user, form)
    return render(request, "leaderboard/profile.html", context, status=400)


@require_POST
@login_required
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    if not api_token_revoke(user=request.user, token_id=token_id):
        raise Http404("no such token of yours")
    messages.success(request, "Token revoked: requests that carry it are refused from now on.")
    return redirect("leaderboard:profile")
