"""Who may see and manage a run: the querysets (public, visible_to, on_board) and run_for."""

from __future__ import annotations

import pytest

from leaderboard.boards.entries import benchmark_current
from leaderboard.models import BenchmarkVersion, Episode, Run, RunScore
from leaderboard.runs.selectors import run_for, run_manageable
from tests.leaderboard.factories import ModelEntryFactory

pytestmark = pytest.mark.django_db

SCORES = {"tsr": 0.5, "sir": 0.5, "fcr": 0.5, "pcr": 0.5, "avg": 0.5}


def _run(owner=None, *, visibility="public", listed=True, version=None) -> Run:
    benchmark = benchmark_current()
    if version is not None:
        benchmark, _ = BenchmarkVersion.objects.get_or_create(
            name=version, defaults={"scene_set": "retired", "prompt_version": "v1"}
        )
    return Run.objects.create(
        model_entry=ModelEntryFactory(),
        benchmark=benchmark,
        owner=owner,
        visibility=visibility,
        listed=listed,
        source=Run.Source.EVALUATED,
        agent="random",
    )


def test_visible_to_is_public_runs_and_ones_own(alice, bob):
    public, alices, bobs = (
        _run(),
        _run(alice, visibility="private"),
        _run(bob, visibility="private"),
    )
    assert set(Run.objects.public()) == {public}
    assert set(Run.objects.visible_to(alice)) == {public, alices}
    assert (
        set(Run.objects.visible_to(None)) == set(Run.objects.visible_to(bob)) - {bobs} == {public}
    )


def test_on_board_is_listed_public_runs_of_one_version(alice):
    shown = _run()
    _run(listed=False)
    _run(alice, visibility="private")
    retired = _run(version="v1")
    assert set(Run.objects.on_board()) == {shown}
    assert set(Run.objects.on_board("v1")) == {retired}
    scene = benchmark_current().scenes.first()
    episode = Episode.objects.create(run=shown, scene=scene, level=0)
    Episode.objects.create(run=retired, scene=scene, level=0)
    assert list(Episode.objects.on_board()) == [episode]
    row = RunScore.objects.create(run=shown, table="overall", track="overall", **SCORES)
    RunScore.objects.create(run=retired, table="overall", track="overall", **SCORES)
    assert list(RunScore.objects.on_board()) == [row]


def test_run_for_sees_public_or_own_and_manages_own_or_as_a_moderator(alice, bob, moderator):
    private = _run(alice, visibility="private")
    public = _run(bob)
    assert run_for(run_id=private.pk, user=alice) == private
    for user in (bob, moderator, None):
        with pytest.raises(Run.DoesNotExist):
            run_for(run_id=private.pk, user=user)
    assert run_for(run_id=public.pk, user=None) == public
    # Managing: the owner or a moderator, never a visitor who merely sees the run.
    assert run_for(run_id=private.pk, user=moderator, manage=True) == private
    assert run_for(run_id=public.pk, user=bob, manage=True) == public
    with pytest.raises(Run.DoesNotExist):
        run_for(run_id=public.pk, user=alice, manage=True)
    with pytest.raises(Run.DoesNotExist):
        run_for(run_id=10_000, user=moderator, manage=True)
    assert not run_manageable(run=public, user=None)


def test_a_moderator_may_cancel_any_running_run_and_a_visitor_none(client, alice, bob, moderator):
    run = _run(alice, visibility="private")
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    client.force_login(bob)
    assert client.post(f"/runs/{run.pk}/cancel/").status_code == 404
    assert Run.objects.get(pk=run.pk).status == Run.Status.RUNNING
    client.force_login(moderator)
    assert client.post(f"/runs/{run.pk}/cancel/").status_code == 302
    assert Run.objects.get(pk=run.pk).status == Run.Status.CANCELLED
