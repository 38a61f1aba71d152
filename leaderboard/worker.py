"""The worker's side of a run: claim an episode, play it storing its steps, finish the run."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.db import (
    DatabaseError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    connection,
    transaction,
)
from django.db.models import F, Q
from django.utils import timezone

from evaluation.adapters.retry import RetryPolicy
from evaluation.agents import ModelAgent
from evaluation.cache import ResponseCache
from evaluation.config import agent_factory, episode_seed
from evaluation.registry import parse_agent_spec
from evaluation.runner import FrameSource, run_episode
from leaderboard.boards.scores import run_list_if_complete, run_scores_refresh
from leaderboard.bulk import rows_insert
from leaderboard.data_version import data_version_bump
from leaderboard.frames.services import (
    FrameSpec,
    FrameStoreError,
    episode_frames_register,
    frame_png,
    frame_store,
    frames_register,
    render_pool,
    run_frames_queue,
)
from leaderboard.models import (
    Episode,
    Run,
    RunSecret,
    Step,
)
from leaderboard.runs import secrets as secrets_box
from leaderboard.runs.limits import (
    OutboundQuotaExceeded,
    OwnerQuotaClient,
    RateLimitedClient,
    owner_requests_today,
)
from leaderboard.runs.selectors import (
    limits_for,
    parallel_slots_free,
    provider_key,
    stale_after,
)
from leaderboard.runs.services import api_key_erase, quota_owner
from leaderboard.submissions.services import reproduction_record
from simulation.catalogue import get_scene
from simulation.versions import BENCHMARK_VERSION

logger = logging.getLogger(__name__)
T = TypeVar("T")


class EpisodeLost(Exception):
    """The task no longer holds its episode (another task took it over, or the run ended)."""


def _api_key(run_id: int) -> str | None:
    secret = RunSecret.objects.filter(run_id=run_id).first()
    return secrets_box.decrypt(bytes(secret.api_key)) if secret else None


def episode_claim(*, episode_id: int) -> str | None:
    """Claim a pending episode (or one whose task went silent); return the claim token."""
    token = secrets.token_hex(16)
    now = timezone.now()
    pending_or_stale = Q(status=Episode.Status.PENDING) | Q(
        status=Episode.Status.RUNNING, heartbeat__lt=now - stale_after()
    )
    claimed = (
        Episode.objects.filter(
            pk=episode_id,
            run__status=Run.Status.RUNNING,
            run__benchmark__name=BENCHMARK_VERSION,
        )
        .filter(pending_or_stale)
        .update(
            status=Episode.Status.RUNNING, claim=token, heartbeat=now, attempts=F("attempts") + 1
        )
    )
    if claimed != 1:
        # Nothing got updated: another task holds it, or it is finished, or the run ended.
        return None
    return token


DB_LOST_WAIT_S = 60.0
"""How long an episode's task waits, reconnecting, for a database that went away (a restart, a
fail-over) before giving up: far less than MIRRORBENCH_EPISODE_STALE_S, so the episode is still
this task's when the database is back, and nothing it did is lost or done again."""


DB_LOST_RESUMES = 5
"""How many times in a row one task goes on with its episode after losing the database with
no step stored in between: each resume that stores a step starts the count again, so a long
episode survives any number of short outages."""


def _while_database_lost(what: str, operation: Callable[[], T], *, first_wait: bool = False) -> T:
    """Run ``operation``, a transaction that is safe to run again; while the database cannot be
    reached (OperationalError, InterfaceError), connect again and retry, for ``DB_LOST_WAIT_S``.

    ``first_wait``: the connection has just failed; drop it and wait before the first try.
    Inside an outer transaction nothing is retried: the transaction is gone with its connection.
    """
    deadline = time.monotonic() + DB_LOST_WAIT_S
    delay = 0.5
    if first_wait:
        connection.close()
        time.sleep(delay)
    while True:
        try:
            return operation()
        except (OperationalError, InterfaceError) as exc:
            if connection.in_atomic_block or time.monotonic() + delay > deadline:
                raise
            logger.warning("%s: the database failed (%s); trying again in %.1f s", what, exc, delay)
            connection.close()  # a broken connection is not used again: the next query connects
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


@cache
def _heartbeat_sql() -> str:
    """The claim check of every stored step, as SQL written once: the ORM compiles the same
    update with its join on the run anew for each step (half the CPU of storing a blind
    baseline's step). Parameters: heartbeat, steps taken, episode, claim, status, run status."""
    episode, run = Episode._meta, Run._meta
    quote = connection.ops.quote_name

    def column(meta: Any, field: str) -> str:
        return quote(meta.get_field(field).column)

    return (
        f"UPDATE {quote(episode.db_table)} SET {column(episode, 'heartbeat')} = %s, "
        f"{column(episode, 'steps_taken')} = %s "
        f"WHERE {column(episode, 'id')} = %s AND {column(episode, 'claim')} = %s "
        f"AND {column(episode, 'status')} = %s AND {column(episode, 'run')} IN ("
        f"SELECT {column(run, 'id')} FROM {quote(run.db_table)} "
        f"WHERE {column(run, 'status')} = %s)"
    )


def _episode_heartbeat(episode_id: int, token: str, steps_taken: int) -> int:
    """Refresh the claim of a held episode of a running run; return how many rows it updated
    (1: still held; 0: another task took it over, or the run ended)."""
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(
            _heartbeat_sql(),
            [
                now,
                steps_taken,
                episode_id,
                token,
                Episode.Status.RUNNING.value,
                Run.Status.RUNNING.value,
            ],
        )
        return cursor.rowcount


def _steps_store(
    episode_id: int, token: str, steps: Sequence[tuple[dict[str, Any], FrameSpec]]
) -> None:
    """Store consecutive steps in one transaction: one claim refresh, one insert, and one
    registration of the frames of the views they led to (a replay serves registered frames
    only); raise EpisodeLost if the task lost the episode or one of the steps is stored
    already."""
    with transaction.atomic():
        held = _episode_heartbeat(episode_id, token, steps[-1][0]["index"] + 1)
        if held != 1:
            raise EpisodeLost(f"episode {episode_id} is no longer held by this task")
        try:
            rows_insert(Step, [Step.values_from_record(episode_id, record) for record, _ in steps])
        except IntegrityError:
            first, last = steps[0][0]["index"], steps[-1][0]["index"]
            raise EpisodeLost(f"steps {first}-{last} of episode {episode_id} exist") from None
        # Without asking the store (a HEAD on S3, in this transaction, at every step): a view
        # the model is shown is stored after its row exists (the step before registered it),
        # and frame_store marks the row then.
        frames_register([frame for _, frame in steps], check_store=False)


def _steps_store_waiting(
    episode_id: int, token: str, steps: Sequence[tuple[dict[str, Any], FrameSpec]]
) -> None:
    """``_steps_store``, waiting for the database while it fails (a restart, a full disk) so
    that the model's answers already in hand are stored rather than asked again.

    Safe to run again: steps found stored while this task still holds the episode are the ones
    this task stored before the failure (only the claim's holder writes steps), so a commit
    that went through unconfirmed is not taken for another task's work.
    """
    indices = [record["index"] for record, _ in steps]

    def store() -> None:
        try:
            _steps_store(episode_id, token, steps)
        except EpisodeLost:
            stored = Step.objects.filter(episode_id=episode_id, index__in=indices).count()
            held = Episode.objects.filter(
                pk=episode_id, claim=token, status=Episode.Status.RUNNING
            ).exists()
            if not (stored == len(indices) and held):
                raise

    _while_database_lost(f"episode {episode_id}: storing steps {indices[0]}-{indices[-1]}", store)


def _episode_release(episode_id: int, token: str) -> None:
    """Hand a held episode back (pending, its steps kept) for another task to go on with."""
    try:
        Episode.objects.filter(pk=episode_id, claim=token, status=Episode.Status.RUNNING).update(
            status=Episode.Status.PENDING, claim="", heartbeat=timezone.now()
        )
    except DatabaseError as exc:  # the stale-episode check will take it over
        logger.warning("episode %s could not be handed back: %s", episode_id, exc)


def _stored_steps(episode: Episode) -> list[dict[str, Any]]:
    return [step.as_record() for step in episode.steps.order_by("index")]


def episode_evaluate(*, episode_id: int) -> str:
    """Play one episode of a running run, storing each step as it happens.

    Returns what happened: ``throttled`` (the provider's parallel cap is reached: try again
    later), ``quota`` (the run's owner has used today's requests, MIRRORBENCH_USER_REQUESTS_PER_DAY:
    the episode is pending again, its steps kept, to go on tomorrow), ``claimed-elsewhere``,
    ``completed``, ``error`` or ``lost``.
    """
    run = Run.objects.select_related("owner").filter(episodes__pk=episode_id).first()
    if run is not None and not parallel_slots_free(run):
        return "throttled"
    payer = quota_owner(run)
    cap = settings.MIRRORBENCH_USER_REQUESTS_PER_DAY
    if payer is not None and owner_requests_today(payer) >= cap:
        return "quota"
    token = episode_claim(episode_id=episode_id)
    if token is None:
        return "claimed-elsewhere"
    episode = Episode.objects.select_related("run", "scene").get(pk=episode_id)
    config = episode.run.config
    if config is None:
        raise ValueError(f"run {episode.run_id} has no configuration to play episode {episode_id}")
    # Temperature 0 and no seed; a cap only if the configuration has one (old ones: 2048).
    factory = agent_factory(
        config,
        cache=_response_cache(config.agent),
        cache_scope=cache_scope(episode.run),
        api_key=_api_key(episode.run_id),
        retry=RetryPolicy(
            max_attempts=settings.MIRRORBENCH_RETRY_ATTEMPTS,
            base_delay_s=settings.MIRRORBENCH_RETRY_BASE_S,
        ),
    )
    agent = factory()
    limits = limits_for(config.agent, config.base_url)
    if limits.rpm and isinstance(agent, ModelAgent):
        key = provider_key(config.agent, config.base_url)
        agent.client = RateLimitedClient(agent.client, key, limits.rpm)
    if payer is not None and isinstance(agent, ModelAgent):
        agent.client = OwnerQuotaClient(agent.client, payer, cap)
    frames = (
        FrameSource(
            config.image_size,
            on_render=lambda key, png: frame_store(key=key, png=png),
            lookup=frame_png,
            pool=render_pool(),  # the worker's renderers, shared by all its episodes
        )
        if agent.needs_images
        else None
    )
    scene = get_scene(episode.scene.scene_id, config.condition)
    # The start view and the views of steps already stored: a replay can show them at once.
    episode_frames_register(episode)
    # A model's every answer is a paid call that takes seconds: each step is stored as it comes,
    # so that a failure loses none. An agent that plays here (a baseline) plays an episode in
    # milliseconds, and the same way again from the same seed: its steps are stored together
    # when the episode ends, in one transaction rather than one a step (a 264-episode random
    # run took 11.5 s of a worker's CPU, 6.1 s so).
    per_step = isinstance(agent, ModelAgent)
    played: list[tuple[dict[str, Any], FrameSpec]] = []

    def on_step(step: dict[str, Any]) -> None:
        frame = FrameSpec(
            episode.scene, tuple(step["hand_cell"]), config.image_size, condition=config.condition
        )
        if per_step:
            _steps_store_waiting(episode_id, token, [(step, frame)])
        else:
            played.append((step, frame))

    resumed = 0  # resumes in a row with no step stored in between
    stored_before = -1
    while True:
        played.clear()  # a resume plays on from the steps stored
        try:
            record = run_episode(
                scene,
                episode.level,
                agent,
                seed=episode_seed(config.seed, episode.repeat),
                frames=frames,
                image_size=config.image_size,
                on_step=on_step,
                prior_steps=_stored_steps(episode),
                repeat=episode.repeat if config.repeats > 1 else None,
            )
            if played:
                _steps_store_waiting(episode_id, token, played)
            break
        except EpisodeLost as exc:
            logger.info("%s", exc)
            return "lost"
        except FrameStoreError:
            # The frame store failed for longer than its retries: hand the episode back, its
            # steps kept, so that the task's retry goes on with it rather than the stale check.
            _episode_release(episode_id, token)
            raise
        except OutboundQuotaExceeded as exc:
            # Not the model's fault: hand the episode back, its steps kept, to resume later.
            logger.info("episode %s waits: %s", episode_id, exc)
            _episode_release(episode_id, token)
            return "quota"
        except (OperationalError, InterfaceError) as exc:
            # The database went away mid-episode (a restart, a fail-over, a full disk). Once it
            # is back, go on from the steps stored, still holding the episode: a retry of the
            # task would find it held and leave it to the stale check. The step being stored
            # when the database went (or whose commit was not confirmed) is read back or asked
            # again.
            if connection.in_atomic_block:
                raise
            logger.warning("episode %s: the database failed (%s); waiting for it", episode_id, exc)
            stored_now = _while_database_lost(
                f"episode {episode_id}: reconnecting",
                lambda: Step.objects.filter(episode_id=episode_id).count(),
                first_wait=True,
            )
            resumed = 1 if stored_now > stored_before else resumed + 1
            stored_before = stored_now
            if resumed > DB_LOST_RESUMES:
                raise
            # Back means writable again (a full disk fails writes, not reads): the claim's
            # heartbeat is refreshed, which also tells whether the episode is still held.
            held = _while_database_lost(
                f"episode {episode_id}: reconnecting",
                lambda: Episode.objects.filter(
                    pk=episode_id, claim=token, status=Episode.Status.RUNNING
                ).update(heartbeat=timezone.now()),
            )
            if not held:
                return "lost"
    done = _while_database_lost(
        f"finishing episode {episode_id}",
        lambda: Episode.objects.filter(
            pk=episode_id, claim=token, status=Episode.Status.RUNNING
        ).update(heartbeat=timezone.now(), **Episode.fields_from_record(record)),
    )
    if done != 1:
        return "lost"
    _while_database_lost(
        f"completing run {episode.run_id}", lambda: run_finish_if_done(run_id=episode.run_id)
    )
    return str(record["status"])


def cache_scope(run: Run) -> str:
    """Whose cached answers a run may reuse: its owner's (hosted runs), else the server's
    (runs queued by an administrator with the workers' own keys)."""
    return f"user:{run.owner_id}" if run.owner_id else "server"


def _response_cache(agent: str) -> Any:
    """Return the worker's one response cache (model agents only).

    One connection per process, shared by its threads (the cache locks), rather than a new
    SQLite connection per episode that nothing closes.
    """
    if not parse_agent_spec(agent).is_model:
        return None
    return _shared_cache(str(Path(settings.DATA_DIR) / "cache" / "responses.sqlite3"))


@cache
def _shared_cache(path: str) -> Any:
    return ResponseCache(Path(path))


def run_finish_if_done(*, run_id: int) -> bool:
    """Complete a running run whose episodes have all finished; return whether this call did."""
    if Episode.objects.filter(run_id=run_id, status__in=Episode.UNFINISHED).exists():
        return False
    # One transaction: nobody sees the run completed before its scores and listing exist.
    with transaction.atomic():
        finished = Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).update(
            status=Run.Status.COMPLETED, finished=timezone.now()
        )
        if finished != 1:
            return False  # another task got there first, or the run was cancelled
        run = Run.objects.get(pk=run_id)
        api_key_erase(run_id)
        run_scores_refresh(run=run)
        run_list_if_complete(run=run)
        reproduction_record(run=run)  # a no-op unless the run reproduces a submission
        run_frames_queue(run=run)
        data_version_bump()  # the run's page and the run lists show it completed
    return True
