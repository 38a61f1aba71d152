"""Reads: runs and their episodes, progress and estimates, bundles, stale episodes, limits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Self, overload
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Avg, Count, Exists, Max, OuterRef, Prefetch, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from evaluation.config import RunConfig, bundle_header
from evaluation.cost import tokens_dollars
from evaluation.errors import REFUSAL_PREFIX, ErrorCounts, refusal_kind
from evaluation.estimate import TYPICAL_STEPS, estimate_run
from evaluation.metrics import EpisodeResult, score_json
from evaluation.public import public_base_url
from evaluation.registry import parse_agent_spec
from evaluation.vocabulary import (
    AVG,
    MAIN_CONDITION,
    OVERALL,
    PAPER_TABLES,
    TABLES,
    TRACKS,
    condition_label,
    table_label,
)
from leaderboard.accounts.roles import is_moderator
from leaderboard.boards.costs import run_price
from leaderboard.boards.selectors import scores_prefetch
from leaderboard.models import (
    Episode,
    Run,
    RunScore,
    Step,
)
from simulation.catalogue import select_scenes
from simulation.versions import BENCHMARK_VERSION


def run_tables(run: Run) -> list[dict[str, Any]]:
    """Return a run's tables in page order: levels 0-3, then overall, each with 3 track rows."""
    by_table: dict[str, dict[str, RunScore]] = {}
    for score in run.scores.all():
        by_table.setdefault(score.table, {})[score.track] = score
    tables = []
    for table in TABLES:
        if table in by_table:
            title = f"Overall ({PAPER_TABLES[OVERALL]})" if table == OVERALL else table_label(table)
            tables.append(
                {"table": table, "title": title, "rows": [by_table[table].get(t) for t in TRACKS]}
            )
    return tables


def run_avg_by_level(*, run: Run) -> dict[str, float | None]:
    """Return the overall AVG of each level over the episodes finished so far."""

    scores = score_json(run_results(run=run))
    return {level: (table.get(OVERALL) or {}).get(AVG) for level, table in scores["levels"].items()}


def run_manageable(*, run: Run, user: Any) -> bool:
    """Whether ``user`` may manage ``run`` (cancel it, see its whole endpoint): its owner or a
    moderator."""
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    return (run.owner_id is not None and run.owner_id == user.pk) or is_moderator(user)


def run_for(*, run_id: int, user: Any, manage: bool = False) -> Run:
    """The one access rule for a run: return run ``run_id`` if ``user`` may see it (a public
    run, or their own), or with ``manage``, manage it (``run_manageable``); Run.DoesNotExist
    otherwise, the same error whether the run is missing or someone else's."""
    runs = Run.objects.select_related("model_entry", "benchmark")
    if not manage:
        return runs.visible_to(user).get(pk=run_id)
    run = runs.filter(pk=run_id).first()
    if run is None or not run_manageable(run=run, user=user):
        raise Run.DoesNotExist(f"no run {run_id} that you may manage")
    return run


def _episode_count(condition: Q) -> Coalesce:
    """Return the number of a run's episodes that meet ``condition``, as an annotation.

    A subquery rather than a join: counting the runs for pagination then leaves it out, and
    only the runs of the page are counted (see ``_RunListQuerySet``).
    """
    counts = (
        Episode.objects.filter(condition, run=OuterRef("pk"))
        .order_by()
        .values("run")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counts), 0)


class _RunListQuerySet(QuerySet[Run]):
    """Runs whose slices (pages) are chosen first, in a subquery, then annotated.

    Sliced the usual way, SQLite works out the episode counts of every matching run before it
    sorts them and keeps one page: with 220 public runs of 264 episodes, 50 ms a page instead
    of 11 ms, and growing with every run. The page's rows, order and query count are the same.
    """

    @overload
    def __getitem__(self, k: int) -> Any: ...

    @overload
    def __getitem__(self, k: slice) -> Self: ...

    def __getitem__(self, k: int | slice) -> Any:
        page = super().__getitem__(k)
        if isinstance(page, QuerySet):
            return self.filter(pk__in=page.values("pk"))
        # A row, or a list (results already fetched, or a slice with a step).
        return page


def run_list() -> QuerySet[Run]:
    """Return the public runs with their model entries, episode counts and scores (2 queries).

    Its pages count the episodes of their own runs only (``_RunListQuerySet``).
    """
    return (
        _RunListQuerySet(Run)
        .filter(visibility=Run.Visibility.PUBLIC)
        .select_related("model_entry", "benchmark")
        .annotate(
            episodes_stored=_episode_count(Q()),
            episodes_completed=_episode_count(Q(status=Episode.Status.COMPLETED)),
            episodes_errored=_episode_count(Q(status=Episode.Status.ERROR)),
            episodes_succeeded=_episode_count(Q(success=True)),
        )
        .prefetch_related(scores_prefetch())
        .order_by("-created", "-id")
    )


def episode_list() -> QuerySet[Episode]:
    """Return the episodes of public runs with their scenes, in run, level and scene order."""
    return (
        Episode.objects.filter(run__visibility=Run.Visibility.PUBLIC)
        .select_related("scene")
        .order_by("run_id", "level", "scene_id")
    )


def run_results(*, run: Run) -> list[EpisodeResult]:
    """Return the metrics module's view of a run's episodes (one query)."""
    return [
        EpisodeResult(
            scene_id=e.scene.scene_id,
            track=e.scene.track,
            level=e.level,
            distances=tuple(e.distances),
            status=e.status,
            repeat=e.repeat,
        )
        for e in run.episodes.select_related("scene").filter(
            status__in=[Episode.Status.COMPLETED, Episode.Status.ERROR]
        )
    ]


def run_error_counts(*, run: Run) -> ErrorCounts:
    """Return how many of a run's finished episodes ended in error, by category, and how many
    steps its provider refused to answer (two queries; ``evaluation.errors``)."""
    episodes = 0
    by_category: dict[str, int] = {}
    rows = (
        run.episodes.filter(status__in=[Episode.Status.COMPLETED, Episode.Status.ERROR])
        .values_list("status", "error_category")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for status, category, n in rows:
        episodes += n
        if status == Episode.Status.ERROR:
            key = category or "unknown"
            by_category[key] = by_category.get(key, 0) + n
    refused: dict[str, int] = {}
    steps = (
        Step.objects.filter(episode__run=run, parse_error__startswith=REFUSAL_PREFIX)
        .values_list("parse_error")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for parse_error, n in steps:
        kind = refusal_kind(parse_error) or "refusal"
        refused[kind] = refused.get(kind, 0) + n
    return ErrorCounts(episodes, by_category, refused)


def run_errors_hold_ranking(*, run: Run, counts: ErrorCounts) -> bool:
    """Whether ``run`` is kept off the rankings for its errored episodes: it has ended and more
    than ``MIRRORBENCH_MAX_ERRORED_SHARE`` of them ended in error."""
    return run.status == Run.Status.COMPLETED and counts.over(
        settings.MIRRORBENCH_MAX_ERRORED_SHARE
    )


def run_behaviour_records(*, run: Run) -> list[dict[str, Any]]:
    """Return a run's episodes as the records ``evaluation.confusion`` reads (two queries)."""
    records: dict[int, dict[str, Any]] = {}
    for pk, scene_id, track, level, status in run.episodes.values_list(
        "pk", "scene__scene_id", "scene__track", "level", "status"
    ):
        records[pk] = {
            "scene_id": scene_id,
            "track": track,
            "level": level,
            "status": status,
            "steps": [],
        }
    steps = Step.objects.filter(episode__run=run).order_by("episode_id", "index")
    for episode_id, option, executed, cell in steps.values_list(
        "episode_id", "option", "executed", "hand_cell"
    ):
        records[episode_id]["steps"].append(
            {"option": option, "executed": executed, "hand_cell": cell}
        )
    return list(records.values())


def run_progress(*, run: Run) -> dict[str, Any]:
    """Return a run's progress: episodes by status, steps, bad responses, tokens (two queries,
    three while the run goes on).

    ``cached_steps`` counts the steps answered from the response cache; the tokens, and the cost
    computed from them, leave those steps out: they were spent by the run that first asked.
    """
    by_status = list(
        run.episodes.values_list("status")
        .annotate(n=Count("pk"), taken=Coalesce(Sum("steps_taken"), 0))
        .values_list("status", "n", "taken")
    )
    counts = {status: n for status, n, _ in by_status}
    ended = (Episode.Status.COMPLETED, Episode.Status.ERROR)
    finished_steps = sum(taken for status, _, taken in by_status if status in ended)
    steps = Step.objects.filter(episode__run=run).aggregate(
        steps=Count("pk"),
        bad=Count("pk", filter=Q(option__isnull=True)),
        cached_steps=Count("pk", filter=Q(cached=True)),
        input_tokens=Coalesce(Sum("input_tokens", filter=Q(cached=False)), 0),
        output_tokens=Coalesce(Sum("output_tokens", filter=Q(cached=False)), 0),
    )
    done = counts.get(Episode.Status.COMPLETED, 0) + counts.get(Episode.Status.ERROR, 0)
    now = timezone.now()
    elapsed = ((run.finished or now) - run.started).total_seconds() if run.started else 0.0
    remaining = run.episodes_expected - done
    eta = None
    started = run.started
    if run.status in (Run.Status.PENDING, Run.Status.RUNNING) and started and remaining:
        finished = run.episodes.filter(
            status__in=[Episode.Status.COMPLETED, Episode.Status.ERROR], heartbeat__isnull=False
        ).values_list("heartbeat", flat=True)
        eta = eta_range(
            finished_s=[(t - started).total_seconds() for t in finished if t],
            now_s=elapsed,
            remaining=remaining,
        )
        running = counts.get(Episode.Status.RUNNING, 0)
        if done < running:
            # The episodes finished so far started with those still running: their pace counts
            # one worker, not all of them. The steps say more (every episode in flight, at the
            # provider's measured pace).
            eta = eta_from_steps(
                steps=steps["steps"],
                in_flight_steps=steps["steps"] - finished_steps,
                elapsed_s=elapsed,
                remaining=remaining,
                steps_per_episode=finished_steps / done if done else typical_steps(),
            )
    return {
        "run": run.pk,
        "status": run.status,
        "episodes_total": run.episodes_expected,
        "episodes_done": done,
        "episodes_running": counts.get(Episode.Status.RUNNING, 0),
        "episodes_error": counts.get(Episode.Status.ERROR, 0),
        "elapsed_s": round(elapsed, 1),
        "eta_s": round((eta[0] + eta[1]) / 2, 1) if eta else None,
        "eta_low_s": round(eta[0], 1) if eta else None,
        "eta_high_s": round(eta[1], 1) if eta else None,
        "eta_text": eta_text(eta),
        "cost_usd": tokens_cost(run, steps["input_tokens"], steps["output_tokens"]),
        **steps,
    }


def typical_steps() -> float:
    """Return the mean steps per episode of the random baseline's listed run here, or the
    protocol's figure (``evaluation.estimate.TYPICAL_STEPS``) when there is none."""

    mean = (
        Episode.objects.filter(
            run__listed=True,
            run__agent="random",
            run__source=Run.Source.EVALUATED,
            run__benchmark__name=BENCHMARK_VERSION,
            status=Episode.Status.COMPLETED,
        )
        .aggregate(mean=Avg("steps_taken"))
        .get("mean")
    )
    return float(mean) if mean else TYPICAL_STEPS


def hosted_run_estimate(
    *, provider: str, model: str, levels: Sequence[int], scenes: str, repeats: int = 1
) -> Any:
    """Return what a hosted run would cost (``evaluation.estimate.RunEstimate``): requests,
    tokens and, when ``MIRRORBENCH_PRICES`` has the agent, US dollars; ``repeats`` times one
    run's."""

    price = settings.MIRRORBENCH_PRICES.get(f"{provider}:{model}") if model else None
    return estimate_run(
        scenes=select_scenes(scenes),
        levels=levels,
        provider=provider,
        typical_steps=typical_steps(),
        price=price,
        repeats=repeats,
    )


ESTIMATE_SUMS = ("episodes", "requests", "requests_max", "input_tokens", "output_tokens")
"""The figures of a run's estimate that add up over several runs."""


def hosted_runs_estimate(
    *,
    provider: str,
    model: str,
    levels: Sequence[int],
    scenes: str,
    repeats: int = 1,
    conditions: Sequence[str] = (MAIN_CONDITION,),
) -> dict[str, Any]:
    """Return what a hosted submission of a run per condition would cost, as JSON.

    Each condition's run costs what ``hosted_run_estimate`` gives (a control keeps main's
    scenes, prompts and budgets). The figures at the top are the total over ``conditions``
    (one run's with one condition, as before several could be chosen); ``conditions`` lists
    each with its own figures.
    """
    one = hosted_run_estimate(
        provider=provider, model=model, levels=levels, scenes=scenes, repeats=repeats
    ).as_dict()
    n = len(conditions)
    total = {key: one[key] * n for key in ESTIMATE_SUMS}
    total["cost_usd"] = None if one["cost_usd"] is None else round(one["cost_usd"] * n, 2)
    figures = {key: one[key] for key in (*ESTIMATE_SUMS, "cost_usd")}
    each = [{"name": c, "label": condition_label(c), **figures} for c in conditions]
    return {**one, **total, "runs": n, "conditions": each}


ETA_WINDOW = 20
"""Episodes whose finishing pace gives the recent rate of a run (``eta_range``)."""


def eta_from_steps(
    *,
    steps: int,
    in_flight_steps: int,
    elapsed_s: float,
    remaining: int,
    steps_per_episode: float,
) -> tuple[float, float] | None:
    """Return how many seconds a run still needs, from its pace in steps; None before a step.

    ``steps`` were answered in ``elapsed_s``, by every episode in flight at once: that pace
    counts the workers and the provider's latency as measured. ``remaining`` episodes (those in
    flight among them) need ``steps_per_episode`` steps each (the run's finished episodes', or
    the random baseline's mean before one finishes), less the ``in_flight_steps`` they took.
    """
    if steps <= 0 or elapsed_s <= 0 or remaining <= 0:
        return None
    left = max(remaining * steps_per_episode - in_flight_steps, remaining)
    seconds = left / (steps / elapsed_s)
    return seconds, seconds


def eta_range(
    *, finished_s: Sequence[float], now_s: float, remaining: int, window: int = ETA_WINDOW
) -> tuple[float, float] | None:
    """Return how many seconds a run still needs, as a (sooner, later) range; None without a
    finished episode to judge by.

    Two paces bound it: the run's own (episodes finished over the time since it started) and
    the recent one (its last ``window`` episodes over the time since the episode before them
    finished, up to now, so a run that has stalled slows it). Episodes run in parallel, so the
    pace already counts the workers; an early burst (cached answers, a fast baseline) or a slow
    patch (the cores busy rendering) moves one pace and widens the range instead of misleading.
    """
    times = sorted(t for t in finished_s if t >= 0)
    if not times or remaining <= 0:
        return None
    overall = len(times) / max(now_s, times[-1], 1e-9)
    recent_n = min(window, len(times))
    since = times[-recent_n - 1] if len(times) > recent_n else 0.0
    recent = recent_n / max(now_s - since, 1e-9)
    slow, fast = sorted((overall, recent))
    return remaining / fast, remaining / slow


def eta_text(eta: tuple[float, float] | None) -> str:
    """Return an ETA range in words: "about 2 minutes", "5 to 8 minutes", "40 to 90 seconds"."""
    if eta is None:
        return "\u2014"
    low, high = eta
    if high < 90:
        low_s, high_s = max(1, round(low)), max(1, round(high))
        return f"about {high_s} seconds" if low_s == high_s else f"{low_s} to {high_s} seconds"
    if high < 5400:
        low_m, high_m = max(1, round(low / 60)), max(1, round(high / 60))
        unit = "minute" if high_m == 1 else "minutes"
        return f"about {high_m} {unit}" if low_m == high_m else f"{low_m} to {high_m} minutes"
    low_h, high_h = low / 3600, high / 3600
    if round(low_h, 1) == round(high_h, 1):
        return f"about {high_h:.1f} hours"
    return f"{low_h:.1f} to {high_h:.1f} hours"


def tokens_cost(run: Run, input_tokens: int, output_tokens: int) -> float | None:
    """Return the run's cost so far in US dollars, when the site knows a price for it
    (``run_price``; ``input_tokens`` and ``output_tokens``: those spent, cached steps left
    out)."""
    price, _ = run_price(run)
    if not price:
        return None
    dollars = tokens_dollars(price, input_tokens=input_tokens, output_tokens=output_tokens)
    return round(dollars, 4)


def finished_episodes(run: Run) -> QuerySet[Episode]:
    """Return a run's finished episodes by level and scene, with their scenes and their steps
    in order: what its bundle and its details hold."""
    return (
        run.episodes.select_related("scene")
        .prefetch_related(Prefetch("steps", queryset=Step.objects.order_by("index")))
        .filter(status__in=[Episode.Status.COMPLETED, Episode.Status.ERROR])
        .order_by("level", "scene_id", "repeat")
    )


def run_bundle(*, run: Run, user: Any = None) -> list[dict[str, Any]]:
    """Return a run as results-bundle records (header first) that ``mirrorbench verify`` accepts.

    Built from stored data only (no client, no API key): the header stored with the run when it
    was created or imported, or, for runs created before headers were stored, one described
    from the run's configuration. The header's endpoint is whole for the run's owner and moderators
    (and with ``user`` None: the ``export_run`` command), its scheme and host for anyone else.
    """
    episodes = list(finished_episodes(run))
    header = run_header(run=run)
    if user is not None:
        header = header_for(header, run=run, user=user)
    return [header, *(e.as_record([s.as_record() for s in e.steps.all()]) for e in episodes)]


def run_header(*, run: Run) -> dict[str, Any]:
    """Return the bundle header of ``run``, from what is stored (see ``run_bundle``)."""

    if run.metadata.get("type") == "header":
        header = dict(run.metadata)
        header["tool"] = {**header.get("tool", {}), "run": run.pk}
        return header
    config = run.config
    if config is None:
        raise ValueError(f"run {run.pk} has neither a stored header nor a configuration")
    levels = sorted({e.level for e in run.episodes.all()})
    ordered = run.episodes.select_related("scene").order_by("scene_id")
    scenes = list(dict.fromkeys(e.scene.scene_id for e in ordered))
    return bundle_header(
        config,
        scenes=scenes,
        levels=levels,
        benchmark=run.benchmark.as_dict(),
        created=run.created.isoformat(timespec="seconds"),
        tool={"run": run.pk},
    )


def endpoint_origin(base_url: str) -> str:
    """The scheme and host of ``base_url`` (and its port, if it names one); no path.

    A hosted run's path may hold a key or a deployment id, so this is all that anyone but the
    run's owner and the moderators sees of it.
    """
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None:
        host = f"{host}:{port}"
    return f"{parts.scheme}://{host}"


def endpoint_visible_whole(*, run: Run, user: Any) -> bool:
    """Whether ``user`` may see the whole endpoint of ``run``: who may manage it."""
    return run_manageable(run=run, user=user)


def run_endpoint(*, run: Run, user: Any) -> str | None:
    """The endpoint a hosted run called, as ``user`` may see it; None without one.

    Whole (without credentials or a query, as the bundle header records it) for the owner and
    moderators, its scheme and host for everyone else.
    """
    model = (run.metadata or {}).get("model") or {}
    config = run.config
    base_url = model.get("base_url") or (config.base_url if config else None)
    if not base_url:
        return None
    if endpoint_visible_whole(run=run, user=user):
        return public_base_url(base_url)
    return endpoint_origin(base_url)


def header_for(header: dict[str, Any], *, run: Run, user: Any) -> dict[str, Any]:
    """``header`` (a run's bundle header) with its endpoint as ``user`` may see it: in the
    model's description and in the resolved configuration (``config``) alike."""
    model = header.get("model")
    if not isinstance(model, dict) or not model.get("base_url"):
        return header
    if endpoint_visible_whole(run=run, user=user):
        return header
    origin = endpoint_origin(model["base_url"])
    shown = {**header, "model": {**model, "base_url": origin}}
    config = header.get("config")
    if isinstance(config, dict) and config.get("base_url"):
        shown["config"] = {**config, "base_url": origin}
    return shown


def stale_after() -> timedelta:
    """Silence after which a running episode's task counts as dead (MIRRORBENCH_EPISODE_STALE_S)."""
    return timedelta(seconds=settings.MIRRORBENCH_EPISODE_STALE_S)


def episodes_stale(*, now: Any = None) -> list[int]:
    """Return the episodes to queue again because their task is gone.

    Running episodes whose task went silent, and the pending episodes of running runs where
    nothing has happened for as long: a broker without redelivery (the embedded one) loses the
    messages a killed worker had taken. Queuing an episode twice is harmless (claims).
    """
    now = now or timezone.now()
    cutoff = now - stale_after()
    silent = Episode.objects.filter(
        status=Episode.Status.RUNNING,
        heartbeat__lt=cutoff,
        run__status=Run.Status.RUNNING,
        run__benchmark__name=BENCHMARK_VERSION,
    ).values_list("pk", flat=True)
    idle_runs = (
        Run.objects.filter(
            status=Run.Status.RUNNING, started__lt=cutoff, benchmark__name=BENCHMARK_VERSION
        )
        .annotate(last_beat=Max("episodes__heartbeat"))
        .filter(Q(last_beat__lt=cutoff) | Q(last_beat__isnull=True))
    )
    forgotten = Episode.objects.filter(
        status=Episode.Status.PENDING, run__in=idle_runs
    ).values_list("pk", flat=True)
    return sorted({*silent, *forgotten})


def runs_done_uncompleted(*, now: Any = None) -> list[int]:
    """Return the running runs whose episodes have all finished, silent since ``stale_after``.

    The task that finished the last episode completes the run (scores, listing, frames) in one
    transaction; a worker that dies inside it leaves the run running with nothing left to
    play, which no episode task will ever complete.
    """
    now = now or timezone.now()
    cutoff = now - stale_after()
    unfinished = Episode.objects.filter(run=OuterRef("pk"), status__in=Episode.UNFINISHED)
    return list(
        Run.objects.filter(
            status=Run.Status.RUNNING, started__lt=cutoff, benchmark__name=BENCHMARK_VERSION
        )
        .annotate(last_beat=Max("episodes__heartbeat"))
        .filter(Q(last_beat__lt=cutoff) | Q(last_beat__isnull=True))
        .exclude(Exists(unfinished))
        .order_by("pk")
        .values_list("pk", flat=True)
    )


@dataclass(frozen=True)
class ProviderLimits:
    rpm: int | None = None
    parallel: int | None = None


def provider_key(agent: str, base_url: str | None) -> str:
    """Return the key a run's limits are looked up and counted under: its provider (or its
    agent's name) and the endpoint."""
    provider = parse_agent_spec(agent).name
    return f"{provider}|{base_url}" if base_url else provider


def limits_for(agent: str, base_url: str | None) -> ProviderLimits:
    """Return the limits configured for an endpoint (most specific key first)."""
    configured: dict[str, Any] = settings.MIRRORBENCH_PROVIDER_LIMITS
    for key in (provider_key(agent, base_url), parse_agent_spec(agent).name):
        if key in configured:
            value = configured[key]
            return ProviderLimits(rpm=value.get("rpm"), parallel=value.get("parallel"))
    return ProviderLimits()


def parallel_slots_free(run: Run) -> bool:
    """Return whether one more episode of ``run`` may call its provider now."""
    config = run.config
    if config is None:
        return True
    limits = limits_for(config.agent, config.base_url)
    if limits.parallel is None:
        return True
    key = provider_key(config.agent, config.base_url)
    running = [
        provider_key(other.agent, other.base_url)
        for other in (
            RunConfig.from_dict(r["run__spec"])
            for r in Episode.objects.filter(
                status=Episode.Status.RUNNING, run__status=Run.Status.RUNNING
            ).values("run__spec")
        )
    ]
    return running.count(key) < limits.parallel
