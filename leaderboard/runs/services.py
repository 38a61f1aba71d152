"""Writes: runs evaluated here, from creation and hosted-run checks to start and cancel."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import (
    transaction,
)
from django.utils import timezone

from evaluation.config import RunConfig
from evaluation.registry import AGENTS, AgentSpecError, model_spec, parse_agent_spec
from evaluation.vocabulary import (
    CONDITIONS,
    CONTROL_CONDITIONS,
    LEVELS,
    MAIN_CONDITION,
    METRICS,
    conditions_text,
    levels_text,
    parse_condition,
)
from leaderboard.accounts.mail import confirmed_email_required
from leaderboard.accounts.roles import is_moderator
from leaderboard.boards.entries import (
    MODEL_METADATA,
    benchmark_current,
    entry_name_match,
    model_entry_create,
    model_entry_upsert,
)
from leaderboard.data_version import data_version_bump
from leaderboard.errors import FieldError
from leaderboard.models import (
    Episode,
    ModelEntry,
    Run,
    RunSecret,
    Step,
)
from leaderboard.queue import RUN_START, task_send_on_commit
from leaderboard.runs import secrets as secrets_box
from leaderboard.runs.endpoints import EndpointRefused, endpoint_check
from leaderboard.runs.limits import (
    owner_requests_today,
)
from leaderboard.runs.selectors import (
    run_header,
)
from simulation.catalogue import select_scenes
from simulation.versions import BENCHMARK_VERSION

logger = logging.getLogger(__name__)
T = TypeVar("T")


@transaction.atomic
def run_create(
    *,
    model_entry: ModelEntry,
    config: RunConfig,
    owner: Any = None,
    visibility: str = Run.Visibility.PUBLIC,
    api_key: str | None = None,
    price: dict[str, float] | None = None,
) -> Run:
    """Create a pending run of ``config`` with one pending episode per (scene, level) and
    repeat (``config.repeats``); queue its start. The configuration is stored as ``Run.spec``
    (read back as ``Run.config``).

    ``api_key`` (hosted runs) is stored encrypted and erased when the run ends; without it the
    workers use their environment's key. Raises FieldError for an unknown agent (or one that
    plays in the browser), scene or level, or a base URL the server will not call.

    ``price`` (as ``evaluation.cost.check_price`` returns it) prices the run's tokens before
    the site's price table.
    """
    if config.base_url:
        try:
            endpoint_check(config.base_url, user_chosen=owner is not None and not owner.is_staff)
        except EndpointRefused as exc:
            raise FieldError("base_url", str(exc)) from None
    try:
        agent = config.agent_spec
    except AgentSpecError as exc:
        raise FieldError("agent", str(exc)) from None
    if agent.agent_type is not None and agent.agent_type.entry_point is None:
        raise FieldError("agent", f"{config.agent!r} is not played by the workers")
    if not config.levels or any(level not in LEVELS for level in config.levels):
        raise FieldError(
            "levels", f"expected a non-empty subset of {levels_text()}, got {config.levels}"
        )
    try:
        scenes = select_scenes(config.scenes)
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
        condition=config.condition,
        agent=config.agent,
        price=price,
        spec=config.as_dict(),
        episodes_expected=(len(config.pairs) if config.pairs else len(scenes) * len(config.levels))
        * config.repeats,
    )
    wanted = set(config.pairs)
    Episode.objects.bulk_create(
        Episode(
            run=run, scene=rows[s.id], level=level, repeat=repeat, status=Episode.Status.PENDING
        )
        for level in config.levels
        for s in scenes
        for repeat in range(config.repeats)
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
    task_send_on_commit(RUN_START, run.pk)
    return run


def api_key_erase(run_id: int) -> None:
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
            api_key_erase(run_id)
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


def run_cancel(*, run: Run) -> bool:
    """Cancel a pending or running run; its tasks stop at their next step. Return whether it did."""
    with transaction.atomic():
        cancelled = Run.objects.filter(
            pk=run.pk, status__in=[Run.Status.PENDING, Run.Status.RUNNING]
        ).update(status=Run.Status.CANCELLED, finished=timezone.now())
        if cancelled == 1:
            api_key_erase(run.pk)
            data_version_bump()
    return cancelled == 1


_EPISODE_AFRESH: dict[str, Any] = {
    "status": Episode.Status.PENDING,
    "error": "",
    "error_status": None,
    "error_category": "",
    "success": False,
    "distances": [],
    "steps_taken": 0,
    "confusion_rate": None,
    "mirror_confused": False,
    "bad_responses": 0,
    "collisions": 0,
    "claim": "",
    "heartbeat": None,
    "attempts": 0,
    **dict.fromkeys(METRICS),
}
"""An episode's fields before it is played: what an errored episode is reset to."""


def run_errored_rerun(*, run: Run, api_key: str = "") -> int:
    """Queue a completed run's errored episodes to be played again, afresh; return how many.

    As ``mirrorbench run --resume`` does for a bundle: the completed episodes are kept, each
    errored one loses its steps and is played from its first step. The run goes back to pending
    and ``tasks.run_start`` is queued once the transaction commits; when the episodes end, the
    run is scored and, if few enough errors are left, listed again as any run is.

    Safe to ask twice: the run is claimed with a conditional update (completed to pending), so
    a second request while its episodes play, or for a run with no errored episode, queues
    nothing and returns 0.

    Raises:
        FieldError: ``run``, a run not evaluated here (an uploaded bundle is re-run with
            ``mirrorbench run --resume`` and uploaded again); ``api_key``, a hosted model run
            asked without its key (erased when the run ended); ``non_field_errors``, the
            owner's caps.
    """
    config = run.config
    if run.source != Run.Source.EVALUATED or config is None:
        raise FieldError(
            "run",
            "only a run evaluated on this site can be re-run here: play an uploaded bundle's "
            "errored episodes again with `mirrorbench run --resume` and upload it again",
        )
    if run.owner_id is not None and parse_agent_spec(config.agent).is_model and not api_key:
        raise FieldError(
            "api_key",
            "this run's API key was erased when it ended: give it again to re-run the errored "
            "episodes",
        )
    with transaction.atomic():
        errored = Episode.objects.filter(run_id=run.pk, status=Episode.Status.ERROR)
        count = errored.count()
        if count == 0:
            return 0
        if run.owner is not None:
            get_user_model().objects.select_for_update().filter(pk=run.owner.pk).first()
            _hosted_caps_check(user=run.owner, episodes=count)
        claimed = Run.objects.filter(pk=run.pk, status=Run.Status.COMPLETED).update(
            status=Run.Status.PENDING, finished=None
        )
        if claimed != 1:
            return 0  # another request got there first, or the run has not ended
        Step.objects.filter(episode__in=errored).delete()
        errored.update(**_EPISODE_AFRESH)
        if api_key:
            try:
                sealed = secrets_box.encrypt(api_key)
            except secrets_box.KeyEncryptionKeyMissing as exc:
                raise FieldError("api_key", str(exc)) from None  # the transaction rolls back
            RunSecret.objects.update_or_create(run=run, defaults={"api_key": sealed})
        task_send_on_commit(RUN_START, run.pk)
        data_version_bump()
    run.status, run.finished = Run.Status.PENDING, None
    return count


BASELINE_AGENTS = ("random", "oracle")
"""The baselines the site runs by itself (``make run``), each under its registry label."""
BASELINE_REPEATS = 5
"""Seeded repeats of each baseline run (seeds 0 to 4): the random policy's spread over them is
the board's noise floor (docs/leaderboard.md, Repeats and the noise floor)."""


def baseline_runs_ensure() -> list[Run]:
    """Queue a full run of each baseline agent, ``BASELINE_REPEATS`` seeded repeats of every
    episode, when it has no such run of the current version yet.

    Idempotent: a baseline with a pending, running or completed run of this benchmark version
    and that many repeats is left alone, so a second ``make run`` reuses what exists (a run of
    one repeat from before gets its repeated run beside it, which takes its place on the
    board). Runs of a retired version stay browsable; unfinished ones are failed first
    (``runs_retired_fail``).
    """
    runs_retired_fail()

    created = []
    for agent in BASELINE_AGENTS:
        name = AGENTS[agent].label
        entry = ModelEntry.objects.filter(name=name).first() or model_entry_upsert(
            name=name, kind=ModelEntry.Kind.BASELINE
        )
        exists = Run.objects.filter(
            model_entry=entry,
            source=Run.Source.EVALUATED,
            benchmark__name=BENCHMARK_VERSION,
            status__in=[Run.Status.PENDING, Run.Status.RUNNING, Run.Status.COMPLETED],
            spec__repeats=BASELINE_REPEATS,
        ).exists()
        if not exists:
            config = RunConfig(agent=agent, repeats=BASELINE_REPEATS)
            created.append(run_create(model_entry=entry, config=config))
    return created


CONTROL_BASELINE_AGENTS = ("random", "oracle", "mirror-confused", "chest")
"""The baselines ``make run`` also plays under every control condition: the mirror-use view's
reference rows (what no use of the mirror, or a perfect one, looks like)."""


def baseline_control_runs_ensure() -> list[Run]:
    """Queue, for each of ``CONTROL_BASELINE_AGENTS``, a run of every condition it has none of
    in the current version: the controls for all, and main for those ``baseline_runs_ensure``
    does not play (mirror-confused, chest), so each has a main run to be contrasted with.

    One repeat each (the engine plays a blind baseline's 264 episodes in about 4 s); idempotent
    as ``baseline_runs_ensure`` is. Control runs are never listed; the main runs of
    mirror-confused and chest are sanity-check rows, hidden on the boards unless asked for.
    """
    created = []
    for agent in CONTROL_BASELINE_AGENTS:
        name = AGENTS[agent].label
        entry = ModelEntry.objects.filter(name=name).first() or model_entry_upsert(
            name=name, kind=ModelEntry.Kind.BASELINE
        )
        played = set(
            Run.objects.filter(
                model_entry=entry,
                source=Run.Source.EVALUATED,
                benchmark__name=BENCHMARK_VERSION,
                status__in=[Run.Status.PENDING, Run.Status.RUNNING, Run.Status.COMPLETED],
            ).values_list("condition", flat=True)
        )
        wanted = CONDITIONS if agent not in BASELINE_AGENTS else CONTROL_CONDITIONS
        for condition in wanted:
            if condition not in played:
                config = RunConfig(agent=agent, condition=condition)
                created.append(run_create(model_entry=entry, config=config))
    return created


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
            metadata={key: data.get(key) for key in MODEL_METADATA},
        )
    if existing.owner_id == user.pk or is_moderator(user):
        return existing
    raise FieldError(
        "entry_name",
        f"{existing.name!r} is the name of an entry that is not yours; choose another name "
        "(only moderators add runs to the site's entries and to other users' entries)",
    )


def quota_owner(run: Run | None) -> int | None:
    """The user whose daily request cap a run's model calls count against; None: no cap.

    Runs owned by users who are not staff (hosted runs, reproduction spot-checks); the site's
    own runs and staff's are not capped.
    """
    if run is None or run.owner_id is None or run.owner is None or run.owner.is_staff:
        return None
    return int(run.owner_id)


def _hosted_caps_check(*, user: Any, episodes: int, runs: int = 1) -> None:
    """Refuse hosted runs over the user's caps (settings); staff have none.

    ``runs`` runs of ``episodes`` episodes in all are asked for at once (one per condition).
    Called with the user's row locked, so two submissions at once cannot both pass.
    """
    if user.is_staff:
        return
    active = Run.objects.filter(
        owner=user, source=Run.Source.EVALUATED, status__in=[Run.Status.PENDING, Run.Status.RUNNING]
    ).count()
    cap = settings.MIRRORBENCH_MAX_ACTIVE_RUNS
    if active + runs > cap:
        adds = f" and this submission adds {runs} (one per condition)" if runs > 1 else ""
        raise FieldError(
            "non_field_errors",
            f"you have {active} hosted runs pending or running{adds}, the most allowed at once "
            f"is {cap}: wait for one to end or cancel one"
            + (", or choose fewer conditions" if runs > 1 else ""),
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
        what = f"these {runs} runs have" if runs > 1 else "this run has"
        fewer = "levels, scenes or conditions" if runs > 1 else "levels or scenes"
        raise FieldError(
            "non_field_errors",
            f"{what} {episodes} episodes and you started {today} in the last 24 hours; "
            f"the most allowed is {daily} a day: choose fewer {fewer}, or wait",
        )


def hosted_conditions(data: dict[str, Any]) -> list[str]:
    """Return the conditions a hosted submission asks for, in ``CONDITIONS`` order: its
    ``conditions`` list, else its single ``condition`` (older clients), else main.

    Raises FieldError naming ``conditions`` (or ``condition``) for an unknown or repeated
    condition, an empty list, or both fields given.
    """
    listed, single = data.get("conditions"), data.get("condition")
    if listed and single:
        raise FieldError("conditions", "give the list conditions or the single condition, not both")
    field, wanted = ("conditions", list(listed)) if listed else ("condition", [single])
    if wanted == [None] or wanted == [""]:
        return [MAIN_CONDITION]
    if not wanted:
        raise FieldError("conditions", f"expected one or more of {conditions_text()}")
    for condition in wanted:
        try:
            parse_condition(condition)
        except ValueError as exc:
            raise FieldError(field, str(exc)) from None
    if len(set(wanted)) != len(wanted):
        raise FieldError(field, "each condition at most once")
    return [c for c in CONDITIONS if c in wanted]


def hosted_runs_create(*, user: Any, data: dict[str, Any]) -> list[Run]:
    """Create a hosted run per condition asked for (``hosted_conditions``) from validated form
    or API data (see HostedEvaluationForm), all in one transaction: all of them or none.

    Raises FieldError, naming the field, for input the form cannot check alone: an entry name
    that is not the user's, runs over the user's caps, a refused endpoint, an unknown
    condition. Nothing is written then.
    """
    confirmed_email_required(user)
    try:
        agent = model_spec(data["provider"], data["model"])
    except AgentSpecError as exc:
        raise FieldError("model", str(exc)) from None
    conditions = hosted_conditions(data)
    configs = [
        RunConfig(
            agent=agent,
            levels=tuple(sorted(data["levels"])),
            scenes=data["scenes"],
            base_url=data.get("base_url") or None,
            condition=condition,
            repeats=data.get("repeats") or 1,
        )
        for condition in conditions
    ]
    try:
        per_run = len(select_scenes(configs[0].scenes)) * len(configs[0].levels)
    except KeyError as exc:
        raise FieldError("scenes", str(exc)) from None
    episodes = per_run * configs[0].repeats * len(configs)
    visibility = Run.Visibility.PRIVATE if data.get("private") else Run.Visibility.PUBLIC
    with transaction.atomic():
        # One hosted submission at a time per user: the caps count what is committed.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        _hosted_caps_check(user=user, episodes=episodes, runs=len(configs))
        entry = _hosted_entry(user=user, data=data)
        return [
            run_create(
                model_entry=entry,
                config=config,
                owner=user,
                visibility=visibility,
                api_key=data["api_key"],
                price=data.get("price"),
            )
            for config in configs
        ]


def hosted_run_create(*, user: Any, data: dict[str, Any]) -> Run:
    """Create one hosted run (``hosted_runs_create`` with a single condition): the first of
    the runs created."""
    return hosted_runs_create(user=user, data=data)[0]
