"""``python manage.py render_frames``: render the frames of stored episodes that lack them."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from leaderboard.models import Episode
from leaderboard.selectors import episode_cells
from leaderboard.services.frames import episode_frames_render


class Command(BaseCommand):
    help = "Render and store the missing frames of stored episodes (uploaded runs need it)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", type=int, default=None, help="only this run")
        parser.add_argument("--size", type=int, default=None, help="default: the run's image size")
        parser.add_argument("--queue", action="store_true", help="queue on the render workers")

    def handle(self, *args: Any, **options: Any) -> None:
        episodes = Episode.objects.filter(
            status__in=[Episode.Status.COMPLETED, Episode.Status.ERROR]
        )
        if options["run"] is not None:
            episodes = episodes.filter(run_id=options["run"])
        started = time.monotonic()
        rendered = reused = 0
        for episode_id, spec, metadata in episodes.values_list("pk", "run__spec", "run__metadata"):
            size = options["size"] or _image_size(spec, metadata)
            if options["queue"]:
                from leaderboard.tasks import scene_render_frames

                episode = Episode.objects.select_related("scene").get(pk=episode_id)
                cells = [list(c) for c in episode_cells(episode)]
                scene_render_frames.delay(episode.scene.scene_id, cells, size)
                continue
            count = episode_frames_render(episode_id=episode_id, size=size)
            rendered, reused = rendered + count.rendered, reused + count.reused
        verb = "queued" if options["queue"] else "done"
        self.stdout.write(
            f"{verb}: {episodes.count()} episodes, {rendered} frames rendered, {reused} reused, "
            f"{time.monotonic() - started:.1f} s"
        )


def _image_size(spec: dict[str, Any], metadata: dict[str, Any]) -> int:
    if spec and spec.get("image_size"):
        return int(spec["image_size"])
    return int((metadata or {}).get("renderer", {}).get("image_size", 1024))
