"""Pages and CSV downloads: validate the query, call one selector, render."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from evaluation.metrics import METRICS, TRACKS
from evaluation.registry import PROVIDERS
from leaderboard import chart_views
from leaderboard.exports import csv_response
from leaderboard.forms import HostedEvaluationForm, LeaderboardQueryForm
from leaderboard.models import ModelEntry, Run
from leaderboard.selectors import (
    CSV_COLUMNS,
    SCORE_COLUMNS,
    LeaderboardFilters,
    hosted_run_estimate,
    key_column,
    leaderboard_table,
    model_entry_detail,
    run_avg_by_level,
    run_bundle,
    run_endpoint,
    run_owned,
    run_progress,
    run_tables,
    run_visible,
    tracks_page,
)
from leaderboard.services.data_version import data_version_cached
from leaderboard.services.errors import FieldError
from leaderboard.services.runs import hosted_run_create, run_cancel
from leaderboard.throttles import throttled_post
from simulation.versions import BENCHMARK_VERSION, RETIRED_VERSIONS

ACTIVE = (Run.Status.PENDING, Run.Status.RUNNING)

TABS = [
    ("overall", "Overall"),
    ("0", "Level 0"),
    ("1", "Level 1"),
    ("2", "Level 2"),
    ("3", "Level 3"),
]
LEVEL_TITLES = {
    "overall": "Overall results (Table II): the mean of the four levels",
    "0": "Level 0 (Table IV): mirror disclosed, with a reasoning template",
    "1": "Level 1 (Table V): mirror disclosed, no template",
    "2": "Level 2 (Table VI): the mirror is never mentioned",
    "3": "Level 3 (Table VII): neither the mirror nor the body is mentioned",
}


def _bad_request(request: HttpRequest, form: LeaderboardQueryForm) -> HttpResponse:
    return render(
        request, "leaderboard/bad_request.html", {"errors": form.errors.items()}, status=400
    )


def _csv_bad_request(form: LeaderboardQueryForm) -> HttpResponse:
    return HttpResponse(form.error_text() + "\n", status=400, content_type="text/plain")


def _csv_url(table: str) -> str:
    if table == "overall":
        return reverse("leaderboard:overall-csv")
    return reverse("leaderboard:level-csv", kwargs={"table": table})


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def filters_query(filters: LeaderboardFilters) -> QueryDict:
    """Return the shortest query that gives ``filters``: what a table page's links keep.

    A cached table is keyed by its validated filters, never by the query string as sent, so
    unknown parameters and other spellings of the same filters (``?x=1``, ``params_min=1.0``)
    share one cached copy, whose links carry this query only.
    """
    query = QueryDict(mutable=True)
    query.setlist("kind", sorted(set(filters.kinds)))
    query.setlist("source", sorted(set(filters.sources)))
    for name, number in (("params_min", filters.params_min), ("params_max", filters.params_max)):
        if number is not None:
            query[name] = _number(number)
    if filters.q:
        query["q"] = filters.q
    if filters.sort != "rank":
        query["sort"] = filters.sort
    if filters.descending != (filters.sort not in ("rank", "model")):
        query["order"] = "desc" if filters.descending else "asc"
    if filters.version != BENCHMARK_VERSION:
        query["version"] = filters.version
    if filters.renderer:
        query["rendered_by"] = filters.renderer
    if filters.baselines:
        query["baselines"] = "show"
    if filters.intervals:
        query["ci"] = "show"
    return query


def _key_label(sort: str) -> str:
    column = key_column(sort)
    if column == "cognitive_stability":
        return "CS"
    track, metric = column.split("_")
    return f"{track.capitalize()} {metric.upper()}"


def _active_filters(filters: LeaderboardFilters) -> int:
    return sum(
        [
            len(filters.kinds),
            len(filters.sources),
            filters.params_min is not None,
            filters.params_max is not None,
            bool(filters.q),
            filters.version != BENCHMARK_VERSION,
            filters.baselines,
            filters.intervals,
        ]
    )


def leaderboard_page(request: HttpRequest, table: str = "overall") -> HttpResponse:
    form = LeaderboardQueryForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    filters = form.filters()
    query = filters_query(filters)

    def board_html() -> str:
        # The page below the header is the same for every visitor: rendered once per data
        # version and query, then served from the cache (the header, with the user, is not).
        board = leaderboard_table(table=table, filters=filters)
        context = {
            "form": form,
            "filters": filters,
            "table": table,
            "title": LEVEL_TITLES[table],
            "tabs": TABS,
            "rows": board.rows(),
            "shown": len(board.frame),
            "total": board.total,
            "hidden": board.hidden,
            "key_label": _key_label(filters.sort),
            "active_filters": _active_filters(filters),
            "tracks": TRACKS,
            "metrics": METRICS,
            "columns": SCORE_COLUMNS,
            "csv_url": _csv_url(table),
            "query": query.urlencode(),
            "board_query": query,
            **_version_context(filters.version),
        }
        return render_to_string("leaderboard/_board.html", context, request=request)

    html = data_version_cached("board", (table, filters), board_html)
    context = {"board": mark_safe(html), "table": table}
    return render(request, "leaderboard/table.html", context)


def _version_context(version: str) -> dict[str, object]:
    """What a table page says about the benchmark version it ranks."""
    return {
        "version": version,
        "current_version": BENCHMARK_VERSION,
        "versions": [BENCHMARK_VERSION, *RETIRED_VERSIONS],
        "retired_reason": RETIRED_VERSIONS.get(version),
    }


def leaderboard_csv(request: HttpRequest, table: str = "overall") -> HttpResponse:
    form = LeaderboardQueryForm(request.GET)
    if not form.is_valid():
        return _csv_bad_request(form)
    filters = form.filters()
    rows = data_version_cached(
        "csv",
        (table, filters),
        lambda: leaderboard_table(table=table, filters=filters).csv_rows(),
    )
    name = "overall" if table == "overall" else f"level-{table}"
    return csv_response(f"mirrorbench-{name}.csv", CSV_COLUMNS, rows)


def _tracks_sources(request: HttpRequest) -> tuple[LeaderboardQueryForm, tuple[str, ...], str]:
    form = LeaderboardQueryForm(request.GET)
    if not form.is_valid():
        return form, (), BENCHMARK_VERSION
    filters = form.filters()
    return form, filters.sources, filters.version


def tracks(request: HttpRequest) -> HttpResponse:
    form, sources, version = _tracks_sources(request)
    if form.errors:
        return _bad_request(request, form)
    page = tracks_page(sources=sources, version=version)
    context = {
        "page": page,
        "form": form,
        "levels": ["0", "1", "2", "3"],
        "tabs": TABS,
        "table": "tracks",
        "query": request.GET.urlencode(),
        "chart": chart_views.tracks_chart(page=page, request=request),
        **_version_context(version),
    }
    return render(request, "leaderboard/tracks.html", context)


def tracks_csv(request: HttpRequest) -> HttpResponse:
    form, sources, version = _tracks_sources(request)
    if form.errors:
        return _csv_bad_request(form)
    page = tracks_page(sources=sources, version=version)
    rows = []
    for level in ("0", "1", "2", "3", "avg"):
        cells = page.table_iii.get(level) or {}
        rows.append([level, *(cells.get(track) for track in TRACKS)])
    return csv_response("mirrorbench-tracks.csv", ["level", *TRACKS], rows)


def model_page(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        entry = model_entry_detail(slug=slug)
    except ModelEntry.DoesNotExist:
        raise Http404(f"no model entry {slug!r}") from None
    from leaderboard.replay_selectors import run_behaviour_rows

    runs = [
        {"run": run, "tables": run_tables(run), "behaviour": run_behaviour_rows(run)}
        for run in entry.runs.all()
    ]
    context = {"entry": entry, "runs": runs, "metrics": METRICS, "tracks": TRACKS}
    context.update(chart_views.model_charts_context(entry=entry))
    return render(request, "leaderboard/model.html", context)


def run_page(request: HttpRequest, run_id: int) -> HttpResponse:
    from leaderboard.replay_selectors import run_behaviour_rows
    from leaderboard.replay_views import CONFUSION_TEXT, run_episode_list

    try:
        run = run_visible(run_id=run_id, user=request.user)
    except Run.DoesNotExist:
        raise Http404(f"no run {run_id} that you may see") from None
    episodes = run_episode_list(request, run)
    if "episode_errors" in episodes:
        return render(
            request,
            "leaderboard/bad_request.html",
            {"errors": episodes["episode_errors"].items()},
            status=400,
        )
    context = {
        "run": run,
        **episodes,
        "behaviour": run_behaviour_rows(run),
        "confusion_text": CONFUSION_TEXT,
        "avg_by_level": run_avg_by_level(run=run),
        "active": run.status in ACTIVE,
        "can_cancel": run.status in ACTIVE
        and request.user.is_authenticated
        and run.owner_id == request.user.pk,
        "progress": run_progress(run=run),
        "endpoint": run_endpoint(run=run, user=request.user),
    }
    return render(request, "leaderboard/run.html", context)


def run_progress_json(request: HttpRequest, run_id: int) -> JsonResponse:
    try:
        run = run_visible(run_id=run_id, user=request.user)
    except Run.DoesNotExist:
        raise Http404(f"no run {run_id} that you may see") from None
    return JsonResponse({**run_progress(run=run), "avg_by_level": run_avg_by_level(run=run)})


@require_POST
@login_required
@throttled_post("cancels")
def run_cancel_view(request: HttpRequest, run_id: int) -> HttpResponse:
    try:
        run = run_owned(run_id=run_id, user=request.user)
    except Run.DoesNotExist:
        raise Http404(f"no run {run_id} of yours") from None
    run_cancel(run=run)
    return redirect("leaderboard:run", run_id=run_id)


def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``, which browsers ask for unprompted: the site's SVG icon."""
    from django.templatetags.static import static

    return redirect(static("favicon.svg"), permanent=True)


ABOUT_SCENES = 4
"""Start views shown on the About page: the first scene of two people and two robots."""


def about(request: HttpRequest) -> HttpResponse:
    from evaluation.bundle import benchmark_version
    from leaderboard.replay_selectors import frame_urls, gallery
    from leaderboard.selectors import gallery_scenes
    from leaderboard.services.frames import FrameSpec, frames_register
    from simulation.render import DEFAULT_SIZE

    picked: list[Any] = []
    bodies: set[str] = set()
    for scene in gallery_scenes():
        per_track = sum(1 for s in picked if s.track == scene.track)
        if scene.body not in bodies and per_track < ABOUT_SCENES // 2:
            picked.append(scene)
            bodies.add(scene.body)
    # Only registered frames are served (and rendered when first asked for).
    frames_register([FrameSpec(scene, (0, 0, 0), DEFAULT_SIZE) for scene in picked])
    examples = [
        {"scene": item.scene, "urls": frame_urls(item.start)}
        for item in gallery(scenes=picked, size=DEFAULT_SIZE)
    ]
    context = {
        "metrics": METRICS,
        "examples": examples,
        "protocol": benchmark_version(),
        "site": request.build_absolute_uri("/").rstrip("/"),
    }
    return render(request, "leaderboard/about.html", context)


def _estimate(form: HostedEvaluationForm) -> dict[str, object] | None:
    """Return the cost estimate for the form's levels and scenes (its defaults when unbound)."""
    data = form.data if isinstance(form.data, QueryDict) else QueryDict()
    provider = data.get("provider") or "openai"
    chosen = data.getlist("levels") if "levels" in data else ["0", "1", "2", "3"]
    levels = sorted({int(v) for v in chosen if v in ("0", "1", "2", "3")})
    scenes = data.get("scenes") or "all"
    if provider not in PROVIDERS or scenes not in dict(HostedEvaluationForm.SCENE_SETS):
        return None
    estimate = hosted_run_estimate(
        provider=provider, model=(data.get("model") or "").strip(), levels=levels, scenes=scenes
    )
    return {**estimate.as_dict(), "provider": provider}


def evaluate_estimate_json(request: HttpRequest) -> JsonResponse:
    """``/evaluate/estimate.json?provider=&model=&levels=&scenes=``: the page's live estimate."""
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
            run = hosted_run_create(user=request.user, data=form.cleaned_data)
        except FieldError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            return redirect("leaderboard:run", run_id=run.pk)
        status = 400
    elif request.method == "POST":
        status = 400
    context = {
        "form": form,
        "allowed": allowed,
        "estimate": _estimate(form) if allowed else None,
        "prices": bool(settings.MIRRORBENCH_PRICES),
        "caps": {
            "active": settings.MIRRORBENCH_MAX_ACTIVE_RUNS,
            "daily": settings.MIRRORBENCH_MAX_EPISODES_PER_DAY,
        },
    }
    return render(request, "leaderboard/evaluate.html", context, status=status)


def run_bundle_download(request: HttpRequest, run_id: int) -> HttpResponse:
    try:
        run = run_visible(run_id=run_id, user=request.user)
    except Run.DoesNotExist:
        raise Http404(f"no run {run_id} that you may see") from None
    if run.source == Run.Source.REPORTED:
        raise Http404("results reported in the paper have no episodes to download")
    lines = "".join(
        json.dumps(r, separators=(",", ":")) + "\n" for r in run_bundle(run=run, user=request.user)
    )
    response = HttpResponse(lines, content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="mirrorbench-run-{run.pk}.jsonl"'
    return response
