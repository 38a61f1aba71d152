"""A run's time left: a range from the pace of its finished episodes, honest when it changes."""

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.config import RunConfig
from leaderboard.models import Episode, ModelEntry, Run
from leaderboard.runs.selectors import eta_range, eta_text, run_progress
from leaderboard.runs.services import run_create
from tests.leaderboard.factories import ModelEntryFactory


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
