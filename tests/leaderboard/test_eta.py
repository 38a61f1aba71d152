"""A run's time left: a range from the pace of its finished episodes, honest when it changes."""

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.config import RunConfig
from leaderboard.models import Episode, ModelEntry, Run, Step
from leaderboard.runs.selectors import eta_from_steps, eta_range, eta_text, run_progress
from leaderboard.runs.services import run_create
from tests.leaderboard.factories import ModelEntryFactory, board_run


def test_a_steady_run_gets_one_figure():
    eta = eta_range(finished_s=[10.0 * i for i in range(1, 11)], now_s=100, remaining=30)
    assert eta == pytest.approx((300, 300))
    assert eta_text(eta) == "about 5 minutes"


def test_a_fast_start_then_silence_does_not_promise_seconds():
    # 20 episodes answered from the cache in 2 s, then nothing for a minute (the cores busy
    # rendering): the old estimate (elapsed / done x remaining at 2 s) said 24 s.
    eta = eta_range(finished_s=[0.1 * i for i in range(1, 21)], now_s=62, remaining=244)
    low, high = eta
    assert low > 600 and high > 600
    assert eta_text(eta) == "about 13 minutes"


def test_a_slowing_run_gets_a_range_from_both_paces():
    quick = [float(t) for t in range(1, 41)]  # one a second
    slow = [50.0 + 10 * i for i in range(20)]  # then one every 10 s
    low, high = eta_range(finished_s=quick + slow, now_s=240, remaining=100)
    assert low == pytest.approx(100 / (60 / 240))
    assert high == pytest.approx(100 / (20 / 200))
    assert eta_text((low, high)) == "7 to 17 minutes"


def test_there_is_no_estimate_before_an_episode_finishes_or_after_the_last():
    assert eta_range(finished_s=[], now_s=30, remaining=10) is None
    assert eta_range(finished_s=[5.0], now_s=30, remaining=0) is None
    assert eta_text(None) == "\u2014"


@pytest.mark.parametrize(
    ("eta", "text"),
    [
        ((12, 12.2), "about 12 seconds"),
        ((40, 80), "40 to 80 seconds"),
        ((50, 100), "1 to 2 minutes"),
        ((3 * 3600, 4 * 3600), "3.0 to 4.0 hours"),
    ],
)
def test_the_range_reads_in_words(eta, text):
    assert eta_text(eta) == text


@pytest.mark.django_db
def test_the_run_page_says_the_time_left_from_its_finished_episodes(
    client, django_capture_on_commit_callbacks
):
    entry = ModelEntryFactory(name="Oracle", kind=ModelEntry.Kind.BASELINE)
    with django_capture_on_commit_callbacks(execute=False):
        run = run_create(
            model_entry=entry, config=RunConfig(agent="oracle", scenes="robot", levels=(0,))
        )
    started = timezone.now() - timedelta(seconds=100)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, started=started)
    # 6 of 18 episodes, one every 16.7 s: 12 left, at that pace 200 s.
    episodes = Episode.objects.filter(run=run).select_related("scene").order_by("pk")[:6]
    for i, episode in enumerate(episodes):
        Episode.objects.filter(pk=episode.pk).update(
            status=Episode.Status.COMPLETED,
            distances=list(range(episode.scene.d0_steps, 0, -1)),
            heartbeat=started + timedelta(seconds=100 * (i + 1) / 6),
        )
    run.refresh_from_db()
    progress = run_progress(run=run)
    assert progress["eta_low_s"] == pytest.approx(200, abs=2)
    assert progress["eta_high_s"] == pytest.approx(200, abs=2)
    assert progress["eta_text"] in ("about 3 minutes", "3 to 4 minutes")
    content = client.get(f"/runs/{run.pk}/").content.decode()
    assert f'Time left: <span data-field="eta_text">{progress["eta_text"]}</span>' in content


def test_the_first_estimate_counts_every_episode_in_flight():
    # 72 episodes, four at a time, ten steps of a second each: about 180 s. At 10.5 s one has
    # finished and three more are a step from it; by the pace of that one (one every 10.5 s) the
    # 71 left would take 12 minutes. The steps answered say 3.
    eta = eta_from_steps(
        steps=41, in_flight_steps=31, elapsed_s=10.5, remaining=71, steps_per_episode=10
    )
    assert eta == pytest.approx((174, 174), abs=1)
    assert eta_text(eta) == "about 3 minutes"
    assert eta_text(eta_range(finished_s=[10.0], now_s=10.5, remaining=71)) == "about 12 minutes"
    assert (
        eta_from_steps(steps=0, in_flight_steps=0, elapsed_s=3, remaining=72, steps_per_episode=10)
        is None
    )


@pytest.mark.django_db
def test_while_fewer_episodes_have_finished_than_run_the_steps_give_the_time_left(bundles):
    # Imported without steps: the test stores those of its first 10.5 s itself.
    run = board_run(bundles["oracle"], "Oracle", kind=ModelEntry.Kind.BASELINE)
    # Back to its first 10.5 s: one episode finished, four in flight, the rest waiting.
    started = timezone.now() - timedelta(seconds=10.5)
    Episode.objects.filter(run=run).update(status=Episode.Status.PENDING, steps_taken=0)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, started=started, finished=None)
    first, *others = Episode.objects.filter(run=run).order_by("pk")[:5]
    Episode.objects.filter(pk=first.pk).update(
        status=Episode.Status.COMPLETED, steps_taken=10, heartbeat=started + timedelta(seconds=10)
    )
    Episode.objects.filter(pk__in=[e.pk for e in others]).update(status=Episode.Status.RUNNING)
    taken = {first.pk: 10, others[0].pk: 10, others[1].pk: 10, others[2].pk: 10, others[3].pk: 1}
    Step.objects.bulk_create(
        Step(episode_id=pk, index=i, executed=True, distance_steps=1, hand_cell=[0, 0, 0])
        for pk, n in taken.items()
        for i in range(n)
    )
    run.refresh_from_db()
    progress = run_progress(run=run)
    # 263 episodes left at 10 steps, 31 of them taken, at 41 steps in 10.5 s: 11 minutes, where
    # the one finished episode's pace said 46.
    assert progress["episodes_running"] == 4 and progress["episodes_done"] == 1
    assert progress["eta_s"] == pytest.approx((263 * 10 - 31) / (41 / 10.5), rel=0.02)
    assert progress["eta_text"] == "about 11 minutes"
