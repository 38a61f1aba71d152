"""``/api/submissions/``: upload a results bundle (token or session), list and read your own."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotFound, Throttled
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.registry import PROVIDERS
from evaluation.vocabulary import CONDITION_CHOICES
from leaderboard.boards.apis import model_facts_serializer_fields
from leaderboard.errors import FieldError
from leaderboard.models import Submission
from leaderboard.submissions.forms import SUBMISSION_KINDS
from leaderboard.submissions.selectors import submission_visible, user_submissions
from leaderboard.submissions.services import (
    QuotaExceeded,
    SubmissionRejected,
    submission_create,
)

FIELD_ERRORS = OpenApiResponse(description="Which field is wrong and what was expected.")


class SubmissionSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField(help_text="The submission's page on the site.")
    run = serializers.IntegerField(source="run_id", allow_null=True)
    review = serializers.ChoiceField(choices=Submission.Review.choices)
    condition = serializers.ChoiceField(
        source="run.condition",
        choices=list(CONDITION_CHOICES),
        read_only=True,
        allow_null=True,
        help_text="The condition the bundle's header names: main (the paper's protocol) or a "
        "control, whose run is never ranked in the main tables.",
    )

    def get_url(self, submission: Submission) -> str:
        path = reverse("leaderboard:submission", kwargs={"submission_id": submission.pk})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    class Meta:
        model = Submission
        fields: tuple[str, ...] = (
            "id",
            "url",
            "model_name",
            "organisation",
            "kind",
            "params_b",
            "link",
            "episodes",
            "partial",
            "review",
            "review_note",
            "run",
            "condition",
            "sha256",
            "bundle_bytes",
            "report",
            "reproduce_agent",
            "reproduction",
            "created",
        )
        ref_name = "Submission"


class SubmissionListApi(generics.ListAPIView[Submission]):
    """``GET /api/submissions/``: your submissions; ``POST``: upload a results bundle.

    The upload is multipart: ``bundle`` (the file `mirrorbench run` wrote) and the entry's
    ``model_name``, ``kind``, ``organisation``, ``params_b``, ``link`` and the model's facts
    (``release_date``, ``reasoning``, ``licence``, ``scaffold``). It is verified before
    anything is stored: 201 with the submission, 200 with the earlier one if you uploaded these
    exact bytes before, 400 naming the field (for a bundle that does not verify, ``bundle``
    lists the discrepancies), 429 over a cap.
    """

    class InputSerializer(serializers.Serializer):
        bundle = serializers.FileField(allow_empty_file=False)
        model_name = serializers.CharField(max_length=200)
        kind = serializers.ChoiceField(choices=SUBMISSION_KINDS)
        organisation = serializers.CharField(max_length=200, required=False, allow_blank=True)
        params_b = serializers.FloatField(
            required=False, allow_null=True, min_value=0, max_value=1e6
        )
        link = serializers.URLField(max_length=500, required=False, allow_blank=True)
        release_date, reasoning, licence, scaffold = model_facts_serializer_fields()
        reproduce_provider = serializers.ChoiceField(
            choices=list(PROVIDERS), required=False, allow_blank=True
        )
        reproduce_model = serializers.CharField(max_length=200, required=False, allow_blank=True)
        reproduce_base_url = serializers.URLField(max_length=500, required=False, allow_blank=True)
        reproduce_api_key = serializers.CharField(
            max_length=500, required=False, allow_blank=True, write_only=True
        )

        class Meta:
            ref_name = "SubmissionInput"

    class OutputSerializer(SubmissionSerializer):
        duplicate = serializers.BooleanField(
            read_only=True, help_text="You had uploaded these exact bytes before."
        )

        class Meta(SubmissionSerializer.Meta):
            fields = (*SubmissionSerializer.Meta.fields, "duplicate")
            ref_name = "SubmissionCreated"

    serializer_class = SubmissionSerializer
    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser]
    throttle_scope = "submissions"

    def get_queryset(self) -> QuerySet[Submission]:
        if getattr(self, "swagger_fake_view", False):  # the schema generator has no user
            return Submission.objects.none()
        return user_submissions(user=self.request.user)

    def get_throttles(self) -> list[Any]:
        # Reading your own list is free; uploads count against the submissions rate.
        return super().get_throttles() if self.request.method == "POST" else []

    @extend_schema(responses={200: SubmissionSerializer(many=True)})
    def get(self, request: Request) -> Response:
        """Return your submissions, newest first."""
        return self.list(request)

    @extend_schema(
        request={"multipart/form-data": InputSerializer},
        responses={201: OutputSerializer, 200: OutputSerializer, 400: FIELD_ERRORS},
    )
    def post(self, request: Request) -> Response:
        """Verify and store a results bundle as a private run of yours."""
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        upload = fields.pop("bundle")
        try:
            done = submission_create(user=request.user, chunks=upload.chunks(), data=fields)
        except QuotaExceeded as exc:
            raise Throttled(detail=str(exc)) from None
        except FieldError as exc:
            return Response({exc.field: [exc.message]}, status=status.HTTP_400_BAD_REQUEST)
        except SubmissionRejected as exc:
            count = f"{exc.total} problem{'s' if exc.total != 1 else ''}"
            lines = [f"does not verify ({count}); nothing was stored", *exc.problems]
            return Response({"bundle": lines}, status=status.HTTP_400_BAD_REQUEST)
        done.submission.duplicate = done.duplicate  # type: ignore[attr-defined]
        body = self.OutputSerializer(done.submission, context={"request": request}).data
        return Response(body, status=status.HTTP_200_OK if done.duplicate else 201)


class SubmissionDetailApi(APIView):
    """``/api/submissions/<id>/``: one of your submissions (moderators see every one)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: SubmissionSerializer, 404: OpenApiResponse()})
    def get(self, request: Request, submission_id: int) -> Response:
        """Return the submission ``submission_id`` if it is yours."""
        try:
            submission = submission_visible(submission_id=submission_id, user=request.user)
        except Submission.DoesNotExist:
            raise NotFound(f"No submission {submission_id} of yours.") from None
        return Response(SubmissionSerializer(submission, context={"request": request}).data)
