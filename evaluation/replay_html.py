"""One episode's replay as a single self-contained HTML file, for a paper, a talk or a mail.

Every frame is inlined as a WebP ``data:`` URI and the viewer's script and style
(``evaluation/replay_viewer/``) are written into the file, so it plays from disk with no request
to any server: its Content-Security-Policy allows nothing but inline data. The site's
``/episodes/<id>/export.html`` and ``mirrorbench replay-html`` both write it through
``replay_html``, so the two files are one viewer.

A view is what the replay shows at one position: view 0 is the start, view n follows step n.
``episode_views`` builds the views from the steps of a bundle record, and ``step_view`` the
part that describes one step, which the site's replay page uses too.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any

from evaluation.confusion import episode_behaviour
from evaluation.deferred import Deferred
from evaluation.metrics import D_TH
from evaluation.process_metrics import step_flags
from evaluation.prompts import OPTION_TEXT
from evaluation.vocabulary import (
    AVG,
    COMPLETED,
    EPISODE_METRICS,
    OUTCOMES,
    episode_outcome,
    metric_label,
)
from simulation.catalogue import get_scene
from simulation.dynamics import Action, Vec3

if TYPE_CHECKING:
    from PIL import Image
else:
    Image = Deferred("PIL.Image")  # an export's frames only: the site's pages never load it

VIEWER_DIR = Path(__file__).with_name("replay_viewer")
"""The viewer's template, script and style, shipped with the package."""

FOLD_CHARS = 600
"""Responses longer than this (or than ``FOLD_LINES`` lines) are folded in the replay."""
FOLD_LINES = 8
WEBP_QUALITY = 80
"""The frames' WebP quality: the site's viewer frames' (``leaderboard.frames.services``)."""

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'none'"
)
"""Nothing but what the file holds: a response that reads like markup could fetch nothing even
if it were ever read as HTML (it never is: the viewer sets text)."""


def option_text(option: int | None) -> str:
    """Return the words of an option (1 to 6), or an empty string for no option."""
    if option is None:
        return ""
    try:
        return OPTION_TEXT[Action(option)]
    except ValueError:
        return ""


def response_tail(response: str, chars: int = 90) -> str:
    """Return the end of a response (where the answer usually is), for a folded one's summary."""
    lines = [line.strip() for line in response.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    return last if len(last) <= chars else "…" + last[-chars:]


def step_view(step: Mapping[str, Any]) -> dict[str, Any]:
    """Return what a replay shows of one step, from its bundle record (or a stored step's
    fields of the same names): the answer, the move, the response and what was measured."""
    response = step.get("response") or ""
    option = step.get("option")
    return {
        "number": int(step["index"]) + 1,
        "option": option,
        "option_text": option_text(option),
        "executed": bool(step.get("executed")),
        "response": response,
        "folded": len(response) > FOLD_CHARS or response.count("\n") >= FOLD_LINES,
        "tail": response_tail(response),
        "parse_error": step.get("parse_error") or None,
        "input_tokens": step.get("input_tokens"),
        "output_tokens": step.get("output_tokens"),
        "latency_s": step.get("latency_s"),
        "cached": bool(step.get("cached", False)),
        "distance_after": step.get("distance_steps"),
        "says": answer_says(response, option),
    }


def answer_says(response: str, option: int | None) -> str:
    """Return what the process metrics read in a response, in words (``evaluation.
    process_metrics``): whether it names the mirror, calls the reflection its own, and
    contradicts its stated direction; an empty string when it does none of these."""
    flags = step_flags(response, option)
    parts = []
    if flags.mirror:
        parts.append("names the mirror")
    if flags.own:
        parts.append("calls the reflection its own")
    if flags.contradiction and flags.stated is not None:
        stated = OPTION_TEXT[Action(flags.stated)]
        parts.append(f"contradicts itself: its reasoning says {stated}, its choice is {option}")
    return "; ".join(parts)


def episode_cells(steps: Sequence[Mapping[str, Any]]) -> list[Vec3]:
    """Return every hand cell an episode showed: the start, then the cell after each step."""
    cells: list[Vec3] = [(0, 0, 0)]
    for step in steps:
        x, y, z = step["hand_cell"]
        cells.append((int(x), int(y), int(z)))
    return cells


def episode_views(
    steps: Sequence[Mapping[str, Any]], distances: Sequence[int]
) -> list[dict[str, Any]]:
    """Return an episode's views from its step records and its distances (one per view)."""
    cells = episode_cells(steps)
    return [
        {
            "index": i,
            "cell": list(cell),
            "distance": distances[i] if i < len(distances) else None,
            "last": i == len(cells) - 1,
            "step": step_view(steps[i]) if i < len(steps) else None,
        }
        for i, cell in enumerate(cells)
    ]


@dataclass(frozen=True)
class ChartPoint:
    step: int
    distance: int
    x: float
    y: float


@dataclass(frozen=True)
class DistanceChart:
    """A small SVG chart of distance per step, laid out here (templates only draw it)."""

    width: int
    height: int
    points: list[ChartPoint]
    threshold_y: float
    threshold: int
    top: int
    path: str
    pad: int = 28


def distance_chart(
    distances: Sequence[int],
    *,
    width: int = 480,
    height: int = 150,
    views: int | None = None,
    top: int | None = None,
) -> DistanceChart:
    """Lay out ``distances`` (one per view) with the success threshold line.

    ``views`` and ``top`` set the scales (default: this episode's), so that the curves of
    several episodes can share one chart.
    """
    pad = 28
    top = max([*distances, D_TH + 1, 1, top or 0])
    span_x = max((views or len(distances)) - 1, 1)

    def x(i: int) -> float:
        return round(pad + (width - 2 * pad) * i / span_x, 1)

    def y(d: float) -> float:
        return round(height - pad - (height - 2 * pad) * d / top, 1)

    points = [ChartPoint(i, d, x(i), y(d)) for i, d in enumerate(distances)]
    path = " ".join(f"{'M' if p.step == 0 else 'L'}{p.x},{p.y}" for p in points)
    return DistanceChart(width, height, points, y(D_TH), D_TH, top, path, pad)


def frame_webp(png: bytes, quality: int = WEBP_QUALITY) -> bytes:
    """Return a frame's PNG as the viewer's WebP (the site's quality and encoder setting)."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    buffer = io.BytesIO()
    # method 1: a fast encoder setting, as the site's frames.
    image.save(buffer, format="WEBP", quality=quality, method=1)
    return buffer.getvalue()


@dataclass(frozen=True)
class ReplayEpisode:
    """What the file says about the episode, above the viewer."""

    agent: str
    """Who played: the leaderboard's model name, or the bundle's agent."""
    scene_id: str
    level: int
    status: str
    success: bool
    metrics: Mapping[str, float | None] | None = None
    mirror_confused: bool = False
    source: str = ""
    """Where the episode comes from, in words (no address: the file links nowhere)."""
    notice: str = ""
    """A note above the viewer (frames rendered by another build than the agent saw, ...)."""


def _escape_json(data: Any) -> str:
    """Return ``data`` as JSON safe inside a ``<script>`` element (as Django's json_script)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003C").replace(">", "\\u003E")


def _data_uri(webp: bytes) -> str:
    return "data:image/webp;base64," + base64.b64encode(webp).decode("ascii")


def _summary(episode: ReplayEpisode, steps: int) -> str:
    outcome = episode_outcome(episode.status, episode.success)
    label = OUTCOMES[outcome] if outcome else episode.status.capitalize()
    text = f"<strong class='outcome'>{html.escape(label)}</strong>"
    text += f" after {steps} step{'' if steps == 1 else 's'}"
    metrics = episode.metrics or {}
    if metrics.get(AVG) is not None:
        parts = ", ".join(
            f"{metric_label(m)} {float(metrics.get(m) or 0):.3f}" for m in EPISODE_METRICS
        )
        text += f": {metric_label(AVG)} {float(metrics[AVG] or 0):.3f} ({parts})"
    text += "."
    if episode.mirror_confused:
        text += " <span class='badge confused'>mirror-confused</span>"
    return text


def _scene_line(scene_id: str) -> str:
    try:
        scene = get_scene(scene_id)
    except KeyError:
        return ""
    return html.escape(
        f"{scene.track.capitalize()} track: {scene.body.description}; hand: "
        f"{scene.hand.description}; mark: {scene.mark.description}. {scene.d0_steps} steps "
        f"from the mark at the start, budget {scene.max_steps}."
    )


def _chart_svg(chart: DistanceChart) -> str:
    base = chart.height - chart.pad
    right = chart.width - chart.pad
    distances = ", ".join(str(p.distance) for p in chart.points)
    parts = [
        f'<svg viewBox="0 0 {chart.width} {chart.height}" role="img" '
        f'aria-labelledby="chart-title" data-field="chart">',
        f'<title id="chart-title">Distance to the mark at each view: {distances}</title>',
        f'<line class="axis" x1="{chart.pad}" y1="{base}" x2="{right}" y2="{base}"></line>',
        f'<line class="threshold" x1="{chart.pad}" y1="{chart.threshold_y}" x2="{right}" '
        f'y2="{chart.threshold_y}"></line>',
        f'<text class="label" x="{right + 2}" y="{chart.threshold_y}" '
        f'dominant-baseline="middle">≤{chart.threshold}</text>',
        f'<text class="label" x="{chart.pad - 4}" y="34" text-anchor="end">{chart.top}</text>',
        f'<text class="label" x="{chart.pad - 4}" y="{base}" text-anchor="end">0</text>',
        f'<path class="line" d="{chart.path}"></path>',
    ]
    parts += [
        f'<circle class="point" cx="{p.x}" cy="{p.y}" r="5" data-step="{p.step}">'
        f"<title>View {p.step}: distance {p.distance}</title></circle>"
        for p in chart.points
    ]
    first = chart.points[0]
    parts.append(
        f'<circle class="marker" cx="{first.x}" cy="{first.y}" r="8" data-field="marker"></circle>'
    )
    parts.append("</svg>")
    return "".join(parts)


def _viewer_file(name: str) -> str:
    return (VIEWER_DIR / name).read_text(encoding="utf-8")


def replay_html(
    *, episode: ReplayEpisode, views: Sequence[Mapping[str, Any]], frames: Sequence[bytes]
) -> str:
    """Return the self-contained HTML replay of an episode.

    ``views`` are the episode's views (``episode_views``, or the site's replay views) and
    ``frames`` the WebP of each, in the same order. Every text of the episode is escaped: a
    response is data for the viewer's script, which sets it as text, never as markup.
    """
    if len(frames) != len(views):
        raise ValueError(f"one frame per view: {len(views)} views, {len(frames)} frames")
    if not views:
        raise ValueError("an episode has at least its start view")
    fields = ("cell", "distance", "last", "step")
    shown = [
        {**{f: view.get(f) for f in fields}, "frame": _data_uri(frame)}
        for view, frame in zip(views, frames, strict=True)
    ]
    data = {"views": shown, "threshold": D_TH}
    cached = any((view.get("step") or {}).get("cached") for view in views)
    chart = distance_chart([int(view.get("distance") or 0) for view in views])
    title = f"{episode.agent} in {episode.scene_id}, level {episode.level}"
    notice = (
        f'<p class="notice" role="note">{html.escape(episode.notice)}</p>' if episode.notice else ""
    )
    values = {
        "title": html.escape(title),
        "csp": html.escape(CONTENT_SECURITY_POLICY),
        "style": _viewer_file("viewer.css"),
        "script": _viewer_file("viewer.js"),
        "agent": html.escape(episode.agent),
        "scene_id": html.escape(episode.scene_id),
        "level": str(int(episode.level)),
        "summary": _summary(episode, len(views) - 1),
        "scene_line": _scene_line(episode.scene_id),
        "source": html.escape(episode.source),
        "notice": notice,
        "first_frame": shown[0]["frame"],
        "last_view": str(len(views) - 1),
        "cached_row": ('<dt>From cache</dt><dd data-field="cached">—</dd>' if cached else ""),
        "chart": _chart_svg(chart),
        "data": _escape_json(data),
    }
    return Template(_viewer_file("replay.html")).substitute(values)


def frames_notice(*, looks: bool, renderer: str, agent_renderer: str | None) -> str:
    """Return the note a replay needs about its frames, or an empty string: an agent that does
    not look, or frames rendered by another build than the one the agent was shown."""
    if not looks:
        return "This agent does not look at images; the frames show where its moves took the hand."
    if agent_renderer == renderer:
        return ""
    shown = agent_renderer or "another renderer build"
    return (
        f"These frames were rendered with {renderer}; the agent was shown frames from {shown}, "
        "which may differ in small details."
    )


class EpisodeNotFound(LookupError):
    """A bundle holds no episode of the scene and level asked for."""


def bundle_episode(
    episodes: Sequence[Mapping[str, Any]], *, scene_id: str, level: int
) -> Mapping[str, Any]:
    """Return the record of the episode of ``scene_id`` at ``level`` (``EpisodeNotFound``,
    naming a few that are there, otherwise)."""
    for record in episodes:
        if record.get("scene_id") == scene_id and record.get("level") == level:
            return record
    there = [f"{e.get('scene_id')}:{e.get('level')}" for e in episodes]
    listed = ", ".join(there[:5]) + (f" and {len(there) - 5} more" if len(there) > 5 else "")
    raise EpisodeNotFound(
        f"no episode {scene_id}:{level} in the bundle; it holds {listed or 'no episodes'}"
    )


def bundle_replay_episode(
    header: Mapping[str, Any], record: Mapping[str, Any], *, source: str, notice: str = ""
) -> ReplayEpisode:
    """Return what a replay file says about a bundle's episode ``record``."""
    agent = header.get("agent") or {}
    return ReplayEpisode(
        agent=str(agent.get("name") or "unknown agent"),
        scene_id=str(record["scene_id"]),
        level=int(record["level"]),
        status=str(record["status"]),
        success=bool(record.get("success")),
        metrics=record.get("metrics"),
        mirror_confused=record.get("status") == COMPLETED
        and episode_behaviour(record).mirror_confused,
        source=source,
        notice=notice,
    )


def first_different_move(
    a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]
) -> int | None:
    """Return the first view at which two episodes' views (``episode_views``) answer
    differently: another option, or a move where the other episode has ended; None when they
    make the same moves throughout."""
    for index in range(min(len(a), len(b))):
        step_a, step_b = a[index].get("step"), b[index].get("step")
        if step_a is None and step_b is None:
            return None
        if step_a is None or step_b is None or step_a["option"] != step_b["option"]:
            return index
    return None
