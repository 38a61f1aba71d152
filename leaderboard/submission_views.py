"""Pages of accounts and submissions: sign-up, profile and tokens, upload, review, moderation."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from leaderboard.forms import ApiTokenForm, ReviewForm, SignUpForm, SubmissionForm
from leaderboard.models import Submission
from leaderboard.services.accounts import account_create
from leaderboard.services.errors import FieldError
from leaderboard.services.mail import confirmation_send, email_confirm, email_confirmed
from leaderboard.services.submissions import (
    QuotaExceeded,
    SubmissionRejected,
    submission_create,
    submission_publish,
    submission_review,
)
from leaderboard.services.tokens import api_token_create, api_token_revoke
from leaderboard.submission_selectors import (
    is_moderator,
    moderation_queue,
    submission_visible,
    user_submissions,
    user_tokens,
)
from leaderboard.throttles import throttled_post
from mirrorbench_site.client_ip import client_ip

VERIFIED_MEANS = (
    "Verified means the server replayed every action of every episode through the dynamics "
    "and recomputed every distance and metric: the bundle is consistent. It does not prove "
    "which model produced the answers."
)


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
                confirmation_send(
                    user=user, client=client_ip(request), base_url=request.build_absolute_uri("/")
                )
                login(request, user, backend="django.contrib.auth.backends.ModelBackend")
                return redirect("leaderboard:profile")
        return render(request, "registration/signup.html", {"form": form}, status=400)
    return render(request, "registration/signup.html", {"form": form})


def _profile_context(user: Any, token_form: ApiTokenForm) -> dict[str, Any]:
    return {
        "tokens": user_tokens(user=user),
        "submissions": user_submissions(user=user),
        "token_form": token_form,
        "is_moderator": is_moderator(user),
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
    return redirect("leaderboard:profile")


@login_required
@throttled_post("submissions")
def submit(request: HttpRequest) -> HttpResponse:
    form = SubmissionForm(request.POST or None, request.FILES or None)
    context: dict[str, Any] = {"form": form, "verified_means": VERIFIED_MEANS}
    if request.method != "POST":
        return render(request, "leaderboard/submit.html", context)
    if form.is_valid():
        upload = form.cleaned_data["bundle"]
        try:
            done = submission_create(
                user=request.user, chunks=upload.chunks(), data=form.cleaned_data
            )
        except QuotaExceeded as exc:
            context["quota"] = str(exc)
            return render(request, "leaderboard/submit.html", context, status=429)
        except FieldError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        except SubmissionRejected as exc:
            context["problems"], context["problem_total"] = exc.problems, exc.total
        else:
            return redirect("leaderboard:submission", submission_id=done.submission.pk)
    return render(request, "leaderboard/submit.html", context, status=400)


def _submission_for(request: HttpRequest, submission_id: int) -> Submission:
    try:
        return submission_visible(submission_id=submission_id, user=request.user)
    except Submission.DoesNotExist:
        raise Http404(f"no submission {submission_id} of yours") from None


def _submission_context(
    request: HttpRequest, submission: Submission, review_form: ReviewForm
) -> dict[str, Any]:
    return {
        "submission": submission,
        "is_owner": submission.owner_id == request.user.pk,
        "is_moderator": is_moderator(request.user),
        "review_form": review_form,
        "verified_means": VERIFIED_MEANS,
    }


@login_required
def submission_page(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission = _submission_for(request, submission_id)
    context = _submission_context(request, submission, ReviewForm())
    return render(request, "leaderboard/submission.html", context)


@require_POST
@login_required
@throttled_post("submissions")
def submission_publish_view(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission = _submission_for(request, submission_id)
    try:
        submission_publish(submission=submission, user=request.user)
    except FieldError as exc:
        return render(
            request,
            "leaderboard/bad_request.html",
            {"errors": [(exc.field, [exc.message])]},
            status=400,
        )
    return redirect("leaderboard:submission", submission_id=submission.pk)


@require_POST
@login_required
@throttled_post("reviews")
def submission_review_view(request: HttpRequest, submission_id: int) -> HttpResponse:
    if not is_moderator(request.user):
        raise PermissionDenied("only moderators review submissions")
    submission = _submission_for(request, submission_id)
    form = ReviewForm(request.POST)
    if form.is_valid():
        try:
            submission_review(
                submission=submission,
                moderator=request.user,
                decision=form.cleaned_data["decision"],
                note=form.cleaned_data["note"],
                allow_partial=form.cleaned_data["allow_partial"],
            )
        except FieldError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            return redirect("leaderboard:moderation")
    context = _submission_context(request, submission, form)
    return render(request, "leaderboard/submission.html", context, status=400)


@login_required
def moderation(request: HttpRequest) -> HttpResponse:
    if not is_moderator(request.user):
        raise PermissionDenied("only moderators see the review queue")
    return render(
        request,
        "leaderboard/moderation.html",
        {"queue": moderation_queue(), "verified_means": VERIFIED_MEANS},
    )
