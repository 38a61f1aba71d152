"""Pages of runs: a run, its progress, cancelling, its bundle, the evaluate form, estimates."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST

from evaluation.config import MAX_REPEATS, RunConfigError
from evaluation.registry import PROVIDERS
from evaluation.vocabulary import CONDITIONS, LEVEL_KEYS, MAIN_CONDITION, condition_label
from leaderboard.boards.costs import run_cost
from leaderboard.errors import FieldError
from leaderboard.exports import csv_response
from leaderboard.models import Run
from leaderboard.replays.selectors import run_behaviour_rows
from leaderboard.replays.views import CONFUSION_TEXT
from leaderboard.runs.details import run_details_table, run_details_zip
from leaderboard.runs.eee import run_eee
from leaderboard.runs.endpoints import refusal_text
from leaderboard.runs.episodes import run_episode_cards, run_episode_list
from leaderboard.runs.forms import HostedEvaluationForm, RerunErroredForm
from leaderboard.runs.run_files import run_config_file, run_has_config
from leaderboard.runs.selectors import (
    hosted_runs_estimate,
    run_avg_by_level,
    run_bundle,
    run_endpoint,
    run_error_counts,
    run_errors_hold_ranking,
    run_for,
    run_manageable,
    run_progress,
)
from leaderboard.runs.services import hosted_runs_create, run_cancel, run_errored_rerun
from leaderboard.throttles import throttled_post

ACTIVE = (Run.Status.PENDING, Run.Status.RUNNING)


def _run_seen(request: HttpRequest, run_id: int) -> Run:
    """The run ``run_id`` if the request's user may see it; else 404 (never saying whether a
    private run exists)."""
    try:
        return run_for(run_id=run_id, user=request.user)
    except Run.DoesNotExist:
        raise Http404(f"no run {run_id} that you may see") from None


def _run_with_episodes(request: HttpRequest, run_id: int) -> Run:
    """``_run_seen``, and one with episodes to download (not the paper's reported numbers)."""
    run = _run_seen(request, run_id)
    if run.source == Run.Source.REPORTED:
        raise Http404("results reported in the paper have no episodes to download")
    return run


def run_page(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _run_seen(request, run_id)
    episodes = run_episode_list(request, run)
    if "episode_errors" in episodes:
        return render(
            request,
            "leaderboard/bad_request.html",
            {"errors": episodes["episode_errors"].items()},
            status=400,
        )
    return render(request, "leaderboard/run.html", _run_context(request, run, episodes))


def _run_errors_context(
    request: HttpRequest, run: Run, form: RerunErroredForm | None = None
) -> dict[str, Any]:
    """The run page's errored-episodes section: counts, whether they hold the ranking, and the
    re-run form for those who may manage the run."""
    counts = run_error_counts(run=run)
    can_rerun = (
        run.status == Run.Status.COMPLETED
        and run.source == Run.Source.EVALUATED
        and counts.errored > 0
        and run_manageable(run=run, user=request.user)
    )
    return {
        "run_errors": counts,
        "errors_hold": run_errors_hold_ranking(run=run, counts=counts),
        "errors_share": f"{counts.share:.1%}",
        "errors_limit": f"{settings.MIRRORBENCH_MAX_ERRORED_SHARE:.1%}",
        # A refused POST shows its form with the reasons, whatever the run's state.
        "rerun_form": form if form is not None else (RerunErroredForm() if can_rerun else None),
        # A hosted model run's key was erased when it ended; a baseline needs none.
        "rerun_needs_key": can_rerun
        and run.owner_id is not None
        and run.config is not None
        and run.config.agent_spec.is_model,
    }


def _run_context(
    request: HttpRequest,
    run: Run,
    episodes: dict[str, Any],
    rerun_form: RerunErroredForm | None = None,
) -> dict[str, Any]:
    return {
        "run": run,
        **episodes,
        **_run_errors_context(request, run, rerun_form),
        "behaviour": run_behaviour_rows(run),
        "confusion_text": CONFUSION_TEXT,
        "avg_by_level": run_avg_by_level(run=run),
        "active": run.status in ACTIVE,
        "can_cancel": run.status in ACTIVE and run_manageable(run=run, user=request.user),
        "progress": run_progress(run=run),
        "endpoint": run_endpoint(run=run, user=request.user),
        "run_file": run_has_config(run=run),
        "cost": run_cost(run=run),
    }


def run_progress_json(request: HttpRequest, run_id: int) -> JsonResponse:
    """A run's progress; with ``episodes=ID,ID,...`` (a page's unfinished cards), those cards
    as the run page shows them (``cards``: id -> HTML), for a live page to swap in."""
    run = _run_seen(request, run_id)
    progress = run_progress(run=run)
    data = {
        **progress,
        "status_label": run.get_status_display(),
        "avg_by_level": run_avg_by_level(run=run),
    }
    wanted = [int(v) for v in request.GET.get("episodes", "").split(",") if v.isdigit()]
    if wanted:
        data["cards"] = {
            e.pk: render_to_string(
                "leaderboard/_episode_card.html",
                {"e": e, "thumb": thumb, "run": run},
                request=request,
            )
            for e, thumb in run_episode_cards(run, wanted)
        }
    return JsonResponse(data)


@require_POST
@login_required
@throttled_post("cancels")
def run_cancel_view(request: HttpRequest, run_id: int) -> HttpResponse:
    try:
        run = run_for(run_id=run_id, user=request.user, manage=True)
    except Run.DoesNotExist:
        raise Http404(f"no run {run_id} that you may cancel") from None
    if run_cancel(run=run):
        messages.success(
            request, f"Run {run_id} cancelled: episodes in flight stop at their next step."
        )
    else:
        messages.info(request, f"Run {run_id} had already ended: nothing to cancel.")
    return redirect("leaderboard:run", run_id=run_id)


@require_POST
@login_required
@throttled_post("cancels")
def run_rerun_errored_view(request: HttpRequest, run_id: int) -> HttpResponse:
    """Play a completed run's errored episodes again (its owner or a moderator)."""
    try:
        run = run_for(run_id=run_id, user=request.user, manage=True)
    except Run.DoesNotExist:
        raise Http404(f"no run {run_id} that you may re-run") from None
    form = RerunErroredForm(request.POST)
    if form.is_valid():
        try:
            count = run_errored_rerun(run=run, api_key=form.cleaned_data["api_key"])
        except FieldError as exc:
            if exc.field in form.fields:
                form.add_error(exc.field, exc.message)
            else:
                form.add_error(None, f"{exc.field}: {exc.message}")
        else:
            if count:
                messages.success(
                    request,
                    f"{count} errored episodes of run {run_id} are queued to be played again; "
                    "the completed ones are kept.",
                )
            else:
                messages.info(
                    request,
                    f"Run {run_id} has no errored episode to re-run, or is re-running them.",
                )
            return redirect("leaderboard:run", run_id=run_id)
    episodes = run_episode_list(request, run)
    context = _run_context(request, run, episodes, rerun_form=form)
    return render(request, "leaderboard/run.html", context, status=400)


def run_errors_csv(request: HttpRequest, run_id: int) -> HttpResponse:
    """A run's errored episodes by category and its refused steps by kind, one row each."""
    run = _run_seen(request, run_id)
    counts = run_error_counts(run=run)
    rows: list[list[Any]] = [
        ["episodes", "finished", "", counts.episodes, 1.0 if counts.episodes else 0.0],
        ["episodes", "errored", "", counts.errored, round(counts.share, 4)],
    ]
    for category, label, n in counts.categories():
        share = round(n / counts.episodes, 4) if counts.episodes else 0.0
        rows.append(["errored_episodes", category, label, n, share])
    for kind, label, n in counts.refusals():
        rows.append(["refused_steps", kind, label, n, None])
    return csv_response(
        f"run-{run.pk}-errors.csv", ["what", "kind", "label", "count", "share"], rows
    )


def _estimate(form: HostedEvaluationForm) -> dict[str, object] | None:
    """Return the cost estimate for the form's levels, scenes, repeats and conditions (its
    defaults when unbound): each condition's run and their total."""
    data = form.data if isinstance(form.data, QueryDict) else QueryDict()
    provider = data.get("provider") or "openai"
    chosen = data.getlist("levels") if "levels" in data else LEVEL_KEYS
    levels = sorted({int(v) for v in chosen if v in LEVEL_KEYS})
    scenes = data.get("scenes") or "all"
    chosen_conditions = data.getlist("conditions") or data.getlist("condition")
    conditions = [c for c in CONDITIONS if c in chosen_conditions] or [MAIN_CONDITION]
    if provider not in PROVIDERS or scenes not in dict(HostedEvaluationForm.SCENE_SETS):
        return None
    estimate = hosted_runs_estimate(
        provider=provider,
        model=(data.get("model") or "").strip(),
        levels=levels,
        scenes=scenes,
        repeats=_repeats(data.get("repeats")),
        conditions=conditions,
    )
    return {**estimate, "provider": provider}


def _repeats(value: str | None) -> int:
    """The estimate's repeats: the form's, within 1 and ``MAX_REPEATS``; 1 when unreadable."""
    try:
        return min(max(int(value or 1), 1), MAX_REPEATS)
    except ValueError:
        return 1


def evaluate_estimate_json(request: HttpRequest) -> JsonResponse:
    """``/evaluate/estimate.json?provider=&model=&levels=&scenes=&repeats=&conditions=``: the
    page's live estimate (``conditions`` repeated, one per condition)."""
    form = HostedEvaluationForm(request.GET)
    return JsonResponse(_estimate(form) or {"error": "unknown provider or scene set"})


@throttled_post("evaluations")
def evaluate_page(request: HttpRequest) -> HttpResponse:
    """Hosted evaluation: the form for users with ``leaderboard.add_run``; for everyone else,
    who may evaluate and how to get access (a POST without the permission is refused)."""
    allowed = request.user.has_perm("leaderboard.add_run")
    if request.method == "POST" and not allowed:
        raise PermissionDenied("hosted evaluation needs the leaderboard.add_run permission")
    form = HostedEvaluationForm(request.POST or None)
    status = 200
    if request.method == "POST" and "estimate" in request.POST:
        form.is_valid()  # show the estimate for the choices made, and what is still missing
    elif request.method == "POST" and form.is_valid():
        try:
            created = hosted_runs_create(user=request.user, data=form.cleaned_data)
        except FieldError as exc:
            message = refusal_text(exc.message) if exc.field == "base_url" else exc.message
            field = "conditions" if exc.field == "condition" else exc.field
            form.add_error(field if field in form.fields else None, message)
        else:
            run, others = created[0], created[1:]
            named = bool(others) or run.condition != MAIN_CONDITION
            which = f" ({condition_label(run.condition).lower()})" if named else ""
            also = "".join(
                f"; run {other.pk} ({condition_label(other.condition).lower()}) is queued with "
                "it, on its own page"
                for other in others
            )
            messages.success(
                request,
                f"Run {run.pk}{which} is queued: this page follows it, and you may cancel it "
                f"here{also}. Your API key is erased when {'each run' if others else 'it'} ends.",
            )
            return redirect("leaderboard:run", run_id=run.pk)
        status = 400
    elif request.method == "POST":
        status = 400
    context = {
        "form": form,
        "allowed": allowed,
        # The key is never sent back (PasswordInput without render_value): say so.
        "key_dropped": request.method == "POST" and bool(request.POST.get("api_key")),
        "estimate": _estimate(form) if allowed else None,
        "prices": bool(settings.MIRRORBENCH_PRICES),
        "caps": {
            "active": settings.MIRRORBENCH_MAX_ACTIVE_RUNS,
            "daily": settings.MIRRORBENCH_MAX_EPISODES_PER_DAY,
        },
    }
    return render(request, "leaderboard/evaluate.html", context, status=status)


def run_bundle_download(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _run_with_episodes(request, run_id)
    lines = "".join(
        json.dumps(r, separators=(",", ":")) + "\n" for r in run_bundle(run=run, user=request.user)
    )
    response = HttpResponse(lines, content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="mirrorbench-run-{run.pk}.jsonl"'
    return response


def run_details_download(request: HttpRequest, run_id: int) -> HttpResponse:
    """``/runs/<id>/details.zip``: the run's episodes and steps as parquet, with a dataset card
    (docs/exports.md)."""
    run = _run_with_episodes(request, run_id)
    data = run_details_zip(run=run, user=request.user, absolute=request.build_absolute_uri)
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="mirrorbench-run-{run.pk}-details.zip"'
    return response


def run_details_parquet(request: HttpRequest, run_id: int, table: str) -> HttpResponse:
    """``/runs/<id>/details.parquet`` (episodes) and ``/runs/<id>/steps.parquet``: one table
    of the run's details, as in ``details.zip``, for tools that read a parquet address."""
    run = _run_with_episodes(request, run_id)
    data = run_details_table(
        run=run, user=request.user, absolute=request.build_absolute_uri, table=table
    )
    response = HttpResponse(data, content_type="application/vnd.apache.parquet")
    name = f"mirrorbench-run-{run.pk}-{table}.parquet"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def run_eee_download(request: HttpRequest, run_id: int) -> HttpResponse:
    """``/runs/<id>/eee.json``: the run's results as an Every Eval Ever aggregate
    (docs/exports.md), named for its place in the Every Eval Ever datastore."""
    run = _run_seen(request, run_id)
    export = run_eee(run=run, user=request.user, absolute=request.build_absolute_uri)
    response = HttpResponse(export.aggregate_json, content_type="application/json")
    name = export.aggregate_path.rsplit("/", 1)[-1]
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def run_eee_instances_download(request: HttpRequest, run_id: int) -> HttpResponse:
    """``/runs/<id>/eee-instances.jsonl``: the run's episodes as Every Eval Ever instance
    records, the samples file its ``eee.json`` names and checksums."""
    run = _run_with_episodes(request, run_id)
    export = run_eee(run=run, user=request.user, absolute=request.build_absolute_uri)
    if export.instances is None or export.instances_path is None:
        raise Http404(f"run {run_id} has no episodes")
    response = HttpResponse(export.instances, content_type="application/jsonl; charset=utf-8")
    name = export.instances_path.rsplit("/", 1)[-1]
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def run_config_download(request: HttpRequest, run_id: int) -> HttpResponse:
    """``/runs/<id>/run.toml``: the run's configuration, for ``mirrorbench run --config``."""
    run = _run_seen(request, run_id)
    try:
        text = run_config_file(run=run, user=request.user, absolute=request.build_absolute_uri)
    except (RunConfigError, ValueError):
        raise Http404(f"run {run_id} has no configuration that mirrorbench run repeats") from None
    response = HttpResponse(text, content_type="application/toml; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="run.toml"'
    return response
