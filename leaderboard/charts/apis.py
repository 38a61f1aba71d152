"""The chart API: each of the paper's figures as plotly JSON, with its numbers as a table.

One read-only class per chart. Every bad query parameter is a 400 naming it; only listed
public runs of one benchmark version are drawn.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.api import FIELD_ERRORS
from leaderboard.boards.apis import TracksApi
from leaderboard.boards.forms import LeaderboardQueryForm
from leaderboard.boards.selectors import tracks_page
from leaderboard.charts import figures
from leaderboard.charts.cost import cost_figure
from leaderboard.charts.forms import ChartQueryForm
from leaderboard.charts.selectors import (
    MAX_MODELS,
    chart_runs,
    chart_runs_for,
    cost_points,
    default_slugs,
)
from simulation.versions import BENCHMARK_VERSION, KNOWN_VERSIONS, RETIRED_VERSIONS


class ChartTableSerializer(serializers.Serializer):
    """A chart's numbers as a table (its text alternative): formatted cells."""

    caption = serializers.CharField()
    columns = serializers.ListField(child=serializers.CharField())
    rows = serializers.ListField(child=serializers.ListField(child=serializers.CharField()))
    note = serializers.CharField(
        allow_blank=True, help_text="What the chart leaves out and why; empty when nothing."
    )


class ChartSerializer(serializers.Serializer):
    """A plotly figure, its plotly.js config, layout changes for phones, and its table."""

    figure = serializers.DictField(help_text='A plotly figure: {"data": [...], "layout": {...}}.')
    config = serializers.DictField(help_text="plotly.js config (mode bar, image download).")
    narrow = serializers.DictField(help_text="Layout changes for screens under 600 px wide.")
    table = ChartTableSerializer()

    class Meta:
        ref_name = "Chart"


VERSION_PARAMETER = OpenApiParameter(
    "version",
    OpenApiTypes.STR,
    enum=[*KNOWN_VERSIONS, *RETIRED_VERSIONS],
    description="Benchmark version (default: the current one); charts rank within one.",
)
MODELS_PARAMETER = OpenApiParameter(
    "m",
    OpenApiTypes.STR,
    many=True,
    explode=True,
    description=f"Model slugs, 1 to {MAX_MODELS}; repeat the parameter. Default: the three best "
    "models with level tables and the random baseline.",
)
BASELINES_PARAMETER = OpenApiParameter(
    "baselines",
    OpenApiTypes.STR,
    enum=["show"],
    description="show: draw the sanity-check baselines (the oracle) too; left out by default, "
    "as on the leaderboard (a model named in m is drawn whatever it is).",
)
RESPONSES = {200: ChartSerializer, 400: FIELD_ERRORS}


def _form_errors(form: Any) -> dict[str, list[str]]:
    return {name: [str(message) for message in errors] for name, errors in form.errors.items()}


def _filters(request: Request) -> Any:
    """Return the version and the baselines switch of a chart's query (``LeaderboardFilters``)."""
    names = ("version", "baselines")
    form = LeaderboardQueryForm({name: request.query_params.get(name, "") for name in names})
    if not form.is_valid():
        raise ValidationError(_form_errors(form))
    return form.filters()


class _ChartApi(APIView):
    def respond(self, chart: figures.Chart) -> Response:
        return Response(ChartSerializer(figures.chart_json(chart)).data)


class StabilityChartApi(_ChartApi):
    """``/api/charts/stability/``: Fig. 2, cognitive stability against task performance."""

    @extend_schema(parameters=[VERSION_PARAMETER, BASELINES_PARAMETER], responses=RESPONSES)
    def get(self, request: Request) -> Response:
        """Return one bubble per model with per-scene results (the paper's rows have none)."""
        filters = _filters(request)
        runs = chart_runs(version=filters.version, baselines=filters.baselines)
        return self.respond(figures.stability_figure(runs))


class CostChartApi(_ChartApi):
    """``/api/charts/cost/``: overall AVG against dollars per 264 episodes, the Pareto front."""

    @extend_schema(parameters=[VERSION_PARAMETER, BASELINES_PARAMETER], responses=RESPONSES)
    def get(self, request: Request) -> Response:
        """Return one marker per listed run with a price; its table lists every run with
        episodes, priced or not ("no price")."""
        filters = _filters(request)
        runs = chart_runs(version=filters.version, baselines=filters.baselines)
        return self.respond(cost_figure(cost_points(runs=runs)))


class StabilityRankingChartApi(_ChartApi):
    """``/api/charts/stability-ranking/``: Fig. 5, the cognitive stability ranking."""

    @extend_schema(parameters=[VERSION_PARAMETER, BASELINES_PARAMETER], responses=RESPONSES)
    def get(self, request: Request) -> Response:
        """Return each model's CS with its bootstrap interval, against the random policy."""
        filters = _filters(request)
        runs = chart_runs(version=filters.version, baselines=filters.baselines)
        return self.respond(figures.stability_ranking_figure(runs))


def _picked_runs(request: Request) -> list[Any]:
    form = ChartQueryForm(request.query_params)
    if not form.is_valid():
        raise ValidationError(_form_errors(form))
    if form.chosen_slugs:
        return chart_runs_for(version=form.chosen_version, slugs=form.chosen_slugs)
    runs = chart_runs(version=form.chosen_version, baselines=form.show_baselines)
    return chart_runs_for(version=form.chosen_version, slugs=default_slugs(runs))


class RadarChartApi(_ChartApi):
    """``/api/charts/radar/``: the four metrics at each level, up to four models overlaid."""

    @extend_schema(
        parameters=[MODELS_PARAMETER, VERSION_PARAMETER, BASELINES_PARAMETER], responses=RESPONSES
    )
    def get(self, request: Request) -> Response:
        """Return one radar per level (Overall column), one line per model."""
        return self.respond(figures.radar_figure(_picked_runs(request)))


class TrajectoriesChartApi(_ChartApi):
    """``/api/charts/trajectories/``: Fig. 3, each metric across the levels."""

    @extend_schema(
        parameters=[MODELS_PARAMETER, VERSION_PARAMETER, BASELINES_PARAMETER], responses=RESPONSES
    )
    def get(self, request: Request) -> Response:
        """Return one panel per metric, one line per model (reported rows have levels too)."""
        return self.respond(figures.trajectories_figure(_picked_runs(request)))


class TracksChartApi(_ChartApi):
    """``/api/charts/tracks/``: Table III as a chart, Human against Robot by level."""

    @extend_schema(parameters=[TracksApi.InputSerializer], responses=RESPONSES)
    def get(self, request: Request) -> Response:
        """Return the mean AVG of the MLLMs by level and track, as grouped bars."""
        query = TracksApi.InputSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        page = tracks_page(
            sources=tuple(sorted(query.validated_data.get("source") or ())),
            version=query.validated_data.get("version") or BENCHMARK_VERSION,
        )
        return self.respond(figures.tracks_figure(page.table_iii, page.models))
