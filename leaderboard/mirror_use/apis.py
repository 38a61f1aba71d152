"""``/api/runs/<id>/process/``: what a run's answers say (``evaluation.process_metrics``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.api import NOT_FOUND
from leaderboard.mirror_use.selectors import run_process_metrics
from leaderboard.models import Run
from leaderboard.runs.selectors import run_for


class RunProcessApi(APIView):
    """Mirror attribution (levels 2 and 3) and reasoning-action consistency of a run's answers,
    per level and track, pooled over L2+L3 and overall: lexicon rules (``method``), a
    measurement, not ground truth (docs/evaluation.md, Process metrics)."""

    class RunProcessOutputSerializer(serializers.Serializer):
        run = serializers.IntegerField()
        condition = serializers.CharField()
        process = serializers.DictField(
            help_text="evaluation.process_metrics.process_json: method, levels, L2+L3, overall."
        )

    @extend_schema(responses={200: RunProcessOutputSerializer, 404: NOT_FOUND})
    def get(self, request: Request, run_id: int) -> Response:
        try:
            run = run_for(run_id=run_id, user=request.user)
        except Run.DoesNotExist:
            raise NotFound(f"No run {run_id} that you may see.") from None
        data = {"run": run.pk, "condition": run.condition, "process": run_process_metrics(run=run)}
        return Response(self.RunProcessOutputSerializer(data).data)
