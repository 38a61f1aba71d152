"""Reads: the share cards of model, run and episode pages, and what their preview tags say.

Only what anyone may see gets a card: a public model entry, a public run, an episode of a
public run; each card's PNG is cached with the data version (``data_version_cached``), keyed
by everything it shows, so a GET draws it once and writes nothing to the database.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.urls import reverse

from evaluation.vocabulary import LEVEL_KEYS, OUTCOMES, OVERALL, episode_outcome
from leaderboard.boards.badges import model_badge_score
from leaderboard.boards.selectors import model_entry_list
from leaderboard.cards.images import HEIGHT, WIDTH, episode_card_png, score_card_png
from leaderboard.data_version import data_version_cached
from leaderboard.frames.selectors import episode_frame_keys, frame_file_read, frames_stored
from leaderboard.models import Episode, ModelEntry, Run, RunScore

CARD_SIZE = (WIDTH, HEIGHT)


@dataclass(frozen=True)
class ShareMeta:
    """What a page's Open Graph and Twitter card tags say."""

    title: str
    description: str
    url: str
    image: str
    image_alt: str
    width: int = WIDTH
    height: int = HEIGHT


def _level_avgs(run_id: int | None) -> list[tuple[str, float | None]]:
    values: dict[str, float] = {}
    if run_id is not None:
        rows = RunScore.objects.filter(run_id=run_id, track=OVERALL, table__in=LEVEL_KEYS)
        values = dict(rows.values_list("table", "avg"))
    return [(f"L{level}", values.get(level)) for level in LEVEL_KEYS]


def _interval_text(interval: tuple[float, float] | None, *, reported: bool) -> str:
    """The 95% interval under a card's score (the card's font has no en dash)."""
    if interval is not None:
        return f"95% CI {interval[0]:.3f} to {interval[1]:.3f}"
    return "no interval: reported in the paper" if reported else "no score on the board yet"


def public_entry(*, slug: str) -> ModelEntry | None:
    """Return the public model entry ``slug`` (one with a public run), or None."""
    return model_entry_list().filter(slug=slug).first()


def public_run(*, run_id: int) -> Run | None:
    """Return run ``run_id`` when anyone may see it, with its model entry; else None."""
    return Run.objects.public().select_related("model_entry", "benchmark").filter(pk=run_id).first()


def public_episode(*, episode_id: int) -> Episode | None:
    """Return episode ``episode_id`` of a public run, with its run and scene; else None."""
    return (
        Episode.objects.filter(run__visibility=Run.Visibility.PUBLIC, pk=episode_id)
        .select_related("run", "run__model_entry", "scene")
        .first()
    )


def model_card(*, entry: ModelEntry) -> bytes:
    """Return the model's card: its overall AVG with its interval and a radar of the levels'
    AVG, from its run on the board (the badge's)."""
    score = model_badge_score(entry=entry, metric=f"{OVERALL}_avg")
    run_id = score.run_id if score else None

    def build() -> bytes:
        return score_card_png(
            title=entry.name,
            subtitle=f"{entry.get_kind_display()} · MirrorBench overall AVG",
            headline=f"{score.value:.3f}" if score else "—",
            detail=_interval_text(score.interval if score else None, reported=bool(score)),
            levels=_level_avgs(run_id),
        )

    return data_version_cached("card-model", (entry.pk, entry.name, run_id), build)


def run_card(*, run: Run) -> bytes:
    """Return the run's card: its overall AVG with its interval and a radar of the levels'."""
    row = RunScore.objects.filter(run=run, table=OVERALL, track=OVERALL).first()

    def build() -> bytes:
        ci = (row.ci or {}).get("avg") if row else None
        detail = _interval_text((ci[0], ci[1]) if ci else None, reported=True)
        if row and row.episodes:
            detail += f" · {row.episodes} episodes"
        return score_card_png(
            title=run.model_entry.name,
            subtitle=f"Run {run.pk} · {run.get_source_display()} · overall AVG",
            headline=f"{row.avg:.3f}" if row else "—",
            detail=detail if row else "no score yet",
            levels=_level_avgs(run.pk if row else None),
        )

    return data_version_cached("card-run", (run.pk, run.model_entry.name, run.status), build)


def episode_card(*, episode: Episode) -> bytes:
    """Return the episode's card: its last stored frame (the final view when it is rendered)
    and its outcome."""
    keys = episode_frame_keys(episode)
    stored = frames_stored(keys)
    shown = next((k for k in reversed(keys) if k in stored), None)
    outcome = episode_outcome(episode.status, episode.success) or ""

    def build() -> bytes:
        frame = frame_file_read(shown, "png") if shown else None
        return episode_card_png(
            frame=frame,
            title=episode.run.model_entry.name,
            subtitle=f"{episode.scene.scene_id} · level {episode.level}",
            outcome=outcome,
            outcome_label=OUTCOMES.get(outcome, episode.get_status_display()),
            detail=f"{episode.steps_taken} steps · run {episode.run_id}",
        )

    return data_version_cached(
        "card-episode", (episode.pk, episode.status, episode.steps_taken, shown), build
    )


def model_share_meta(*, entry: ModelEntry, absolute: Callable[[str], str]) -> ShareMeta:
    """Return a model page's preview tags, from the entry as ``model_entry_detail`` gives it
    (its public runs and their scores prefetched: no query)."""
    rows = [
        score
        for run in sorted(entry.runs.all(), key=lambda run: not run.listed)
        for score in run.scores.all()
        if score.table == OVERALL and score.track == OVERALL
    ]
    if rows:
        ci = (rows[0].ci or {}).get("avg")
        interval = (ci[0], ci[1]) if ci else None
        said = f"Overall AVG {rows[0].avg:.3f} ({_interval_text(interval, reported=True)})."
    else:
        said = "No score yet."
    return ShareMeta(
        title=f"{entry.name} on MirrorBench",
        description=f"{said} Mirror self-recognition of a multimodal LLM acting as an embodied "
        "agent.",
        url=absolute(reverse("leaderboard:model", args=[entry.slug])),
        image=absolute(reverse("leaderboard:model-card", args=[entry.slug])),
        image_alt=f"{entry.name}: overall AVG and a radar of the four levels",
    )


def run_share_meta(*, run: Run, absolute: Callable[[str], str]) -> ShareMeta:
    """Return a run page's preview tags."""
    return ShareMeta(
        title=f"{run.model_entry.name}, run {run.pk} on MirrorBench",
        description=f"{run.get_source_display()} run of {run.model_entry.name}: scores by level "
        "and track, every episode frame by frame.",
        url=absolute(reverse("leaderboard:run", args=[run.pk])),
        image=absolute(reverse("leaderboard:run-card", args=[run.pk])),
        image_alt=f"{run.model_entry.name}, run {run.pk}: overall AVG and a radar of the levels",
    )


def episode_share_meta(*, episode: Episode, run: Run, absolute: Callable[[str], str]) -> ShareMeta:
    """Return an episode page's preview tags (``run``: the episode's, as the page has it)."""
    outcome = episode_outcome(episode.status, episode.success) or ""
    label = OUTCOMES.get(outcome, episode.get_status_display())
    return ShareMeta(
        title=f"{run.model_entry.name}: {episode.scene.scene_id}, level {episode.level}",
        description=f"{label} in {episode.steps_taken} steps. Watch the episode frame by frame "
        "on MirrorBench.",
        url=absolute(reverse("leaderboard:episode", args=[episode.pk])),
        image=absolute(reverse("leaderboard:episode-card", args=[episode.pk])),
        image_alt=f"The episode's last view and its outcome: {label}",
    )
