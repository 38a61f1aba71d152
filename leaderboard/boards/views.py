"""Pages and CSV downloads of the boards: the leaderboards, the tracks, a model's page."""

from __future__ import annotations

import hashlib

import yaml
from django.conf import settings
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotModified,
    JsonResponse,
    QueryDict,
)
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe

from evaluation.details import parquet_bytes
from evaluation.vocabulary import (
    AVG,
    CONDITIONS,
    LEVEL_KEYS,
    LEVEL_SUMMARIES,
    MAIN_CONDITION,
    METRICS,
    OVERALL,
    PAPER_TABLES,
    TRACKS,
    condition_label,
    level_label,
    table_label,
)
from leaderboard.boards.badges import (
    DEFAULT_METRIC,
    UnknownMetric,
    model_badge,
    model_eval_results,
    model_hub_eval_results,
    model_share,
)
from leaderboard.boards.costs import price_table, run_cost
from leaderboard.boards.forms import LeaderboardQueryForm
from leaderboard.boards.selectors import (
    CSV_COLUMNS,
    SCORE_COLUMNS,
    LeaderboardFilters,
    MetadataFilters,
    board_export_records,
    board_export_table,
    key_column,
    leaderboard_table,
    leaderboard_table_cached,
    model_entry_detail,
    model_entry_list,
    tracks_page,
)
from leaderboard.charts import views as chart_views
from leaderboard.data_version import data_version_cached
from leaderboard.exports import csv_response
from leaderboard.mirror_use.selectors import model_mirror_use
from leaderboard.models import ModelEntry, Run
from leaderboard.replays.selectors import run_behaviour_rows
from leaderboard.runs.selectors import (
    run_tables,
)
from simulation.versions import BENCHMARK_VERSION, RETIRED_VERSIONS

TABS = [(table, table_label(table)) for table in (OVERALL, *LEVEL_KEYS)]
"""The boards' tabs: the overall board first."""


LEVEL_TITLES = {
    OVERALL: f"Overall results ({PAPER_TABLES[OVERALL]}): the mean of the four levels",
    **{
        key: f"{level_label(key)} ({PAPER_TABLES[key]}): {LEVEL_SUMMARIES[int(key)]}"
        for key in LEVEL_KEYS
    },
}


def _bad_request(request: HttpRequest, form: LeaderboardQueryForm) -> HttpResponse:
    return render(
        request, "leaderboard/bad_request.html", {"errors": form.errors.items()}, status=400
    )


def _csv_bad_request(form: LeaderboardQueryForm) -> HttpResponse:
    return HttpResponse(form.error_text() + "\n", status=400, content_type="text/plain")


def _csv_url(table: str) -> str:
    if table == OVERALL:
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
    _metadata_query(filters.metadata, query)
    return query


def _metadata_query(metadata: MetadataFilters, query: QueryDict) -> None:
    """Add the filters on the model entries' metadata to ``query``, in their shortest form."""
    query.setlist("organisation", list(metadata.organisations))
    for name, day in (
        ("released_from", metadata.released_from),
        ("released_to", metadata.released_to),
    ):
        if day is not None:
            query[name] = day.isoformat()
    query.setlist("reasoning", sorted(set(metadata.reasoning)))
    query.setlist("licence", list(metadata.licences))
    query.setlist("scaffold", sorted(set(metadata.scaffolds)))


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
            filters.metadata.active(),
        ]
    )


def leaderboard_page(request: HttpRequest, table: str = OVERALL) -> HttpResponse:
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
            "downloads": board_downloads(table, query),
            "suggestions": board.suggestions,
            "reasoning_choices": ModelEntry.Reasoning.choices,
            "scaffold_choices": ModelEntry.Scaffold.choices,
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


def leaderboard_csv(request: HttpRequest, table: str = OVERALL) -> HttpResponse:
    form = LeaderboardQueryForm(request.GET)
    if not form.is_valid():
        return _csv_bad_request(form)
    filters = form.filters()
    rows = data_version_cached(
        "csv",
        (table, filters),
        lambda: leaderboard_table(table=table, filters=filters).csv_rows(),
    )
    name = OVERALL if table == OVERALL else f"level-{table}"
    return csv_response(f"mirrorbench-{name}.csv", CSV_COLUMNS, rows)


def board_downloads(table: str, query: QueryDict) -> list[tuple[str, str]]:
    """Return a table's downloads, each as (label, address) with the view's filters: what the
    page shows as CSV, parquet and JSON."""
    encoded = query.urlencode()
    suffix = f"?{encoded}" if encoded else ""
    name = "overall" if table == OVERALL else f"level-{table}"
    return [
        ("CSV", _csv_url(table) + suffix),
        (
            "Parquet",
            reverse("leaderboard:board-export", kwargs={"name": name, "fmt": "parquet"}) + suffix,
        ),
        (
            "JSON",
            reverse("leaderboard:board-export", kwargs={"name": name, "fmt": "json"}) + suffix,
        ),
    ]


def leaderboard_export(request: HttpRequest, name: str, fmt: str) -> HttpResponse:
    """``/leaderboard/<overall|level-N>.<parquet|json>``: the rows of the CSV download with the
    same filters, as typed parquet or as JSON (``boards.selectors.board_export_frame``)."""
    table = OVERALL if name == OVERALL else name.removeprefix("level-")
    form = LeaderboardQueryForm(request.GET)
    if not form.is_valid():
        return _csv_bad_request(form)
    filters = form.filters()
    board = leaderboard_table_cached(table=table, filters=filters)
    filename = f"mirrorbench-{name}.{fmt}"
    if fmt == "parquet":
        response = HttpResponse(
            parquet_bytes(board_export_table(board)),
            content_type="application/vnd.apache.parquet",
        )
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
    document = {
        "table": table,
        "version": filters.version,
        "columns": CSV_COLUMNS,
        "rows": board_export_records(board),
    }
    response = JsonResponse(document, json_dumps_params={"ensure_ascii": False})
    response["Content-Disposition"] = f'inline; filename="{filename}"'
    return response


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
    baselines = form.filters().baselines
    page = tracks_page(sources=sources, version=version, baselines=baselines)
    context = {
        "page": page,
        "baselines": baselines,
        "form": form,
        "levels": LEVEL_KEYS,
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
    for level in (*LEVEL_KEYS, AVG):
        cells = page.table_iii.get(level) or {}
        rows.append([level, *(cells.get(track) for track in TRACKS)])
    return csv_response("mirrorbench-tracks.csv", ["level", *TRACKS], rows)


def model_page(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        entry = model_entry_detail(slug=slug)
    except ModelEntry.DoesNotExist:
        raise Http404(f"no model entry {slug!r}") from None

    public = list(entry.runs.all())
    # A control run stands beside the main runs, in the mirror-use section, never among them.
    listed = [r for r in public if r.condition == MAIN_CONDITION]
    # The paper's rows have no tokens to price: their pages need no price table.
    prices = price_table() if any(r.source != Run.Source.REPORTED for r in listed) else {}
    runs = [
        {
            "run": run,
            "tables": run_tables(run),
            "behaviour": run_behaviour_rows(run),
            "cost": run_cost(run=run, table=prices),
        }
        for run in listed
    ]
    context = {"entry": entry, "runs": runs, "metrics": METRICS, "tracks": TRACKS}
    context["mirror_use"] = model_mirror_use(runs=public)
    context["conditions"] = [{"name": c, "label": condition_label(c)} for c in CONDITIONS]
    context["share"] = model_share(entry=entry, absolute=request.build_absolute_uri)
    context.update(chart_views.model_charts_context(entry=entry))
    return render(request, "leaderboard/model.html", context)


BADGE_CACHE = "public, max-age=3600"
"""A badge may be an hour old: a new run on the board shows within the hour."""


def _public_entry(slug: str) -> ModelEntry:
    entry = model_entry_list().filter(slug=slug).first()
    if entry is None:
        raise Http404(f"no model entry {slug!r}")
    return entry


def model_badge_svg(request: HttpRequest, slug: str) -> HttpResponse:
    """``/models/<slug>/badge.svg?metric=overall_avg``: a score with its 95% interval."""
    entry = _public_entry(slug)
    try:
        svg = model_badge(entry=entry, metric=request.GET.get("metric", DEFAULT_METRIC))
    except UnknownMetric as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    etag = f'"{hashlib.sha256(svg.encode()).hexdigest()[:32]}"'
    response: HttpResponse
    if request.headers.get("If-None-Match") == etag:
        response = HttpResponseNotModified()
    else:
        response = HttpResponse(svg, content_type="image/svg+xml; charset=utf-8")
    response["ETag"], response["Cache-Control"] = etag, BADGE_CACHE
    return response


def model_eval_results_yaml(request: HttpRequest, slug: str) -> HttpResponse:
    """``/models/<slug>/eval_results.yaml``: the model's results as a file of a Hugging Face
    model repository's ``.eval_results/`` folder, each with its run page as the source."""
    entry = _public_entry(slug)
    results = model_hub_eval_results(
        entry=entry,
        absolute=request.build_absolute_uri,
        dataset=settings.MIRRORBENCH_HUB_DATASET,
    )
    return _yaml_response(results)


def model_index_yaml(request: HttpRequest, slug: str) -> HttpResponse:
    """``/models/<slug>/model-index.yaml``: the model's results as a model card's
    ``model-index`` metadata (Hugging Face), each with its run page as the source."""
    entry = _public_entry(slug)
    return _yaml_response(model_eval_results(entry=entry, absolute=request.build_absolute_uri))


def _yaml_response(document: object) -> HttpResponse:
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    return HttpResponse(text, content_type="application/yaml; charset=utf-8")
