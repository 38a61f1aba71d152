"""``python manage.py render_frames``: render the frames of stored episodes that lack them.

By default every frame of every episode (or of ``--run``); ``--eager`` only what a finished run
renders by itself (each scene's start and each episode's final view); ``--gallery`` the scene
gallery's frames. ``--queue`` hands the work to the render workers instead.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.frames.services import (
    frames_render,
    frames_unstored,
    gallery_frames_register,
    run_eager_frame_keys,
    run_frames_register,
)
from leaderboard.models import Frame, Run
from leaderboard.tasks import frames_render_keys
from simulation.renderer import DEFAULT_SIZE


class Command(BaseCommand):
    help = "Render and store the missing frames of stored episodes (or of the scene gallery)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", type=int, default=None, help="only this run")
        parser.add_argument(
            "--eager", action="store_true", help="only the start and final view of each episode"
        )
        parser.add_argument("--gallery", action="store_true", help="the scene gallery's frames")
        parser.add_argument("--size", type=int, default=DEFAULT_SIZE, help="gallery image size")
        parser.add_argument("--queue", action="store_true", help="queue on the render workers")

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        if options["gallery"]:
            keys = gallery_frames_register(size=options["size"])
        else:
            runs = Run.objects.exclude(source=Run.Source.REPORTED)
            if options["run"] is not None:
                runs = runs.filter(pk=options["run"])
                if not runs.exists():
                    raise CommandError(f"--run: no run {options['run']} with episodes")
            keys = []
            for run in runs:
                keys += run_eager_frame_keys(run=run) if options["eager"] else []
                keys += [] if options["eager"] else run_frames_register(run=run)
        keys = list(dict.fromkeys(keys))
        if options["queue"]:
            keys = frames_unstored(keys)  # a second `make run` queues nothing

            by_scene: dict[int, list[str]] = {}
            for key, scene in Frame.objects.filter(pk__in=keys).values_list("pk", "scene_id"):
                by_scene.setdefault(scene, []).append(key)
            for chunk in by_scene.values():
                frames_render_keys.delay(chunk)
            self.stdout.write(f"queued: {len(keys)} frames in {len(by_scene)} tasks")
            return
        count = frames_render(keys)
        self.stdout.write(
            f"done: {len(keys)} frames, {count.rendered} rendered, {count.reused} already "
            f"stored, {time.monotonic() - started:.1f} s"
        )
