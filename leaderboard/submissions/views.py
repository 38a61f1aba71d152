"""Submission pages: the upload form, a submission, publishing, review, the moderation queue."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from leaderboard.accounts.roles import is_moderator
from leaderboard.errors import FieldError
from leaderboard.models import Submission
from leaderboard.submissions.forms import ReviewForm, SubmissionForm
from leaderboard.submissions.selectors import (
    moderation_queue,
    submission_visible,
    submission_warnings,
)
from leaderboard.submissions.services import (
    QuotaExceeded,
    SubmissionRejected,
    submission_create,
    submission_publish,
    submission_review,
)
from leaderboard.throttles import throttled_post

VERIFIED_MEANS = (
    "Verified means the server replayed every action of every episode through the dynamics "
    "and recomputed every distance and metric: the bundle is consistent. It does not prove "
    "which model produced the answers."
)
SUBMITTED = (
    "The bundle verified and is stored as a private run of yours. Publish it for review "
    "(below) when you want it on the board."
)
"""What the submission page says after an upload (the play page's Human set says it too)."""
REVIEWED = {
    "approve": "Approved: {model} is on the board.",
    "approve-partial": "Approved: {model} is public but off the board, as a partial bundle "
    "whose listing you did not allow.",
    "refuse": "Refused: {model} stays private; its owner reads your note.",
    "flag": "Flagged: {model} is off the board, with your note on its model page.",
}
"""What the review queue says after a decision."""


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
            messages.success(request, SUBMITTED)
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
    if not submission.partial:
        # A complete bundle is listed when approved: there is nothing to allow.
        review_form.fields.pop("allow_partial", None)
    moderating = is_moderator(request.user) and submission.owner_id != request.user.pk
    return {
        "submission": submission,
        "is_owner": submission.owner_id == request.user.pk,
        "review_form": review_form,
        "verified_means": VERIFIED_MEANS,
        "warnings": submission_warnings(submission=submission) if moderating else [],
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
    messages.success(
        request,
        "Published for review: a moderator will look at it. It stays private until it is "
        "approved; this page shows the decision.",
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
            submission = submission_review(
                submission=submission,
                moderator=request.user,
                decision=form.cleaned_data["decision"],
                note=form.cleaned_data["note"],
                allow_partial=form.cleaned_data["allow_partial"],
            )
        except FieldError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            decision = form.cleaned_data["decision"]
            if decision == "approve" and submission.partial and not submission.allow_partial:
                decision = "approve-partial"
            messages.success(request, REVIEWED[decision].format(model=submission.model_name))
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
