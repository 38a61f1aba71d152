"""Shared parts of the REST API: the index, pagination, the documented error bodies."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from django import forms
from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
)
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

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
            "api-run-process",
            "GET",
            {"run_id": 0},
            "A run's process metrics: mirror attribution (L2, L3) and reasoning-action "
            "consistency, per level and track.",
        ),
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
        (
            "api-chart-cost",
            "GET",
            {},
            "Cost against overall AVG (dollars per 264 episodes), the Pareto front, its table.",
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


def form_errors(form: forms.Form) -> dict[str, list[str]]:
    return {name: [str(message) for message in errors] for name, errors in form.errors.items()}


def query_number(value: Any) -> Any:
    """Return ``value``, or None where pandas has NaN (JSON has no NaN)."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def public_reads_unlocked(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: an operation anyone may call (its security lists
    the empty requirement, ``{}``: credentials optional) gets ``security: []``, so the docs
    show no padlock on it; the writes and your own submissions keep theirs."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if {} in (operation.get("security") or []):
                operation["security"] = []
    return result
