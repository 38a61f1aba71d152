"""REST API of the boards: model entries, leaderboards, tracks."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from django import forms
from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
)
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.vocabulary import METRICS, TABLES, TRACKS
from leaderboard.api import FIELD_ERRORS, NOT_FOUND, ApiPagination, form_errors, query_number
from leaderboard.api_filters import ModelEntryFilter
from leaderboard.boards.forms import LeaderboardQueryForm, TextListField
from leaderboard.boards.selectors import (
    leaderboard_table_cached,
    model_entry_detail,
    model_entry_list,
    tracks_page,
)
from leaderboard.models import ModelEntry, Run, RunScore
from simulation.versions import BENCHMARK_VERSION, KNOWN_VERSIONS, RETIRED_VERSIONS


class ScoreRowSerializer(serializers.ModelSerializer):
    """One row of a run's tables: a table (level 0-3 or overall) x a track, every metric."""

    ci = serializers.DictField(
        child=serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2),
        allow_null=True,
        help_text='95% bootstrap intervals by metric, {"tsr": [low, high], ...}; null for '
        "reported results.",
    )
    episodes = serializers.IntegerField(
        allow_null=True, help_text="Completed episodes behind the row; null for reported results."
    )

    class Meta:
        model = RunScore
        fields = ("table", "track", *METRICS, "ci", "episodes")
        ref_name = "ScoreRow"


class TrackScoresSerializer(serializers.Serializer):
    """The metrics of one track of a leaderboard row."""

    tsr = serializers.FloatField()
    sir = serializers.FloatField()
    fcr = serializers.FloatField()
    pcr = serializers.FloatField()
    avg = serializers.FloatField()


class TableScoresSerializer(serializers.Serializer):
    """A leaderboard row's scores by track; a track is null where the run has no scores."""

    human = TrackScoresSerializer(allow_null=True)
    robot = TrackScoresSerializer(allow_null=True)
    overall = TrackScoresSerializer(allow_null=True)


class EpisodeCountsSerializer(serializers.Serializer):
    """How many episodes a run expects and holds (reported runs hold none)."""

    expected = serializers.IntegerField(source="episodes_expected")
    stored = serializers.IntegerField(source="episodes_stored")
    completed = serializers.IntegerField(source="episodes_completed")
    errored = serializers.IntegerField(source="episodes_errored")
    succeeded = serializers.IntegerField(source="episodes_succeeded")


_METADATA = ("release_date", "reasoning", "licence", "scaffold")
"""Model entry fields beside the organisation, kind and parameters: empty where not known."""


class RepeatSpreadSerializer(serializers.Serializer):
    """How a row's repeats differ (``leaderboard_table``'s repeat columns)."""

    avg_range = serializers.ListField(
        child=serializers.FloatField(),
        min_length=2,
        max_length=2,
        help_text="[worst, best]: the overall AVG of one repeat, from the lowest to the highest.",
    )
    avg_sd = serializers.FloatField(help_text="The overall AVG's standard deviation over repeats.")
    flip_rate = serializers.FloatField(
        allow_null=True,
        help_text="The share of episodes played in two repeats or more whose success differs.",
    )


class ModelListApi(generics.ListAPIView[ModelEntry]):
    """``/api/models/``: the model entries, by name."""

    class OutputSerializer(serializers.ModelSerializer):
        links = serializers.ListField(child=serializers.DictField(child=serializers.CharField()))

        class Meta:
            model = ModelEntry
            fields = ("slug", "name", "organisation", "kind", "params_b", *_METADATA, "links")
            ref_name = "ModelEntrySummary"

    serializer_class = OutputSerializer
    filterset_class = ModelEntryFilter
    pagination_class = ApiPagination

    def get_queryset(self) -> QuerySet[ModelEntry]:
        return model_entry_list()

    @extend_schema(responses={200: OutputSerializer(many=True), 400: FIELD_ERRORS})
    def get(self, request: Request) -> Response:
        """Return a page of model entries matching the filters."""
        return self.list(request)


class ModelDetailApi(APIView):
    """``/api/models/<slug>/``: one model entry with its public runs and their scores."""

    class OutputSerializer(serializers.ModelSerializer):
        class RunSerializer(serializers.ModelSerializer):
            scores = ScoreRowSerializer(many=True)

            class Meta:
                model = Run
                fields = (
                    "id",
                    "source",
                    "status",
                    "listed",
                    "agent",
                    "citation",
                    "created",
                    "finished",
                    "cognitive_stability",
                    "scores",
                )
                ref_name = "ModelEntryRun"

        links = serializers.ListField(child=serializers.DictField(child=serializers.CharField()))
        runs = RunSerializer(many=True, help_text="Public runs, newest first.")

        class Meta:
            model = ModelEntry
            fields = (
                "slug",
                "name",
                "organisation",
                "kind",
                "params_b",
                *_METADATA,
                "links",
                "description",
                "runs",
            )
            ref_name = "ModelEntryDetail"

    @extend_schema(responses={200: OutputSerializer, 404: NOT_FOUND})
    def get(self, request: Request, slug: str) -> Response:
        """Return the model entry ``slug``."""
        try:
            entry = model_entry_detail(slug=slug)
        except ModelEntry.DoesNotExist:
            raise NotFound(f"No model entry {slug!r}.") from None
        return Response(self.OutputSerializer(entry).data)


_LEADERBOARD_PARAMETER_HELP = {
    "kind": "Kind of model; repeat to allow several.",
    "source": "Where the results come from; repeat to allow several.",
    "params_min": "At least this many parameters, in billions (models without a count are "
    "left out).",
    "params_max": "At most this many parameters, in billions (models without a count are "
    "left out).",
    "q": "Text in the model name or the organisation.",
    "sort": "Column to sort by; rank (the default) is the overall AVG, best first; rank_low is "
    "the lower bound of the rank interval (the paper's rows: their rank), best first.",
    "order": "asc or desc; the default is asc for rank and model, desc for scores.",
    "version": "Benchmark version to rank (default: the current one); versions never share a "
    "table.",
    "baselines": "show: list the sanity-check baselines (the oracle) too; hidden by default.",
    "ci": "Pages only (each score's interval half-width); ignored by the API and CSV.",
}


def _form_parameters(
    form_class: type[forms.Form], help_texts: Mapping[str, str]
) -> list[OpenApiParameter]:
    """Return the fields of ``form_class`` as optional query parameters.

    The form's choices become the parameters' enums, so the form that validates a query stays
    the one source of its documentation.
    """
    parameters = []
    for name, field in form_class.base_fields.items():
        many = isinstance(field, forms.MultipleChoiceField | TextListField)
        choices = list(getattr(field, "choices", []))
        parameters.append(
            OpenApiParameter(
                name,
                OpenApiTypes.NUMBER if isinstance(field, forms.FloatField) else OpenApiTypes.STR,
                description=help_texts.get(name, field.help_text),
                enum=[value for value, _ in choices] or None,
                many=many or None,
                explode=True if many else None,
            )
        )
    return parameters


def _leaderboard_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """Return a record of ``LeaderboardTable.frame`` in the API's shape.

    A track is null where the run has no scores for it (the metrics of a track come together).
    """
    scores: dict[str, dict[str, Any] | None] = {}
    for track in TRACKS:
        values = {metric: query_number(record[f"{track}_{metric}"]) for metric in METRICS}
        scores[track] = None if all(v is None for v in values.values()) else values
    rank = query_number(record["rank"])
    low, high = query_number(record["rank_low"]), query_number(record["rank_high"])
    return {
        "rank": None if rank is None else int(rank),
        "model": record["model"],
        "slug": record["slug"],
        "kind": record["kind"],
        "params_b": query_number(record["params_b"]),
        "source": record["source"],
        "run_id": int(record["run_id"]),
        "scores": scores,
        "cognitive_stability": query_number(record["cognitive_stability"]),
        "rank_interval": None if low is None or high is None else [int(low), int(high)],
        "tied_with_above": bool(record["tied_with_above"]),
        "preliminary": bool(record["preliminary"]),
        **_repeat_fields(record),
        **_metadata_fields(record),
    }


def _repeat_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """Return a row's repeats and how they differ (the overall AVG's spread, the flip rate);
    a row of one repeat (the paper's included) has 1 and a null spread."""
    repeats = query_number(record.get("repeats"))
    low, high = query_number(record.get("avg_low")), query_number(record.get("avg_high"))
    spread = None
    if repeats is not None and repeats > 1 and low is not None and high is not None:
        spread = {
            "avg_range": [low, high],
            "avg_sd": query_number(record.get("avg_sd")),
            "flip_rate": query_number(record.get("flip_rate")),
        }
    return {"repeats": 1 if repeats is None else int(repeats), "repeat_spread": spread}


def _metadata_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """Return what a row's model entry says about the model, as the API writes it: unknown
    facts null, the release date as YYYY-MM-DD."""
    released = record.get("release_date")
    return {
        "organisation": record.get("organisation") or None,
        "release_date": released.isoformat() if isinstance(released, date) else None,
        "reasoning": record.get("reasoning") or None,
        "licence": record.get("licence") or None,
        "scaffold": record.get("scaffold") or None,
    }


def model_facts_serializer_fields() -> tuple[serializers.Field, ...]:
    """Return fresh input fields for a model's facts, each optional: ``release_date``,
    ``reasoning``, ``licence``, ``scaffold`` (the upload and evaluate APIs unpack them)."""
    return (
        serializers.DateField(
            required=False, allow_null=True, input_formats=["%Y-%m-%d"], help_text="YYYY-MM-DD."
        ),
        serializers.ChoiceField(
            choices=ModelEntry.Reasoning.choices,
            required=False,
            allow_blank=True,
            help_text="Reasoning mode or effort the results are measured with.",
        ),
        serializers.CharField(
            max_length=100,
            required=False,
            allow_blank=True,
            help_text="The weights' licence (an SPDX id), or proprietary.",
        ),
        serializers.ChoiceField(
            choices=ModelEntry.Scaffold.choices,
            required=False,
            allow_blank=True,
            help_text="model: a plain model; agent: an agent scaffold around one.",
        ),
    )


class ModelMetadataSerializer(serializers.Serializer):
    """What a model entry says about the model (issue 33): each null where not known."""

    organisation = serializers.CharField(
        allow_null=True, help_text="Organisation or provider (filter: organisation)."
    )
    release_date = serializers.DateField(
        allow_null=True, help_text="Release date (filters: released_from, released_to)."
    )
    reasoning = serializers.ChoiceField(
        choices=ModelEntry.Reasoning.choices,
        allow_null=True,
        help_text="Reasoning mode or effort the results were measured with (filter: reasoning).",
    )
    licence = serializers.CharField(
        allow_null=True, help_text="The weights' licence, or proprietary (filter: licence)."
    )
    scaffold = serializers.ChoiceField(
        choices=ModelEntry.Scaffold.choices,
        allow_null=True,
        help_text="model: a plain model; agent: an agent scaffold around one (filter: scaffold).",
    )


class LeaderboardApi(APIView):
    """``/api/leaderboards/<table>/``: a table's ranked rows, exactly as its page shows them."""

    pagination_class = ApiPagination

    class OutputSerializer(ModelMetadataSerializer):
        rank = serializers.IntegerField(
            allow_null=True,
            help_text="Rank by overall AVG among the multimodal models (ties share a rank); "
            "null for reference rows (kinds baseline and human), which are never ranked.",
        )
        model = serializers.CharField()
        slug = serializers.CharField()
        kind = serializers.ChoiceField(choices=ModelEntry.Kind.choices)
        params_b = serializers.FloatField(allow_null=True, help_text="Parameters, in billions.")
        # DRF pops declared fields off the class; the stubs see them as Field.source.
        source = serializers.ChoiceField(choices=Run.Source.choices)  # type: ignore[assignment]
        run_id = serializers.IntegerField()
        scores = TableScoresSerializer()
        cognitive_stability = serializers.FloatField(
            allow_null=True,
            help_text="Cognitive stability (the paper's appendix A-A), -3 to 3; null without "
            "per-scene results (the paper's reported rows).",
        )
        rank_interval = serializers.ListField(
            child=serializers.IntegerField(),
            min_length=2,
            max_length=2,
            allow_null=True,
            help_text="[best, worst]: the ranks the row takes in 95% of 1,000 resamples of the "
            "scenes (2.5-97.5%), every row scored on the same resample; for a reference row, "
            "the ranks it would take. Null without episodes (the paper's rows, which the "
            "others' resamples count at their published score).",
        )
        tied_with_above = serializers.BooleanField(
            help_text="Statistically tied with the row ranked above: their rank intervals "
            "overlap (a rank stands for the interval of a row without one)."
        )
        preliminary = serializers.BooleanField(
            help_text="Built from fewer than the table's full episodes (264 a run overall, "
            "66 a level): its scores and rank may still move."
        )
        repeats = serializers.IntegerField(
            help_text="How many times the run played every episode (1 for the paper's rows)."
        )
        repeat_spread = RepeatSpreadSerializer(
            allow_null=True,
            help_text="How its repeats differ, for a row of several (null with one): the "
            "overall AVG of the worst and the best repeat, its standard deviation over them, and "
            "the share of episodes whose success differs between repeats.",
        )

        class Meta:
            ref_name = "LeaderboardRow"

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "table",
                OpenApiTypes.STR,
                OpenApiParameter.PATH,
                enum=list(TABLES),
                description="overall (Table II) or a level, 0 to 3 (Tables IV-VII).",
            ),
            *_form_parameters(LeaderboardQueryForm, _LEADERBOARD_PARAMETER_HELP),
        ],
        responses={200: OutputSerializer(many=True), 400: FIELD_ERRORS, 404: NOT_FOUND},
    )
    def get(self, request: Request, table: str) -> Response:
        """Return a page of the ranked, filtered and sorted rows of ``table``."""
        if table not in TABLES:
            raise NotFound(f"No table {table!r}: expected one of {', '.join(TABLES)}.")
        form = LeaderboardQueryForm(request.query_params)
        if not form.is_valid():
            raise ValidationError(form_errors(form))
        board = leaderboard_table_cached(table=table, filters=form.filters())
        rows = [_leaderboard_row(record) for record in board.frame.to_dict("records")]
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response(self.OutputSerializer(page, many=True).data)


class TrackAveragesSerializer(serializers.Serializer):
    """A row of Table III: the mean AVG of the MLLMs at one level (or the mean of levels)."""

    level = serializers.CharField(help_text='"0" to "3", or "avg" for the mean of the levels.')
    human = serializers.FloatField(allow_null=True)
    robot = serializers.FloatField(allow_null=True)
    overall = serializers.FloatField(allow_null=True)


class TrackGapSerializer(serializers.Serializer):
    """One listed run's Human minus Robot AVG, by level and on average."""

    model = serializers.CharField()
    slug = serializers.CharField()
    kind = serializers.ChoiceField(choices=ModelEntry.Kind.choices)
    source = serializers.ChoiceField(choices=Run.Source.choices)  # type: ignore[assignment]
    levels = serializers.DictField(child=serializers.FloatField(), help_text='"0" to "3".')
    mean = serializers.FloatField()


class TracksApi(APIView):
    """``/api/tracks/``: Table III and each listed run's Human minus Robot gaps."""

    class InputSerializer(serializers.Serializer):
        source = serializers.MultipleChoiceField(  # type: ignore[assignment]
            choices=Run.Source.choices,
            required=False,
            help_text="Where the results come from; repeat to allow several.",
        )
        version = serializers.ChoiceField(
            choices=[*KNOWN_VERSIONS, *RETIRED_VERSIONS],
            required=False,
            help_text="Benchmark version (default: the current one).",
        )
        baselines = serializers.ChoiceField(
            choices=["show"],
            required=False,
            help_text="show: the sanity-check baselines (the oracle) among the gaps too; left "
            "out by default, as on the leaderboard.",
        )

    class OutputSerializer(serializers.Serializer):
        models = serializers.IntegerField(help_text="MLLM runs that Table III averages over.")
        table_iii = TrackAveragesSerializer(many=True, help_text="Empty when no run qualifies.")
        gaps = TrackGapSerializer(many=True, help_text="Largest mean gap first.")

        class Meta:
            ref_name = "Tracks"

    @extend_schema(
        parameters=[InputSerializer],
        responses={200: OutputSerializer, 400: FIELD_ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Return Table III and the gaps, over the runs of the chosen sources."""
        query = self.InputSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        page = tracks_page(
            sources=tuple(sorted(query.validated_data.get("source") or ())),
            version=query.validated_data.get("version") or BENCHMARK_VERSION,
            baselines=query.validated_data.get("baselines") == "show",
        )
        data = {
            "models": page.models,
            "table_iii": [{"level": level, **cells} for level, cells in page.table_iii.items()],
            "gaps": page.gaps,
        }
        return Response(self.OutputSerializer(data).data)
