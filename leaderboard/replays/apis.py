"""REST API of one episode: every step with its prompt, response, action and frame."""

from __future__ import annotations

from drf_spectacular.utils import (
    extend_schema,
)
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.api import NOT_FOUND
from leaderboard.frames.selectors import episode_frame_keys
from leaderboard.models import Episode, Step
from leaderboard.replays.selectors import frame_urls
from leaderboard.runs.apis import EpisodeListApi
from leaderboard.runs.selectors import episode_list


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
        keys = episode_frame_keys(episode, cells)
        episode.frame_list = [  # type: ignore[attr-defined]
            {"view": i, "key": key, **frame_urls(key)} for i, key in enumerate(keys)
        ]
        return Response(self.OutputSerializer(episode, context={"request": request}).data)
