"""Site-wide pages: about, the favicon."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from evaluation.bundle import benchmark_version
from evaluation.vocabulary import METRICS
from leaderboard.frames.selectors import gallery_scenes
from leaderboard.replays.selectors import frame_urls, gallery
from simulation.renderer import DEFAULT_SIZE


def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``, which browsers ask for unprompted: the site's SVG icon."""
    from django.templatetags.static import static

    return redirect(static("favicon.svg"), permanent=True)


ABOUT_SCENES = 4
"""Start views shown on the About page: the first scene of two people and two robots."""


def about(request: HttpRequest) -> HttpResponse:
    """``/about/``: what MirrorBench measures, with the start views of four scenes."""
    picked: list[Any] = []
    bodies: set[str] = set()
    for scene in gallery_scenes():
        per_track = sum(1 for s in picked if s.track == scene.track)
        if scene.body not in bodies and per_track < ABOUT_SCENES // 2:
            picked.append(scene)
            bodies.add(scene.body)
    examples = [
        {"scene": item.scene, "urls": frame_urls(item.start)}
        for item in gallery(scenes=picked, size=DEFAULT_SIZE)
    ]
    context = {
        "metrics": METRICS,
        "examples": examples,
        "protocol": benchmark_version(),
        "site": request.build_absolute_uri("/").rstrip("/"),
    }
    return render(request, "leaderboard/about.html", context)
