"""Reads: what the player of a browser episode is shown, their Human set, how models did.

``services.play`` plays the episodes; this module turns an episode's state into what the page
shows (the text a model is given at that step, the frames' URLs, the result) and reads the
player's Human run, its bundles and the models' episodes of the same scene and level.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.urls import reverse

from evaluation.prompts import (
    OPTION_TEXT,
    HistoryEntry,
    instructions_text,
    status_text,
    task_text,
)
from evaluation.vocabulary import LEVELS, METRICS
from leaderboard.models import Episode, ModelEntry, Run, RunScore, Step
from leaderboard.play.state import PlayState
from leaderboard.replays.selectors import frame_urls
from leaderboard.runs.selectors import run_header
from simulation.catalogue import get_scene, scene_set
from simulation.dynamics import Action
from simulation.versions import BENCHMARK_VERSION

HUMAN_AGENT_PREFIX = "human:"
"""The agent of a player's Human run: ``human:<username>``."""
SUBSETS = {"full": "the full set", "quick": "the quick track"}


@cache
def quick_scene_ids() -> tuple[str, ...]:
    """Return the scenes of the quick Human track: the first scene of each body, in order.

    Seven scenes (four human bodies, three robots) at each of the four levels: 28 episodes,
    about a tenth of the full set, covering every body and level.
    """
    first: dict[str, str] = {}
    for scene in scene_set().values():
        first.setdefault(scene.body.id, scene.id)
    return tuple(first.values())


def subset_episodes(subset: str) -> list[tuple[str, int]]:
    """Return the (scene, level) episodes of a Human set, level by level."""
    scenes = list(scene_set()) if subset == "full" else list(quick_scene_ids())
    return [(s, level) for level in LEVELS for s in scenes]


def human_run(*, user: Any) -> Run | None:
    """Return the user's Human run of this benchmark version, if they have played."""
    if user is None or not user.is_authenticated:
        return None
    return (
        Run.objects.select_related("model_entry", "benchmark")
        .filter(
            owner=user,
            source=Run.Source.EVALUATED,
            agent__startswith=HUMAN_AGENT_PREFIX,
            benchmark__name=BENCHMARK_VERSION,
        )
        .order_by("created")
        .first()
    )


def human_set_bundle(
    *, run: Run, subset: str | None = None, episode: Episode | None = None
) -> tuple[list[dict[str, Any]], list[tuple[str, int]]]:
    """Return a bundle of a Human run's finished episodes and the set's unfinished ones.

    ``subset`` (``full`` or ``quick``) names a set; ``episode`` a single stored episode. The
    header's selection is exactly that set, so ``mirrorbench verify`` checks every episode it
    names and reports none missing once the set is complete.
    """
    if episode is not None:
        wanted = [(episode.scene.scene_id, episode.level)]
    else:
        wanted = subset_episodes(subset or "full")
    rows = {
        (e.scene.scene_id, e.level): e
        for e in run.episodes.select_related("scene").filter(status=Episode.Status.COMPLETED)
    }
    steps: dict[int, list[dict[str, Any]]] = {}
    chosen = [rows[w] for w in wanted if w in rows]
    for step in Step.objects.filter(episode__in=chosen).order_by("episode_id", "index"):
        steps.setdefault(step.episode_id, []).append(step.as_record())
    header = run_header(run=run)
    header["selection"] = {
        "levels": sorted({level for _, level in wanted}),
        "scenes": list(dict.fromkeys(s for s, _ in wanted)),
    }
    records = [header, *(e.as_record(steps.get(e.pk, [])) for e in chosen)]
    return records, [w for w in wanted if w not in rows]


def human_progress(*, user: Any) -> dict[str, Any] | None:
    """Return how much of each Human set the user has finished, and their unfinished episodes."""
    run = human_run(user=user)
    if run is None:
        return None
    rows = list(run.episodes.values_list("scene__scene_id", "level", "status", "pk"))
    finished = {(s, lv) for s, lv, status, _ in rows if status == Episode.Status.COMPLETED}
    sets = []
    for subset, label in SUBSETS.items():
        wanted = subset_episodes(subset)
        done = sum(1 for w in wanted if w in finished)
        sets.append({"subset": subset, "label": label, "done": done, "total": len(wanted)})
    unfinished = [
        {"ref": f"e{pk}", "scene": s, "level": lv}
        for s, lv, status, pk in rows
        if status == Episode.Status.RUNNING
    ]
    return {"run": run, "sets": sets, "unfinished": unfinished, "finished": len(finished)}


def play_comparison(*, scene_id: str, level: int) -> list[dict[str, Any]]:
    """Return the listed public runs' episodes of one scene and level, best AVG first."""
    episodes = (
        Episode.objects.on_board()
        .filter(
            scene__scene_id=scene_id,
            level=level,
            status=Episode.Status.COMPLETED,
        )
        .select_related("run__model_entry")
        .order_by("-avg", "run__model_entry__name")
    )
    return [
        {
            "model": e.run.model_entry.name,
            "kind": e.run.model_entry.get_kind_display(),
            "avg": e.avg,
            "success": e.success,
            "steps": e.steps_taken,
            "replay": reverse("leaderboard:episode", kwargs={"episode_id": e.pk}),
        }
        for e in episodes
    ]


def reported_human_avg() -> float | None:
    """Return the overall AVG of the listed reported Human row (the paper's 0.968), if any."""
    score = RunScore.objects.filter(
        run__listed=True,
        run__source=Run.Source.REPORTED,
        run__model_entry__kind=ModelEntry.Kind.HUMAN,
        run__benchmark__name=BENCHMARK_VERSION,
        table="overall",
        track="overall",
    ).first()
    return score.avg if score else None


def play_view(state: PlayState) -> dict[str, Any]:
    """Return what the page shows of an episode, as JSON: the model's text, frames, result.

    The text is what ``evaluation.prompts.build_messages`` gives a model at this step: the
    level's fixed text, the moves so far with their feedback, the previous and current images,
    then the options, notes, budget and answer format.
    """
    scene = get_scene(state.scene.scene_id)
    history = [HistoryEntry(o, e) for o, e in zip(state.options, state.executed, strict=True)]
    previous = frame_urls(state.keys[-2]) if len(state.keys) > 1 else None
    view: dict[str, Any] = {
        "ref": state.ref,
        "scene": scene.id,
        "track": scene.track,
        "level": state.level,
        "index": state.index,
        "max_steps": scene.max_steps,
        "done": state.done,
        "stored": state.stored,
        "practice": state.practice,
        "task": task_text(scene, state.level),
        "history": status_text(scene, history),
        "instructions": instructions_text(scene, state.level),
        "frame": frame_urls(state.keys[-1]),
        "previous": previous,
        "answer_url": reverse("leaderboard:play-answer", kwargs={"ref": state.ref}),
        "state_url": reverse("leaderboard:play-state", kwargs={"ref": state.ref}),
        "options": [{"option": a.value, "text": OPTION_TEXT[a]} for a in Action],
    }
    if state.done:
        view["result"] = _result(state)
    return view


def _result(state: PlayState) -> dict[str, Any]:
    metrics = state.metrics or {}
    replay = (
        reverse("leaderboard:episode", kwargs={"episode_id": state.episode_id})
        if state.episode_id is not None
        else None
    )
    return {
        "success": state.success,
        "steps": state.index,
        "distances": state.distances,
        "metrics": {m: metrics.get(m) for m in METRICS},
        "models": play_comparison(scene_id=state.scene.scene_id, level=state.level),
        "reported_human_avg": reported_human_avg(),
        "replay": replay,
    }
