"""Writes: episodes that people play in the browser (``/play/``).

A player gets what a model gets: the current view, the view before the last move, the level's
text and the history of moves with their feedback (``evaluation.prompts``), and answers with
one of the six options. The server holds the episode and checks every answer: it must name
the step that is current, in an episode that has not ended, and the dynamics and the step
budget are the engine's own (``simulation.dynamics``). Each answer takes its step inside a
transaction, with the episode's row locked and the step index checked once more in the
update, so two tabs answering the same step cannot both go on: one wins, the other is
refused.

A signed-in player's episodes are stored as episodes of their own Human run (one per user,
agent ``human:<username>``, private, of a model entry they own): the same steps, metrics and
frames as a model's, so replays, scores, exports and ``mirrorbench verify`` treat them alike.
Each (scene, level) is stored once, the first time it is played to the end; playing it again
is practice. Anonymous visitors and practice episodes live in a ``Play`` row that no run,
score or bundle ever sees, deleted ``PLAY_TTL`` after its last move.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluation.agents import Decision
from evaluation.bundle import episode_record
from evaluation.config import RunConfig, bundle_header
from evaluation.metrics import episode_score
from evaluation.runner import step_record
from evaluation.vocabulary import COMPLETED, LEVELS, METRICS, levels_text
from leaderboard.boards.entries import (
    benchmark_current,
    entry_name_match,
    model_entry_create,
)
from leaderboard.boards.scores import run_scores_refresh
from leaderboard.errors import FieldError
from leaderboard.frames.selectors import run_image_size
from leaderboard.frames.services import FrameSpec, frames_prefetch, frames_register
from leaderboard.models import Episode, ModelEntry, Play, Run, Scene, Step
from leaderboard.play.selectors import HUMAN_AGENT_PREFIX, human_run, human_set_bundle
from leaderboard.play.state import Player, PlayNotFound, PlayRefused, PlayState
from leaderboard.submissions.services import Submitted, submission_create
from simulation.backends import renderer_version
from simulation.catalogue import get_scene, scene_set
from simulation.dynamics import Action, EpisodeState, Vec3, apply_action
from simulation.renderer import frame_key

PLAY_TTL = timedelta(hours=6)
"""An unstored episode is deleted this long after its last move."""
MAX_LATENCY_S = 86_400
"""The longest think time a step records (the bundle schema's limit)."""


def _replay(scene_id: str, options: Sequence[int]) -> tuple[EpisodeState, list[Vec3], list[bool]]:
    state = EpisodeState(get_scene(scene_id))
    cells: list[Vec3] = [state.cell]
    executed = []
    for option in options:
        transition = state.step(Action(option))
        cells.append(transition.cell)
        executed.append(transition.executed)
    return state, cells, executed


def _state(
    *,
    ref: str,
    scene: Scene,
    level: int,
    options: list[int],
    size: int,
    episode_id: int | None = None,
    practice: bool = False,
    register: bool = True,
) -> PlayState:
    """Return the player's view of an episode; ``register``: register the frames it shows
    (the start and each answer do; reading the state again writes nothing)."""
    state, cells, executed = _replay(scene.scene_id, options)
    if register:
        # Only registered frames are served: the current view and the one before it.
        frames_register(FrameSpec(scene, cell, size) for cell in cells[-2:])
        if not state.done:
            last = Action(options[-1]) if options else None
            _next_views_prefetch(scene, cells[-1], size, last=last)
    version = renderer_version()
    metrics = None
    if state.done:
        score = episode_score(state.distances)
        metrics = {m: getattr(score, m) for m in METRICS}
    return PlayState(
        ref=ref,
        scene=scene,
        level=level,
        options=list(options),
        executed=executed,
        cells=cells,
        distances=list(state.distances),
        done=state.done,
        success=state.success,
        keys=[frame_key(version, scene.scene_id, cell, size) for cell in cells],
        episode_id=episode_id,
        practice=practice,
        metrics=metrics,
    )


def _next_views_prefetch(scene: Scene, cell: Vec3, size: int, *, last: Action | None) -> None:
    """Register the up to six views the player's next move can lead to and have them made and
    stored while the player reads this one (``frames_prefetch``), so the next key press finds
    its frame stored. The view of the ``last`` move again comes first: a player going
    somewhere presses the same key several times (the shortest paths to the mark do)."""
    engine_scene = get_scene(scene.scene_id)
    actions = sorted(Action, key=lambda action: action != last)  # stable: the rest in order
    nexts = dict.fromkeys(apply_action(engine_scene, cell, action).cell for action in actions)
    nexts.pop(cell, None)  # a refused move shows the view the player already has
    keys = frames_register(FrameSpec(scene, next_cell, size) for next_cell in nexts)
    transaction.on_commit(lambda: frames_prefetch(keys))


def _human_entry(user: Any) -> ModelEntry:
    """Return the user's Human entry (``Human (<username>)``), created if needed.

    When someone else's entry has that name, or one that looks like it, the user's entry is
    ``Human (<username>, <id>)``.
    """
    names = (f"Human ({user.username})", f"Human ({user.username}, {user.pk})")
    for name in names:
        try:
            clean, existing = entry_name_match(name=name, field="username")
        except FieldError:
            continue  # it looks like another entry's name
        if existing is None:
            return model_entry_create(
                name=clean, kind=ModelEntry.Kind.HUMAN, owner=user, field="username"
            )
        if existing.owner_id == user.pk:
            return existing
    raise FieldError(
        "username",
        f"entries named {names[0]!r} and {names[1]!r}, or like them, belong to others: ask a "
        "moderator",
    )


def human_run_ensure(*, user: Any) -> Run:
    """Return the user's Human run, creating it and its model entry on first play.

    The run is private, evaluated here, and stays ``completed``: it is a collection of the
    episodes played so far, which no worker ever picks up (only running runs are). Its header
    is fixed now (renderer, image size), as a model run's is.
    """
    run = human_run(user=user)
    if run is not None:
        return run
    with transaction.atomic():
        # One creation at a time per user: two first plays at once make one run.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        run = human_run(user=user)
        if run is not None:
            return run
        config = RunConfig(
            agent=f"{HUMAN_AGENT_PREFIX}{user.username}",
            image_size=settings.MIRRORBENCH_PLAY_IMAGE_SIZE,
        )
        scenes = list(scene_set())
        now = timezone.now()
        return Run.objects.create(
            model_entry=_human_entry(user),
            benchmark=benchmark_current(),
            owner=user,
            source=Run.Source.EVALUATED,
            status=Run.Status.COMPLETED,
            visibility=Run.Visibility.PRIVATE,
            agent=config.agent,
            spec=config.as_dict(),
            metadata=bundle_header(config, scenes=scenes),
            episodes_expected=len(scenes) * len(config.levels),
            started=now,
            finished=now,
        )


def _scene_and_level(
    *, scene_id: str | None, level: int | None, run: Run | None, rng: random.Random
) -> tuple[Scene, int]:
    """Return the scene row and level to play: the ones asked for, or drawn at random.

    A signed-in player draws among the episodes of their set not played yet (all of them once
    the set is complete).
    """
    scenes = {s.scene_id: s for s in benchmark_current().scenes.all()}
    if scene_id is not None and scene_id not in scenes:
        raise FieldError("scene", f"expected a scene of this benchmark, got {scene_id[:100]!r}")
    if level is not None and level not in LEVELS:
        raise FieldError("level", f"expected one of {levels_text()}, got {level!r}")
    candidates = [
        (s, lv)
        for s in sorted(scenes)
        for lv in LEVELS
        if (scene_id is None or s == scene_id) and (level is None or lv == level)
    ]
    if run is not None and len(candidates) > 1:
        played = set(run.episodes.values_list("scene__scene_id", "level"))
        candidates = [c for c in candidates if c not in played] or candidates
    chosen, chosen_level = rng.choice(candidates)
    return scenes[chosen], chosen_level


def plays_expired_delete(*, now: Any = None) -> int:
    """Delete the unstored episodes whose last move is older than ``PLAY_TTL``."""
    cutoff = (now or timezone.now()) - PLAY_TTL
    deleted, _ = Play.objects.filter(updated__lt=cutoff).delete()
    return deleted


def play_start(
    *,
    player: Player,
    scene_id: str | None = None,
    level: int | None = None,
    rng: random.Random | None = None,
) -> PlayState:
    """Start an episode of ``scene_id`` at ``level`` (either drawn at random when None).

    A signed-in player's first episode of a (scene, level) is a stored episode of their Human
    run; an unfinished one is resumed, not restarted (its moves stand, as a model's do); a
    finished one is played again as practice, unstored. Raises FieldError for an unknown scene
    or level.
    """
    rng = rng or random.SystemRandom()
    plays_expired_delete()
    user = player.user
    run = human_run_ensure(user=user) if user is not None else None
    scene, level = _scene_and_level(scene_id=scene_id, level=level, run=run, rng=rng)
    size = settings.MIRRORBENCH_PLAY_IMAGE_SIZE
    if run is not None:
        size = run_image_size(run)
        try:
            with transaction.atomic():
                episode, _ = Episode.objects.get_or_create(
                    run=run,
                    scene=scene,
                    level=level,
                    defaults={"status": Episode.Status.RUNNING, "heartbeat": timezone.now()},
                )
        except IntegrityError:  # a twin request created it a moment ago
            episode = Episode.objects.get(run=run, scene=scene, level=level)
        if episode.status == Episode.Status.RUNNING:
            # Resumed: its current views are registered again, as a start registers them.
            return _episode_state(player=player, ref=f"e{episode.pk}", register=True)
    play = Play.objects.create(
        owner=user,
        session=player.session if user is None else "",
        scene=scene,
        level=level,
        updated=timezone.now(),
    )
    return _state(
        ref=f"p{play.pk.hex}", scene=scene, level=level, options=[], size=size, practice=bool(run)
    )


def _parse_ref(ref: str) -> tuple[str, Any]:
    """Return ("e", episode id) or ("p", play UUID); PlayNotFound for anything else."""
    try:
        if ref.startswith("e"):
            return "e", int(ref[1:])
        if ref.startswith("p"):
            return "p", uuid.UUID(hex=ref[1:])
    except ValueError:
        pass
    raise PlayNotFound(f"no episode {ref[:40]!r} of yours")


def _stored_episodes(player: Player) -> Any:
    if player.user is None:
        return Episode.objects.none()
    return Episode.objects.filter(
        run__owner=player.user,
        run__agent__startswith=HUMAN_AGENT_PREFIX,
        run__source=Run.Source.EVALUATED,
    )


def _plays(player: Player) -> Any:
    if player.user is not None:
        return Play.objects.filter(owner=player.user)
    return Play.objects.filter(owner__isnull=True, session=player.session)


def play_get(*, player: Player, ref: str) -> PlayState:
    """Return an episode of ``player`` as it stands (PlayNotFound if it is not theirs); reading
    it writes nothing."""
    return _episode_state(player=player, ref=ref, register=False)


def _episode_state(*, player: Player, ref: str, register: bool) -> PlayState:
    kind, pk = _parse_ref(ref)
    if kind == "e":
        episode = _stored_episodes(player).select_related("scene", "run").filter(pk=pk).first()
        if episode is None:
            raise PlayNotFound(f"no episode {ref!r} of yours")
        options = list(episode.steps.order_by("index").values_list("option", flat=True))
        return _state(
            ref=ref,
            scene=episode.scene,
            level=episode.level,
            options=options,
            size=run_image_size(episode.run),
            episode_id=episode.pk,
            register=register,
        )
    play = _plays(player).select_related("scene").filter(pk=pk).first()
    if play is None:
        raise PlayNotFound(f"no episode {ref!r} of yours (unstored episodes expire after a while)")
    return _state(
        register=register,
        ref=ref,
        scene=play.scene,
        level=play.level,
        options=list(play.options),
        size=settings.MIRRORBENCH_PLAY_IMAGE_SIZE,
        practice=play.owner_id is not None,
    )


def _check_turn(*, done: bool, steps_taken: int, index: int) -> None:
    if done:
        raise PlayRefused(f"this episode has ended after {steps_taken} steps: no more answers")
    if index != steps_taken:
        raise PlayRefused(
            f"step {index} is not the current step, {steps_taken}: "
            + (
                "it was answered already (in another tab?); reload to go on from the current step"
                if index < steps_taken
                else "answer the current step first"
            )
        )


def _latency(since: Any, now: Any) -> float | None:
    if since is None:
        return None
    return round(min(max((now - since).total_seconds(), 0.0), MAX_LATENCY_S), 3)


def play_answer(*, player: Player, ref: str, index: int, option: int) -> PlayState:
    """Answer step ``index`` (0-based) of an episode with ``option`` (1 to 6).

    Raises:
        FieldError: ``option`` is not 1 to 6, or ``index`` is negative.
        PlayNotFound: The player has no episode ``ref``.
        PlayRefused: ``index`` is not the current step, or the episode has ended.
    """
    if not (isinstance(option, int) and 1 <= option <= len(Action)):
        raise FieldError("option", f"expected an option from 1 to 6, got {option!r}")
    if not (isinstance(index, int) and index >= 0):
        raise FieldError("index", f"expected a step index of 0 or more, got {index!r}")
    kind, pk = _parse_ref(ref)
    if kind == "e":
        return _stored_answer(player=player, ref=ref, pk=pk, index=index, option=option)
    return _unstored_answer(player=player, ref=ref, pk=pk, index=index, option=option)


def _stored_answer(*, player: Player, ref: str, pk: int, index: int, option: int) -> PlayState:
    now = timezone.now()
    with transaction.atomic():
        episode = (
            _stored_episodes(player)
            .select_for_update(of=("self",))
            .select_related("scene", "run")
            .filter(pk=pk)
            .first()
        )
        if episode is None:
            raise PlayNotFound(f"no episode {ref!r} of yours")
        _check_turn(
            done=episode.status != Episode.Status.RUNNING,
            steps_taken=episode.steps_taken,
            index=index,
        )
        steps = [s.as_record() for s in episode.steps.order_by("index")]
        state, _, _ = _replay(episode.scene.scene_id, [s["option"] for s in steps])
        size = run_image_size(episode.run)
        shown = frame_key(renderer_version(), episode.scene.scene_id, state.cell, size)
        transition = state.step(Action(option))
        step = step_record(index, Decision(f"Choice: [{option}]", option), transition, shown)
        step["latency_s"] = _latency(episode.heartbeat, now)
        steps.append(step)
        fields: dict[str, Any] = {
            "steps_taken": index + 1,
            "distances": state.distances,
            "heartbeat": now,
        }
        if state.done:
            score = episode_score(state.distances)
            record = episode_record(
                scene_id=episode.scene.scene_id,
                track=episode.scene.track,
                level=episode.level,
                status=COMPLETED,
                error=None,
                d0_steps=episode.scene.d0_steps,
                max_steps=episode.scene.max_steps,
                success=state.success,
                distances=state.distances,
                steps=steps,
                metrics={m: getattr(score, m) for m in METRICS},
            )
            fields.update(Episode.fields_from_record(record))
        # The row is locked; the condition on the step is a second guard, for any database.
        taken = Episode.objects.filter(
            pk=pk, status=Episode.Status.RUNNING, steps_taken=index
        ).update(**fields)
        if taken != 1:
            raise PlayRefused(f"step {index} was answered a moment ago (in another tab?)")
        try:
            with transaction.atomic():
                Step.from_record(pk, step).save(force_insert=True)
        except IntegrityError:
            raise PlayRefused(f"step {index} was answered a moment ago (in another tab?)") from None
        if state.done:
            run_scores_refresh(run=episode.run)
    return _state(
        ref=ref,
        scene=episode.scene,
        level=episode.level,
        options=[s["option"] for s in steps],
        size=size,
        episode_id=pk,
    )


def _unstored_answer(
    *, player: Player, ref: str, pk: uuid.UUID, index: int, option: int
) -> PlayState:
    now = timezone.now()
    with transaction.atomic():
        play = _plays(player).select_for_update().select_related("scene").filter(pk=pk).first()
        if play is None:
            raise PlayNotFound(
                f"no episode {ref!r} of yours (unstored episodes expire after a while)"
            )
        _check_turn(done=play.done, steps_taken=play.steps_taken, index=index)
        options = [*play.options, option]
        state, _, _ = _replay(play.scene.scene_id, options)
        taken = Play.objects.filter(pk=pk, done=False, steps_taken=index).update(
            options=options, steps_taken=index + 1, done=state.done, updated=now
        )
        if taken != 1:
            raise PlayRefused(f"step {index} was answered a moment ago (in another tab?)")
    return _state(
        ref=ref,
        scene=play.scene,
        level=play.level,
        options=options,
        size=settings.MIRRORBENCH_PLAY_IMAGE_SIZE,
        practice=play.owner_id is not None,
    )


def human_set_submit(*, user: Any, subset: str) -> Submitted:
    """Submit the user's Human set (``full``: all 264 episodes; ``quick``: the quick track).

    The bundle is built from the stored run (``play_selectors.human_set_bundle``) and goes
    through the submissions service like any upload, as kind ``human``: verified, stored as a
    private run, published and moderated from its submission page. The quick set has fewer
    than 264 episodes, so it is partial: a moderator decides whether it is listed.

    Raises FieldError when the set is not complete, and what ``submission_create`` raises.
    """
    run = human_run(user=user)
    if run is None:
        raise FieldError("subset", "you have not played any episode yet")
    records, missing = human_set_bundle(run=run, subset=subset)
    if missing:
        raise FieldError(
            "subset",
            f"{len(missing)} episodes of this set are not played to the end yet, for example "
            + ", ".join(f"{s} L{lv}" for s, lv in missing[:3]),
        )
    text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
    return submission_create(
        user=user,
        chunks=[text.encode()],
        data={"model_name": run.model_entry.name, "kind": ModelEntry.Kind.HUMAN},
    )
