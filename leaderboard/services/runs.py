"""Writes: runs evaluated here, from creation to their last episode.

A run goes pending -> running -> completed (or cancelled, or failed); every transition is a
conditional update, so a duplicated task does nothing. Episodes are claimed with a token, their
steps stored as they happen, and an interrupted episode is taken over when its task goes silent.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth import get_user_model
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

from evaluation.agents import ModelAgent
from evaluation.messages import GenerationParams
from evaluation.prompts import LEVELS
from evaluation.registry import (
    AgentSpecError,
    agent_spec_check,
    make_agent_factory,
    parse_agent_spec,
)
from evaluation.runner import FrameSource, run_episode
from leaderboard import secrets as secrets_box
from leaderboard.endpoints import EndpointRefused, endpoint_check
from leaderboard.models import (
    Episode,
    ModelEntry,
    Run,
    RunSecret,
    Step,
)
from leaderboard.selectors import (
    limits_for,
    parallel_slots_free,
    provider_key,
    run_header,
    stale_after,
)
from leaderboard.services.data_version import data_version_bump
from leaderboard.services.entries import (
    benchmark_current,
    entry_name_match,
    model_entry_create,
    model_entry_upsert,
)
from leaderboard.services.errors import FieldError
from leaderboard.services.frames import (
    FrameStoreError,
    frame_png,
    frame_store,
    render_pool,
    run_frames_queue,
)
from leaderboard.services.limits import (
    OutboundQuotaExceeded,
    OwnerQuotaClient,
    RateLimitedClient,
    owner_requests_today,
)
from leaderboard.services.mail import confirmed_email_required
from leaderboard.services.scores import run_list_if_complete, run_scores_refresh
from simulation.catalogue import get_scene, select_scenes
from simulation.render import DEFAULT_SIZE
from simulation.versions import BENCHMARK_VERSION

logger = logging.getLogger(__name__)
T = TypeVar("T")


class EpisodeLost(Exception):
    """The task no longer holds its episode (another task took it over, or the run ended)."""


@dataclass(frozen=True)
class RunSpec:
    """What to evaluate: the agent and the part of the benchmark."""

    agent: str
    levels: tuple[int, ...] = LEVELS
    scenes: str = "all"
    base_url: str | None = None
    seed: int = 0
    """The run's seed (the random agent's); never sent to a model API."""
    image_size: int = DEFAULT_SIZE
    image_history: int = 1
    max_tokens: int | None = None
    """Cap on each answer's output tokens; None: none (Anthropic gets the model's maximum).
    Specs stored before protocol v3 hold 2048, which their runs keep sending."""
    pairs: tuple[tuple[str, int], ...] = ()
    """Only these (scene id, level) episodes, when given (a reproduction's sample)."""
    use_cache: bool = True
    """Reuse cached answers to identical requests; a reproduction must ask the model afresh."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "levels": list(self.levels),
            "scenes": self.scenes,
            "base_url": self.base_url,
            "seed": self.seed,
            "image_size": self.image_size,
            "image_history": self.image_history,
            "max_tokens": self.max_tokens,
            **({"pairs": [list(p) for p in self.pairs]} if self.pairs else {}),
            **({"use_cache": False} if not self.use_cache else {}),
        }


def _queue_run_start(run_id: int) -> None:
    from leaderboard.tasks import run_start

    run_start.delay(run_id)


@transaction.atomic
def run_create(
    *,
    model_entry: ModelEntry,
    spec: RunSpec,
    owner: Any = None,
    visibility: str = Run.Visibility.PUBLIC,
    api_key: str | None = None,
) -> Run:
    """Create a pending run with one pending episode per (scene, level); queue its start.

    ``api_key`` (hosted runs) is stored encrypted and erased when the run ends; without it the
    workers use their environment's key. Raises FieldError for an unknown agent, scene or
    level, or a base URL the server will not call.
    """
    if spec.base_url:
        try:
            endpoint_check(spec.base_url, user_chosen=owner is not None and not owner.is_staff)
        except EndpointRefused as exc:
            raise FieldError("base_url", str(exc)) from None
    try:
        agent_spec_check(spec.agent)
    except AgentSpecError as exc:
        raise FieldError("agent", str(exc)) from None
    if not spec.levels or any(level not in LEVELS for level in spec.levels):
        raise FieldError("levels", f"expected a non-empty subset of 0, 1, 2, 3, got {spec.levels}")
    try:
        scenes = select_scenes(spec.scenes)
    except KeyError as exc:
        raise FieldError("scenes", str(exc)) from None
    if not scenes:
        raise FieldError("scenes", "selected no scene")
    benchmark = benchmark_current()
    rows = {s.scene_id: s for s in benchmark.scenes.all()}
    run = Run.objects.create(
        model_entry=model_entry,
        benchmark=benchmark,
        owner=owner,
        source=Run.Source.EVALUATED,
        status=Run.Status.PENDING,
        visibility=visibility,
        agent=spec.agent,
        spec=spec.as_dict(),
        episodes_expected=len(spec.pairs) if spec.pairs else len(scenes) * len(spec.levels),
    )
    wanted = set(spec.pairs)
    Episode.objects.bulk_create(
        Episode(run=run, scene=rows[s.id], level=level, status=Episode.Status.PENDING)
        for level in spec.levels
        for s in scenes
        if not wanted or (s.id, level) in wanted
    )
    # The bundle header is fixed now (renderer, agent, generation), so exports never need a
    # client, a key or today's renderer version.
    run.metadata = run_header(run=run)
    run.save(update_fields=["metadata"])
    if api_key:
        try:
            sealed = secrets_box.encrypt(api_key)
        except secrets_box.KeyEncryptionKeyMissing as exc:
            raise FieldError("api_key", str(exc)) from None  # the transaction rolls back
        RunSecret.objects.create(run=run, api_key=sealed)
    transaction.on_commit(lambda: _queue_run_start(run.pk))
    return run


def _api_key(run_id: int) -> str | None:
    secret = RunSecret.objects.filter(run_id=run_id).first()
    return secrets_box.decrypt(bytes(secret.api_key)) if secret else None


def _erase_key(run_id: int) -> None:
    """The run has ended: its API key is no longer needed and must not be kept."""
    RunSecret.objects.filter(run_id=run_id).delete()


def runs_retired_fail() -> int:
    """Fail the unfinished runs of retired benchmark versions; return how many.

    This engine plays only the current version: a run queued before an upgrade would otherwise
    wait forever (its episodes are never claimed) or mix two protocols in one run.
    """
    with transaction.atomic():
        runs = list(
            Run.objects.filter(status__in=[Run.Status.PENDING, Run.Status.RUNNING])
            .exclude(benchmark__name=BENCHMARK_VERSION)
            .values_list("pk", "benchmark__name")
        )
        for run_id, version in runs:
            Run.objects.filter(pk=run_id).update(
                status=Run.Status.FAILED,
                finished=timezone.now(),
                error=f"benchmark {version} was retired before the run finished; this server "
                f"runs {BENCHMARK_VERSION}: evaluate the model again",
            )
            _erase_key(run_id)
    return len(runs)


def run_start(*, run_id: int) -> list[int]:
    """Mark a pending run running and return the ids of its episodes to queue.

    A run that is already running returns its pending episodes (a duplicated start queues
    tasks that find their episode claimed and do nothing).
    """
    Run.objects.filter(
        pk=run_id, status=Run.Status.PENDING, benchmark__name=BENCHMARK_VERSION
    ).update(status=Run.Status.RUNNING, started=timezone.now())
    if not Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).exists():
        return []
    # Scene by scene, all its levels together: their frames repeat, and the frame store
    # then serves the later levels what the first one rendered.
    pending = Episode.objects.filter(run_id=run_id, status=Episode.Status.PENDING)
    return list(pending.order_by("scene_id", "level").values_list("pk", flat=True))


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
"""How many times one task goes on with its episode after losing the database."""


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


def _step_store(episode_id: int, token: str, record: dict[str, Any]) -> None:
    """Store one step, refreshing the claim; raise EpisodeLost if the task lost the episode."""
    with transaction.atomic():
        held = Episode.objects.filter(
            pk=episode_id,
            claim=token,
            status=Episode.Status.RUNNING,
            run__status=Run.Status.RUNNING,
        ).update(heartbeat=timezone.now(), steps_taken=record["index"] + 1)
        if held != 1:
            raise EpisodeLost(f"episode {episode_id} is no longer held by this task")
        try:
            Step.from_record(episode_id, record).save(force_insert=True)
        except IntegrityError:
            raise EpisodeLost(f"step {record['index']} of episode {episode_id} exists") from None


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
    quota_owner = _quota_owner(run)
    cap = settings.MIRRORBENCH_USER_REQUESTS_PER_DAY
    if quota_owner is not None and owner_requests_today(quota_owner) >= cap:
        return "quota"
    token = episode_claim(episode_id=episode_id)
    if token is None:
        return "claimed-elsewhere"
    from evaluation.adapters import RetryPolicy  # the SDKs load only where models are called

    episode = Episode.objects.select_related("run", "scene").get(pk=episode_id)
    spec = episode.run.spec
    # Temperature 0 and no seed; a cap only if the spec has one (old specs: 2048).
    params = GenerationParams(max_tokens=spec.get("max_tokens"))
    factory, _ = make_agent_factory(
        spec["agent"],
        seed=spec["seed"],
        base_url=spec["base_url"],
        image_history=spec["image_history"],
        params=params,
        cache=_response_cache(spec["agent"]) if spec.get("use_cache", True) else None,
        cache_scope=cache_scope(episode.run),
        api_key=_api_key(episode.run_id),
        retry=RetryPolicy(
            max_attempts=settings.MIRRORBENCH_RETRY_ATTEMPTS,
            base_delay_s=settings.MIRRORBENCH_RETRY_BASE_S,
        ),
    )
    agent = factory()
    limits = limits_for(spec["agent"], spec["base_url"])
    if limits.rpm and isinstance(agent, ModelAgent):
        key = provider_key(spec["agent"], spec["base_url"])
        agent.client = RateLimitedClient(agent.client, key, limits.rpm)
    if quota_owner is not None and isinstance(agent, ModelAgent):
        agent.client = OwnerQuotaClient(agent.client, quota_owner, cap)
    frames = (
        FrameSource(
            spec["image_size"],
            on_render=lambda key, png: frame_store(key=key, png=png),
            lookup=frame_png,
            pool=render_pool(),  # the worker's renderers, shared by all its episodes
        )
        if agent.needs_images
        else None
    )
    scene = get_scene(episode.scene.scene_id)
    for resumed in range(DB_LOST_RESUMES + 1):
        try:
            record = run_episode(
                scene,
                episode.level,
                agent,
                seed=spec["seed"],
                frames=frames,
                image_size=spec["image_size"],
                on_step=lambda step: _step_store(episode_id, token, step),
                prior_steps=_stored_steps(episode),
            )
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
            if resumed == DB_LOST_RESUMES or connection.in_atomic_block:
                raise
            logger.warning("episode %s: the database failed (%s); waiting for it", episode_id, exc)
            # Back means writable again (a full disk fails writes, not reads): the claim's
            # heartbeat is refreshed, which also tells whether the episode is still held.
            held = _while_database_lost(
                f"episode {episode_id}: reconnecting",
                lambda: Episode.objects.filter(
                    pk=episode_id, claim=token, status=Episode.Status.RUNNING
                ).update(heartbeat=timezone.now()),
                first_wait=True,
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
    from evaluation.cache import ResponseCache

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
        _erase_key(run_id)
        run_scores_refresh(run=run)
        run_list_if_complete(run=run)
        from leaderboard.services.submissions import reproduction_record

        reproduction_record(run=run)  # a no-op unless the run reproduces a submission
        run_frames_queue(run=run)
        data_version_bump()  # the run's page and the run lists show it completed
    return True


def run_cancel(*, run: Run) -> bool:
    """Cancel a pending or running run; its tasks stop at their next step. Return whether it did."""
    with transaction.atomic():
        cancelled = Run.objects.filter(
            pk=run.pk, status__in=[Run.Status.PENDING, Run.Status.RUNNING]
        ).update(status=Run.Status.CANCELLED, finished=timezone.now())
        if cancelled == 1:
            _erase_key(run.pk)
            data_version_bump()
    return cancelled == 1


BASELINE_AGENTS = {"random": "Random", "oracle": "Oracle"}


def baseline_runs_ensure() -> list[Run]:
    """Queue a full run of each baseline agent that has no run of the current version yet.

    Idempotent: a baseline with a pending, running or completed run of this benchmark version
    is left alone, so a second ``make run`` reuses what exists. Runs of a retired version stay
    browsable; unfinished ones are failed first (``runs_retired_fail``).
    """
    runs_retired_fail()

    created = []
    for agent, name in BASELINE_AGENTS.items():
        entry = ModelEntry.objects.filter(name=name).first() or model_entry_upsert(
            name=name, kind=ModelEntry.Kind.BASELINE
        )
        exists = Run.objects.filter(
            model_entry=entry,
            source=Run.Source.EVALUATED,
            benchmark__name=BENCHMARK_VERSION,
            status__in=[Run.Status.PENDING, Run.Status.RUNNING, Run.Status.COMPLETED],
        ).exists()
        if not exists:
            created.append(run_create(model_entry=entry, spec=RunSpec(agent=agent)))
    return created


def _is_moderator(user: Any) -> bool:
    return bool(user.is_staff and user.has_perm("leaderboard.change_modelentry"))


def _hosted_entry(*, user: Any, data: dict[str, Any]) -> ModelEntry:
    """Return the entry a hosted run goes to: the user's own entry of that name, or a new one.

    Names are compared without case, so nobody's "random" sits beside the Random baseline, and
    a name that looks like another entry's is refused (``entry_name_match``). Entries of other
    users and the site's own (the paper's rows, baselines, Human) are refused by name; only
    moderators attach runs to an existing entry they do not own.
    """
    name, existing = entry_name_match(
        name=data.get("entry_name") or data["model"], field="entry_name"
    )
    if existing is None:
        return model_entry_create(
            name=name,
            kind=data["kind"],
            params_b=data.get("params_b"),
            owner=user,
            field="entry_name",
        )
    if existing.owner_id == user.pk or _is_moderator(user):
        return existing
    raise FieldError(
        "entry_name",
        f"{existing.name!r} is the name of an entry that is not yours; choose another name "
        "(only moderators add runs to the site's entries and to other users' entries)",
    )


def _quota_owner(run: Run | None) -> int | None:
    """The user whose daily request cap a run's model calls count against; None: no cap.

    Runs owned by users who are not staff (hosted runs, reproduction spot-checks); the site's
    own runs and staff's are not capped.
    """
    if run is None or run.owner_id is None or run.owner is None or run.owner.is_staff:
        return None
    return int(run.owner_id)


def _hosted_caps_check(*, user: Any, episodes: int) -> None:
    """Refuse a hosted run over the user's caps (settings); staff have none.

    Called with the user's row locked, so two submissions at once cannot both pass.
    """
    if user.is_staff:
        return
    active = Run.objects.filter(
        owner=user, source=Run.Source.EVALUATED, status__in=[Run.Status.PENDING, Run.Status.RUNNING]
    ).count()
    cap = settings.MIRRORBENCH_MAX_ACTIVE_RUNS
    if active >= cap:
        raise FieldError(
            "non_field_errors",
            f"you have {active} hosted runs pending or running, the most allowed at once is "
            f"{cap}: wait for one to end or cancel one",
        )
    requests = owner_requests_today(user.pk)
    if requests >= settings.MIRRORBENCH_USER_REQUESTS_PER_DAY:
        raise FieldError(
            "non_field_errors",
            f"your runs have sent {requests} requests to model endpoints today (UTC), the most "
            "allowed a day: start this run tomorrow",
        )
    since = timezone.now() - timedelta(days=1)
    today = Episode.objects.filter(
        run__owner=user, run__source=Run.Source.EVALUATED, run__created__gte=since
    ).count()
    daily = settings.MIRRORBENCH_MAX_EPISODES_PER_DAY
    if today + episodes > daily:
        raise FieldError(
            "non_field_errors",
            f"this run has {episodes} episodes and you started {today} in the last 24 hours; "
            f"the most allowed is {daily} a day: choose fewer levels or scenes, or wait",
        )


def hosted_run_create(*, user: Any, data: dict[str, Any]) -> Run:
    """Create a hosted run from validated form or API data (see HostedEvaluationForm).

    Raises FieldError, naming the field, for input the form cannot check alone: an entry name
    that is not the user's, a run over the user's caps, a refused endpoint. Nothing is written
    then.
    """
    confirmed_email_required(user)
    spec = RunSpec(
        agent=f"{data['provider']}:{data['model']}",
        levels=tuple(sorted(data["levels"])),
        scenes=data["scenes"],
        base_url=data.get("base_url") or None,
    )
    try:
        episodes = len(select_scenes(spec.scenes)) * len(spec.levels)
    except KeyError as exc:
        raise FieldError("scenes", str(exc)) from None
    visibility = Run.Visibility.PRIVATE if data.get("private") else Run.Visibility.PUBLIC
    with transaction.atomic():
        # One hosted submission at a time per user: the caps count what is committed.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        _hosted_caps_check(user=user, episodes=episodes)
        entry = _hosted_entry(user=user, data=data)
        return run_create(
            model_entry=entry,
            spec=spec,
            owner=user,
            visibility=visibility,
            api_key=data["api_key"],
        )
