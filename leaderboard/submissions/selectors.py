"""Reads: a user's submissions and tokens, the moderators' queue."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet

from evaluation.registry import AgentSpecError, parse_agent_spec
from evaluation.vocabulary import AVG, OVERALL
from leaderboard.accounts.roles import is_moderator
from leaderboard.models import ApiToken, ModelEntry, Run, RunScore, Step, Submission

SAME_MOVES_SHARE = 0.9
"""A bundle whose moves equal a baseline's in at least this share of the episodes they share
is warned of: a model answering for itself would not follow a seeded baseline that closely."""


def user_tokens(*, user: Any) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("-created")


def user_submissions(*, user: Any) -> QuerySet[Submission]:
    return Submission.objects.filter(owner=user).select_related("run").order_by("-created")


def submission_visible(*, submission_id: int, user: Any) -> Submission:
    """Return a submission its owner or a moderator may see (Submission.DoesNotExist else)."""
    submissions = Submission.objects.select_related("run", "run__model_entry", "owner")
    if not is_moderator(user):
        submissions = submissions.filter(owner_id=getattr(user, "pk", None))
    return submissions.get(pk=submission_id)


def moderation_queue() -> QuerySet[Submission]:
    """Submissions waiting for a moderator first, then the rest, newest first."""
    overall = RunScore.objects.filter(table=OVERALL, track=OVERALL)
    return (
        Submission.objects.select_related("run", "owner")
        .prefetch_related(Prefetch("run__scores", queryset=overall, to_attr="overall_scores"))
        .order_by("-review", "-created")
        .exclude(review=Submission.Review.DRAFT)
    )


def submission_warnings(*, submission: Submission) -> list[str]:
    """Return what a moderator should read before approving ``submission`` as a model.

    Verification cannot prove which model answered, but three things say a bundle was not made
    by one: its header names a baseline agent (``random``, ``oracle``, a scripted agent...);
    its moves equal those of a baseline evaluated here in at least ``SAME_MOVES_SHARE`` of the
    episodes both played; its overall AVG lies inside the random baseline's 95% interval (the
    board's noise floor). Each is a sentence; none for a bundle that shows none of them.
    """
    warnings = []
    agent = str((submission.report or {}).get("agent") or "")
    try:
        spec = parse_agent_spec(agent)
    except AgentSpecError:
        spec = None
    if spec is not None and spec.agent_type is not None and spec.kind == "baseline":
        warnings.append(
            f"The bundle's header names the agent {agent!r} ({spec.agent_type.label}), a "
            "baseline that asks no model for its moves."
        )
    run = submission.run
    if run is None:
        return warnings
    baselines = list(
        Run.objects.on_board(run.benchmark.name)
        .filter(model_entry__kind=ModelEntry.Kind.BASELINE, source=Run.Source.EVALUATED)
        .exclude(pk=run.pk)
        .select_related("model_entry")
    )
    moves = _moves([run, *baselines])
    own = moves.get(run.pk, {})
    for baseline in baselines:
        theirs = moves.get(baseline.pk, {})
        shared = own.keys() & theirs.keys()
        same = sum(own[key] == theirs[key] for key in shared)
        if shared and same >= SAME_MOVES_SHARE * len(shared):
            warnings.append(
                f"Its moves are those of the {baseline.model_entry.name} baseline evaluated "
                f"here in {same} of the {len(shared)} episodes both played."
            )
    warnings.extend(_noise_floor_warnings(run, baselines))
    return warnings


def _moves(runs: list[Run]) -> dict[int, dict[tuple[int, int], tuple[int | None, ...]]]:
    """Return each run's options, step by step, by (scene, level): one query."""
    moves: dict[int, dict[tuple[int, int], list[int | None]]] = {}
    steps = Step.objects.filter(episode__run__in=runs).order_by("episode_id", "index")
    for run_id, scene_id, level, option in steps.values_list(
        "episode__run_id", "episode__scene_id", "episode__level", "option"
    ):
        moves.setdefault(run_id, {}).setdefault((scene_id, level), []).append(option)
    return {
        run_id: {key: tuple(options) for key, options in episodes.items()}
        for run_id, episodes in moves.items()
    }


def _noise_floor_warnings(run: Run, baselines: list[Run]) -> list[str]:
    """Warn when the run's overall AVG is inside the random baseline's 95% interval."""
    random = [b for b in baselines if b.agent == "random"]
    scores = {
        s.run_id: s
        for s in RunScore.objects.filter(run__in=[run, *random], table=OVERALL, track=OVERALL)
    }
    own = scores.get(run.pk)
    warnings = []
    for baseline in random:
        floor = scores.get(baseline.pk)
        interval = (floor.ci or {}).get(AVG) if floor else None
        if own is None or not interval:
            continue
        low, high = interval
        if low <= own.avg <= high:
            warnings.append(
                f"Its overall AVG, {own.avg:.3f}, is inside the {baseline.model_entry.name} "
                f"baseline's 95% interval ({low:.3f} to {high:.3f}): the board cannot tell it "
                "from chance."
            )
    return warnings
