"""The read-only REST API: one class per operation, each validating its query and reading.

Every list is paginated (``count``, ``next``, ``previous``, ``results``); every bad query
parameter is a 400 whose body maps the parameter to what was expected; only public runs and
their episodes are visible; every list costs a fixed number of queries, whatever its length.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from django import forms
from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.metrics import METRICS, TRACKS
from evaluation.outbound import ERROR_CATEGORIES
from evaluation.prompts import LEVELS
from evaluation.registry import PROVIDERS
from leaderboard.api_filters import EpisodeFilter, ModelEntryFilter, RunFilter
from leaderboard.forms import LeaderboardQueryForm
from leaderboard.models import Episode, ModelEntry, Run, RunScore, Step
from leaderboard.replay_selectors import frame_urls
from leaderboard.selectors import (
    TABLES,
    episode_list,
    header_for,
    leaderboard_table_cached,
    model_entry_detail,
    model_entry_list,
    run_list,
    tracks_page,
)
from leaderboard.services.errors import FieldError
from leaderboard.services.frames import episode_frames_register
from leaderboard.services.runs import hosted_run_create
from simulation.versions import BENCHMARK_VERSION, KNOWN_VERSIONS, RETIRED_VERSIONS

FIELD_ERRORS = OpenApiResponse(
    response={
        "type": "object",
        "additionalProperties": {"type": "array", "items": {"type": "string"}},
    },
    description="A query parameter is invalid: each bad parameter maps to what was expected, "
    'e.g. {"params_min": ["Enter a number."]}.',
)
NOT_FOUND = OpenApiResponse(
    response={"type": "object", "properties": {"detail": {"type": "string"}}},
    description="No such public resource.",
)
_MESSAGES = {"type": "array", "items": {"type": "string"}}
BODY_ERRORS = OpenApiResponse(
    response={
        "type": "object",
        "properties": {
            "detail": {"type": "string", "description": "Why the body could not be parsed."}
        },
        "additionalProperties": {
            "anyOf": [_MESSAGES, {"type": "object", "additionalProperties": _MESSAGES}]
        },
    },
    description="The body is invalid: each bad field maps to what was expected, a bad item of "
    'a list maps its index to its messages, e.g. {"model": ["This field is required."], '
    '"levels": {"0": ["\\"9\\" is not a valid choice."]}}; a body that is not JSON has a '
    '"detail".',
)


class ApiPagination(PageNumberPagination):
    """Pages of ``PAGE_SIZE`` rows; a bad ``page`` is a 400 naming the parameter, like filters."""

    invalid_page_message = "{message}"

    def paginate_queryset(
        self, queryset: QuerySet[Any] | Sequence[Any], request: Request, view: APIView | None = None
    ) -> list[Any] | None:
        try:
            return super().paginate_queryset(queryset, request, view)
        except NotFound as exc:
            raise ValidationError({self.page_query_param: [str(exc.detail)]}) from None


# Serializers shared by several operations.


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


# Models.


class ApiIndex(APIView):
    """The API's front door: every endpoint, what it does, and where the schema and docs are."""

    class OutputSerializer(serializers.Serializer):
        name = serializers.CharField()
        method = serializers.CharField()
        url = serializers.CharField()
        description = serializers.CharField()

        class Meta:
            ref_name = "ApiEndpoint"

    ENDPOINTS: list[tuple[str, str, dict[str, Any], str]] = [
        (
            "api-models",
            "GET",
            {},
            "Model entries and their scores (filters: kind, organisation, q, params_min/max).",
        ),
        ("api-model", "GET", {"slug": "SLUG"}, "One model entry: its runs and level tables."),
        (
            "api-leaderboard",
            "GET",
            {"table": "overall"},
            "A ranked table: overall (Table II) or 0, 1, 2, 3 (one level), with filters.",
        ),
        ("api-tracks", "GET", {}, "Table III: each level's AVG by track, averaged over models."),
        ("api-runs", "GET", {}, "Public runs (filters: model, source, status, version)."),
        ("api-run", "GET", {"run_id": 0}, "One public run: its spec, progress and scores."),
        (
            "api-episodes",
            "GET",
            {},
            "Episodes of public runs (filters: run, level, scene, status).",
        ),
        ("api-episode", "GET", {"episode_id": 0}, "One episode with every step."),
        (
            "api-evaluations",
            "POST",
            {},
            "Start a hosted run of an API model (signed in, with permission; throttled).",
        ),
        (
            "api-chart-stability",
            "GET",
            {},
            "Fig. 2 as a plotly figure: cognitive stability against overall AVG, with its table.",
        ),
        (
            "api-chart-stability-ranking",
            "GET",
            {},
            "Fig. 5: the cognitive stability ranking with bootstrap intervals.",
        ),
        ("api-chart-radar", "GET", {}, "Radar of the four metrics at each level (?m=slug, 1-4)."),
        ("api-chart-trajectories", "GET", {}, "Fig. 3: each metric across levels (?m=slug, 1-4)."),
        ("api-chart-tracks", "GET", {}, "Table III as a chart: Human against Robot by level."),
        (
            "api-submissions",
            "POST",
            {},
            "Upload a results bundle (multipart: bundle, model_name, kind, ...; a token or the "
            "session): verified before anything is stored. GET lists your submissions.",
        ),
        (
            "api-submission",
            "GET",
            {"submission_id": 0},
            "One of your submissions: its verification report and review.",
        ),
        ("api-schema", "GET", {}, "The OpenAPI 3 schema of this API."),
        ("api-docs", "GET", {}, "Interactive documentation (Swagger UI)."),
    ]

    @extend_schema(responses=OutputSerializer(many=True))
    def get(self, request: Request) -> Response:
        """List the endpoints (placeholders such as SLUG and 0 stand for real values)."""
        rows = []
        for name, method, kwargs, description in self.ENDPOINTS:
            url = reverse(name, kwargs=kwargs or None)
            url = url.replace("/0/", "/{id}/").replace("/SLUG/", "/{slug}/")
            url = url.replace("/overall/", "/{table}/")
            rows.append({"name": name, "method": method, "url": url, "description": description})
        return Response(self.OutputSerializer(rows, many=True).data)


class ModelListApi(generics.ListAPIView[ModelEntry]):
    """``/api/models/``: the model entries, by name."""

    class OutputSerializer(serializers.ModelSerializer):
        links = serializers.ListField(child=serializers.DictField(child=serializers.CharField()))

        class Meta:
            model = ModelEntry
            fields = ("slug", "name", "organisation", "kind", "params_b", "links")
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


# Leaderboards and Table III.

_LEADERBOARD_PARAMETER_HELP = {
    "kind": "Kind of model; repeat to allow several.",
    "source": "Where the results come from; repeat to allow several.",
    "params_min": "At least this many parameters, in billions (models without a count are "
    "left out).",
    "params_max": "At most this many parameters, in billions (models without a count are "
    "left out).",
    "q": "Text in the model name or the organisation.",
    "sort": "Column to sort by; rank (the default) is the overall AVG, best first.",
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
        many = isinstance(field, forms.MultipleChoiceField)
        choices = list(getattr(field, "choices", []))
        parameters.append(
            OpenApiParameter(
                name,
                OpenApiTypes.NUMBER if isinstance(field, forms.FloatField) else OpenApiTypes.STR,
                description=help_texts.get(name, ""),
                enum=[value for value, _ in choices] or None,
                many=many or None,
                explode=True if many else None,
            )
        )
    return parameters


def _form_errors(form: forms.Form) -> dict[str, list[str]]:
    return {name: [str(message) for message in errors] for name, errors in form.errors.items()}


def _number(value: Any) -> Any:
    """Return ``value``, or None where pandas has NaN (JSON has no NaN)."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _leaderboard_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """Return a record of ``LeaderboardTable.frame`` in the API's shape.

    A track is null where the run has no scores for it (the metrics of a track come together).
    """
    scores: dict[str, dict[str, Any] | None] = {}
    for track in TRACKS:
        values = {metric: _number(record[f"{track}_{metric}"]) for metric in METRICS}
        scores[track] = None if all(v is None for v in values.values()) else values
    rank = _number(record["rank"])
    return {
        "rank": None if rank is None else int(rank),
        "model": record["model"],
        "slug": record["slug"],
        "kind": record["kind"],
        "params_b": _number(record["params_b"]),
        "source": record["source"],
        "run_id": int(record["run_id"]),
        "scores": scores,
        "cognitive_stability": _number(record["cognitive_stability"]),
    }


class LeaderboardApi(APIView):
    """``/api/leaderboards/<table>/``: a table's ranked rows, exactly as its page shows them."""

    pagination_class = ApiPagination

    class OutputSerializer(serializers.Serializer):
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
            raise ValidationError(_form_errors(form))
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
        )
        data = {
            "models": page.models,
            "table_iii": [{"level": level, **cells} for level, cells in page.table_iii.items()],
            "gaps": page.gaps,
        }
        return Response(self.OutputSerializer(data).data)


# Runs.


class RunListApi(generics.ListAPIView[Run]):
    """``/api/runs/``: the public runs, newest first."""

    class OutputSerializer(serializers.ModelSerializer):
        model = serializers.CharField(source="model_entry.name")
        slug = serializers.CharField(source="model_entry.slug")
        kind = serializers.ChoiceField(source="model_entry.kind", choices=ModelEntry.Kind.choices)
        benchmark_version = serializers.CharField(
            source="benchmark.name",
            help_text="The benchmark version the run was measured with (v1 is retired).",
        )
        counts = EpisodeCountsSerializer(source="*")
        scores = ScoreRowSerializer(many=True)

        class Meta:
            model = Run
            fields = (
                "id",
                "model",
                "slug",
                "kind",
                "source",
                "status",
                "listed",
                "benchmark_version",
                "agent",
                "created",
                "finished",
                "counts",
                "cognitive_stability",
                "scores",
            )
            ref_name = "RunSummary"

    serializer_class = OutputSerializer
    filterset_class = RunFilter
    pagination_class = ApiPagination

    def get_queryset(self) -> QuerySet[Run]:
        return run_list().defer("metadata")

    @extend_schema(responses={200: OutputSerializer(many=True), 400: FIELD_ERRORS})
    def get(self, request: Request) -> Response:
        """Return a page of public runs matching the filters."""
        return self.list(request)


class RunDetailApi(APIView):
    """``/api/runs/<id>/``: one public run with its metadata, episode counts and scores."""

    class OutputSerializer(RunListApi.OutputSerializer):
        benchmark = serializers.DictField(
            child=serializers.CharField(),
            source="benchmark.as_dict",
            help_text="The benchmark version and its scene set, prompt and dynamics versions.",
        )

        class Meta:
            model = Run
            fields = (
                *RunListApi.OutputSerializer.Meta.fields,
                "citation",
                "benchmark",
                "metadata",
                "behaviour",
            )
            ref_name = "RunDetail"
            extra_kwargs = {
                "behaviour": {
                    "help_text": "Mirror-self confusion, bad-response and collision rates per "
                    "level and track (as `mirrorbench score --json` prints them); null for "
                    "reported runs."
                }
            }

    @extend_schema(responses={200: OutputSerializer, 404: NOT_FOUND})
    def get(self, request: Request, run_id: int) -> Response:
        """Return the public run ``run_id``; private runs do not exist here."""
        try:
            run = run_list().get(pk=run_id)
        except Run.DoesNotExist:
            raise NotFound(f"No public run {run_id}.") from None
        data = self.OutputSerializer(run).data
        if isinstance(data.get("metadata"), dict):
            # A hosted run's endpoint path may hold a key or a deployment id: its scheme and
            # host for everyone but the run's owner and the moderators.
            data["metadata"] = header_for(data["metadata"], run=run, user=request.user)
        return Response(data)


# Episodes.


class EpisodeErrorSerializer(serializers.Serializer):
    """Why an episode ended in error: public status and category, the detail for its owner."""

    status = serializers.IntegerField(
        allow_null=True, help_text="The HTTP status of the failed request; null without one."
    )
    category = serializers.ChoiceField(choices=list(ERROR_CATEGORIES))
    detail = serializers.CharField(
        required=False,
        help_text="The full error text, the provider's own words included: only for the run's "
        "owner, signed in.",
    )


def _owned_run_ids(serializer: serializers.Field) -> frozenset[int]:
    """The runs of the signed-in user, asked once per response (only if an error is shown)."""
    root = serializer.root
    owned: frozenset[int] | None = getattr(root, "_owned_run_ids", None)
    if owned is None:
        user = getattr(serializer.context.get("request"), "user", None)
        owned = (
            frozenset(Run.objects.filter(owner=user).values_list("pk", flat=True))
            if user is not None and user.is_authenticated
            else frozenset()
        )
        setattr(root, "_owned_run_ids", owned)  # noqa: B010 (the root is any serializer)
    return owned


class EpisodeListApi(generics.ListAPIView[Episode]):
    """``/api/episodes/``: the episodes of public runs, by run, level and scene."""

    class OutputSerializer(serializers.ModelSerializer):
        run = serializers.IntegerField(source="run_id")
        scene = serializers.CharField(source="scene.scene_id")
        track = serializers.CharField(source="scene.track")
        distances = serializers.ListField(
            child=serializers.IntegerField(),
            help_text="Steps to the mark at the start and after each step.",
        )
        error = serializers.SerializerMethodField()
        replay_url = serializers.SerializerMethodField(
            help_text="The episode's replay page, frame by frame."
        )

        def get_replay_url(self, episode: Episode) -> str:
            return reverse("leaderboard:episode", kwargs={"episode_id": episode.pk})

        @extend_schema_field(EpisodeErrorSerializer(allow_null=True))
        def get_error(self, episode: Episode) -> dict[str, Any] | None:
            summary = episode.error_summary
            if summary is None:
                return None
            error: dict[str, Any] = {"status": summary.status, "category": summary.category}
            if episode.run_id in _owned_run_ids(self):
                error["detail"] = episode.error
            return error

        class Meta:
            model = Episode
            fields = (
                "id",
                "run",
                "scene",
                "track",
                "level",
                "status",
                "error",
                "success",
                "steps_taken",
                "distances",
                *METRICS,
                "confusion_rate",
                "mirror_confused",
                "bad_responses",
                "collisions",
                "replay_url",
            )
            ref_name = "EpisodeSummary"

    serializer_class = OutputSerializer
    filterset_class = EpisodeFilter
    pagination_class = ApiPagination

    def get_queryset(self) -> QuerySet[Episode]:
        return episode_list()

    @extend_schema(responses={200: OutputSerializer(many=True), 400: FIELD_ERRORS})
    def get(self, request: Request) -> Response:
        """Return a page of episodes of public runs matching the filters."""
        return self.list(request)


class EpisodeDetailApi(APIView):
    """``/api/episodes/<id>/``: one episode of a public run, with its steps."""

    class OutputSerializer(EpisodeListApi.OutputSerializer):
        class StepSerializer(serializers.ModelSerializer):
            hand_cell = serializers.ListField(child=serializers.IntegerField())

            class Meta:
                model = Step
                fields = (
                    "index",
                    "response",
                    "option",
                    "parse_error",
                    "executed",
                    "distance_steps",
                    "hand_cell",
                    "frame_key",
                    "input_tokens",
                    "output_tokens",
                    "latency_s",
                    "cached",
                )
                ref_name = "EpisodeStep"
                extra_kwargs = {
                    "cached": {
                        "help_text": "The answer came from the response cache: an earlier run's "
                        "answer to this very step, whose tokens and latency this run did not "
                        "spend."
                    }
                }

        class FrameSerializer(serializers.Serializer):
            view = serializers.IntegerField(help_text="0 is the start; view n follows step n.")
            key = serializers.CharField(help_text="The frame's content key.")
            webp = serializers.CharField()
            png = serializers.CharField(help_text="The lossless image, as a model is shown it.")
            thumb = serializers.CharField()

            class Meta:
                ref_name = "EpisodeFrame"

        steps = StepSerializer(many=True)
        frames = FrameSerializer(
            many=True,
            source="frame_list",
            help_text="One frame per view, rendered on first request if not stored yet.",
        )

        class Meta:
            model = Episode
            fields = (*EpisodeListApi.OutputSerializer.Meta.fields, "steps", "frames")
            ref_name = "EpisodeDetail"

    @extend_schema(responses={200: OutputSerializer, 404: NOT_FOUND})
    def get(self, request: Request, episode_id: int) -> Response:
        """Return the episode ``episode_id`` if its run is public."""
        try:
            episode = (
                episode_list().select_related("run").prefetch_related("steps").get(pk=episode_id)
            )
        except Episode.DoesNotExist:
            raise NotFound(f"No episode {episode_id} in a public run.") from None
        cells = [
            (0, 0, 0),
            *((s.hand_cell[0], s.hand_cell[1], s.hand_cell[2]) for s in episode.steps.all()),
        ]
        keys = episode_frames_register(episode, cells)
        episode.frame_list = [  # type: ignore[attr-defined]
            {"view": i, "key": key, **frame_urls(key)} for i, key in enumerate(keys)
        ]
        return Response(self.OutputSerializer(episode, context={"request": request}).data)


class CanEvaluate(BasePermission):
    """Signed-in users with the ``leaderboard.add_run`` permission."""

    message = "Starting hosted runs needs the leaderboard.add_run permission."

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and user.has_perm("leaderboard.add_run"))


class EvaluationCreateApi(APIView):
    """Start a hosted run of an API model (the fields of the /evaluate/ form, as JSON)."""

    permission_classes = [CanEvaluate]
    throttle_scope = "evaluations"

    class InputSerializer(serializers.Serializer):
        provider = serializers.ChoiceField(choices=list(PROVIDERS.items()))
        base_url = serializers.URLField(
            required=False, allow_blank=True, max_length=500, help_text="API base URL."
        )
        model = serializers.CharField(max_length=200, help_text="Model name at the provider.")
        entry_name = serializers.CharField(
            max_length=200,
            required=False,
            allow_blank=True,
            help_text="Leaderboard name (default: the model name).",
        )
        kind = serializers.ChoiceField(
            choices=[ModelEntry.Kind.PROPRIETARY, ModelEntry.Kind.OPEN_WEIGHTS]
        )
        params_b = serializers.FloatField(
            required=False, allow_null=True, min_value=0, help_text="Parameters in billions."
        )
        api_key = serializers.CharField(
            max_length=500, write_only=True, help_text="Encrypted at rest, erased at the end."
        )
        levels = serializers.ListField(
            child=serializers.ChoiceField(choices=list(LEVELS)),
            allow_empty=False,
            max_length=len(LEVELS),
            default=list(LEVELS),
        )
        scenes = serializers.ChoiceField(choices=["all", "human", "robot"], default="all")
        private = serializers.BooleanField(default=False)

        def validate_levels(self, value: list[int]) -> list[int]:
            if len(set(value)) != len(value):
                raise serializers.ValidationError("each level at most once")
            return sorted(value)

    class OutputSerializer(serializers.Serializer):
        run = serializers.IntegerField()
        status = serializers.CharField()
        episodes = serializers.IntegerField()
        url = serializers.CharField()

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, 400: BODY_ERRORS})
    def post(self, request: Request) -> Response:
        """Queue a hosted run; the key is used by the workers and then erased."""
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            run = hosted_run_create(user=request.user, data=data.validated_data)
        except FieldError as exc:
            raise ValidationError({exc.field: [exc.message]}) from None
        out = {
            "run": run.pk,
            "status": run.status,
            "episodes": run.episodes_expected,
            "url": reverse("leaderboard:run", kwargs={"run_id": run.pk}),
        }
        return Response(self.OutputSerializer(out).data, status=201)
