"""REST API of runs: the run list and detail, a run's episodes, starting a hosted evaluation."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import (
    extend_schema,
    extend_schema_field,
)
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.config import MAX_REPEATS
from evaluation.cost import check_price
from evaluation.public import ERROR_CATEGORIES
from evaluation.registry import provider_choices
from evaluation.vocabulary import (
    CONDITION_CHOICES,
    CONDITIONS,
    LEVELS,
    METRICS,
)
from leaderboard.api import BODY_ERRORS, FIELD_ERRORS, NOT_FOUND, ApiPagination
from leaderboard.api_filters import EpisodeFilter, RunFilter
from leaderboard.boards.apis import (
    EpisodeCountsSerializer,
    ScoreRowSerializer,
    model_facts_serializer_fields,
)
from leaderboard.boards.costs import price_table, run_cost
from leaderboard.errors import FieldError
from leaderboard.models import Episode, ModelEntry, Run
from leaderboard.runs.selectors import (
    episode_list,
    header_for,
    run_error_counts,
    run_errors_hold_ranking,
    run_list,
)
from leaderboard.runs.services import hosted_runs_create


class RunCostSerializer(serializers.Serializer):
    """A run's measured tokens and, where the site knows a price, their dollars."""

    input_tokens = serializers.IntegerField(
        allow_null=True,
        help_text="Input tokens spent (cached answers left out); null: none reported.",
    )
    output_tokens = serializers.IntegerField(allow_null=True)
    cached_input_tokens = serializers.IntegerField(
        allow_null=True,
        help_text="Of the input tokens, those the provider served from its prompt cache; null "
        "where it reports none.",
    )
    cached_share = serializers.FloatField(allow_null=True)
    cost_usd = serializers.FloatField(
        allow_null=True, help_text="What the tokens cost in US dollars; null: no price."
    )
    cost_per_264_usd = serializers.FloatField(
        allow_null=True, help_text="The cost scaled to a whole run of 264 episodes."
    )
    price_source = serializers.ChoiceField(
        choices=["run", "table", "setting"],
        allow_null=True,
        help_text="Where the price comes from: the run's own prices, the site's price table, "
        "or MIRRORBENCH_PRICES; null: no price.",
    )


def _prices(serializer: serializers.Field) -> dict[str, dict[str, float]]:
    """The site's price table, read once per response."""
    root = serializer.root
    table: dict[str, dict[str, float]] | None = getattr(root, "_price_table", None)
    if table is None:
        table = price_table()
        setattr(root, "_price_table", table)  # noqa: B010 (the root is any serializer)
    return table


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
        cost = serializers.SerializerMethodField()

        @extend_schema_field(RunCostSerializer)
        def get_cost(self, run: Run) -> dict[str, Any]:
            return run_cost(run=run, table=_prices(self)).as_dict()

        class Meta:
            model = Run
            fields = (
                "id",
                "model",
                "slug",
                "kind",
                "source",
                "status",
                "condition",
                "listed",
                "benchmark_version",
                "agent",
                "created",
                "finished",
                "counts",
                "cognitive_stability",
                "scores",
                "cost",
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


class RunErrorsSerializer(serializers.Serializer):
    """A run's errored episodes by category and its refused steps (``evaluation.errors``)."""

    episodes = serializers.IntegerField(help_text="Finished episodes (completed and errored).")
    errored = serializers.IntegerField(
        help_text="Episodes the provider or the harness ended: left out of every score."
    )
    errored_share = serializers.FloatField()
    by_category = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Errored episodes per category: " + ", ".join(ERROR_CATEGORIES) + ".",
    )
    refused_steps = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Steps the provider refused to answer, per kind (refusal, content_filter, "
        "context_length): scored as bad responses, as the protocol counts an empty answer.",
    )
    ranking_held = serializers.BooleanField(
        help_text="More than MIRRORBENCH_MAX_ERRORED_SHARE of the episodes ended in error: the "
        "run is not ranked until they are re-run."
    )


class RunDetailApi(APIView):
    """``/api/runs/<id>/``: one public run with its metadata, episode counts and scores."""

    class OutputSerializer(RunListApi.OutputSerializer):
        benchmark = serializers.DictField(
            child=serializers.CharField(),
            source="benchmark.as_dict",
            help_text="The benchmark version and its scene set, prompt and dynamics versions.",
        )
        error_counts = serializers.SerializerMethodField()

        @extend_schema_field(RunErrorsSerializer)
        def get_error_counts(self, run: Run) -> dict[str, Any]:
            counts = run_error_counts(run=run)
            return {
                **counts.as_dict(),
                "ranking_held": run_errors_hold_ranking(run=run, counts=counts),
            }

        class Meta:
            model = Run
            fields = (
                *RunListApi.OutputSerializer.Meta.fields,
                "citation",
                "benchmark",
                "metadata",
                "behaviour",
                "error_counts",
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


class CanEvaluate(BasePermission):
    """Signed-in users with the ``leaderboard.add_run`` permission."""

    message = "Starting hosted runs needs the leaderboard.add_run permission."

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and user.has_perm("leaderboard.add_run"))


class QueuedRunSerializer(serializers.Serializer):
    """A hosted run just queued: its id, condition, status, episodes and page."""

    run = serializers.IntegerField()
    condition = serializers.ChoiceField(choices=list(CONDITION_CHOICES))
    status = serializers.CharField()
    episodes = serializers.IntegerField()
    url = serializers.CharField()


class EvaluationCreateApi(APIView):
    """Start a hosted run of an API model (the fields of the /evaluate/ form, as JSON)."""

    permission_classes = [CanEvaluate]
    throttle_scope = "evaluations"

    class InputSerializer(serializers.Serializer):
        provider = serializers.ChoiceField(choices=provider_choices())
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
        release_date, reasoning, licence, scaffold = model_facts_serializer_fields()
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
        conditions = serializers.ListField(
            # The model's choices (name, label): one enum in the schema, not two.
            child=serializers.ChoiceField(choices=list(CONDITION_CHOICES)),
            required=False,
            allow_empty=False,
            max_length=len(CONDITIONS),
            help_text="The conditions to play, a run each, all started in one transaction (none "
            "if one cannot start): main (the paper's protocol, ranked) and any control "
            "condition, played beside it at the same cost each and never ranked in the main "
            'tables. Default: ["main"].',
        )
        condition = serializers.ChoiceField(
            choices=list(CONDITION_CHOICES),
            required=False,
            help_text="One condition (older clients): the same as conditions with one item. "
            "Give conditions or condition, not both.",
        )
        repeats = serializers.IntegerField(
            min_value=1,
            max_value=MAX_REPEATS,
            default=1,
            help_text="How many times every episode is played, each asking afresh (default 1); "
            "each repeat costs as much as one run.",
        )
        private = serializers.BooleanField(default=False)
        price = serializers.JSONField(
            required=False,
            allow_null=True,
            help_text="The model's prices for this run, US dollars per million tokens: "
            '{"input_per_mtok": 2.5, "output_per_mtok": 10, "cached_input_per_mtok": 1.25} '
            "(the last optional); they come before the site's price table.",
        )

        def validate_price(self, value: Any) -> dict[str, float] | None:
            if value is None:
                return None
            try:
                return check_price(value)
            except ValueError as exc:
                raise serializers.ValidationError(str(exc)) from None

        def validate_levels(self, value: list[int]) -> list[int]:
            if len(set(value)) != len(value):
                raise serializers.ValidationError("each level at most once")
            return sorted(value)

        def validate_conditions(self, value: list[str]) -> list[str]:
            if len(set(value)) != len(value):
                raise serializers.ValidationError("each condition at most once")
            return value

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if "conditions" in attrs and "condition" in attrs:
                raise serializers.ValidationError(
                    {"conditions": "give the list conditions or the single condition, not both"}
                )
            return attrs

    class OutputSerializer(serializers.Serializer):
        run = serializers.IntegerField(help_text="The first run queued (its condition first).")
        status = serializers.CharField()
        episodes = serializers.IntegerField(help_text="The first run's episodes.")
        url = serializers.CharField()
        runs = QueuedRunSerializer(
            many=True,
            help_text="Every run queued, one per condition in the order main, no-mirror, "
            "mark-unseen, moved-mark.",
        )

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, 400: BODY_ERRORS})
    def post(self, request: Request) -> Response:
        """Queue a hosted run per condition; the key is used by the workers and then erased."""
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            created = hosted_runs_create(user=request.user, data=data.validated_data)
        except FieldError as exc:
            raise ValidationError({exc.field: [exc.message]}) from None
        runs = [
            {
                "run": run.pk,
                "condition": run.condition,
                "status": run.status,
                "episodes": run.episodes_expected,
                "url": reverse("leaderboard:run", kwargs={"run_id": run.pk}),
            }
            for run in created
        ]
        out = {**{k: v for k, v in runs[0].items() if k != "condition"}, "runs": runs}
        return Response(self.OutputSerializer(out).data, status=201)
