"""Redis, the broker and the cache, stopped for 10 s in the middle of a model's run and then
started again: the episodes in flight go on, the worker and beat reconnect by themselves, and
the run completes with every episode played once and every step stored once.

10 s rather than 30: the worker's reconnection backs off from 2 s by 2 s steps, so 10 s
already spans several of its attempts (what 30 s would test too), and the test stays near a
minute. Redis is stopped cleanly (it saves its data, the queued messages among them, as
``systemctl stop`` does), or killed: the episodes still queued are then lost with it, and
beat's stale check (here after 25 s of silence, 300 s by default) queues them again. 25 s, not
15: an episode in flight can go quiet for the outage plus a reconnection back-off (a 15 s check
once handed one such episode to a second attempt).
"""

from __future__ import annotations

import time

import pytest

from leaderboard.models import Episode, Run, Step
from tests.evaluation.fake_providers import FakeOpenAI, Scripted
from tests.faults.processes import (
    fake_run_queue,
    start_beat,
    start_celery_worker,
    wait_for_recovery,
    wait_until,
)
from tests.faults.servers import RedisServer
from tests.leaderboard.workers import stop_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.waits]

OUTAGE_S = 10


@pytest.mark.parametrize("how", ["stopped", "killed"])
def test_a_run_goes_on_through_a_redis_outage(how, tmp_path, results, fault_row):
    redis = RedisServer(tmp_path).start()
    env = {
        **results.env,
        "CELERY_BROKER_URL": redis.url(0),
        "MIRRORBENCH_CACHE_URL": redis.url(1),
        # Longer than any step takes (the first one sets up the scene: 8 s on a busy machine),
        # so that no episode being played is taken over.
        "MIRRORBENCH_EPISODE_STALE_S": "25",
        "MIRRORBENCH_STALE_CHECK_S": "1",
    }
    with FakeOpenAI() as fake:
        fake.enqueue(*[Scripted(200, delay_s=0.3)] * 400)
        worker = start_celery_worker(env=env, queues=("models",))
        beat = start_beat(env=env)
        try:
            run = Run.objects.get(pk=fake_run_queue(env, fake.base_url))
            steps = Step.objects.filter(episode__run=run)
            wait_until(lambda: steps.count() >= 5, timeout=90, what="no step was stored")
            redis.stop(kill=how == "killed")
            time.sleep(OUTAGE_S)
            in_outage = steps.count()
            redis.start()
            recovered = wait_for_recovery(
                steps.count,
                lambda: Run.objects.get(pk=run.pk).status,
                before=in_outage,
                part="Redis",
                complete_s=120,
            )
        finally:
            stop_worker(beat)
            stop_worker(worker)
            redis.stop()
    episodes = Episode.objects.filter(run=run)
    played = [o for o in results.returned() if o in ("completed", "error", "lost")]
    fault_row(
        f"Redis (broker, cache) {how} {OUTAGE_S} s",
        run.episodes_expected,
        episodes.filter(status="completed").count(),
        sum(e.attempts - 1 for e in episodes) + max(0, len(played) - run.episodes_expected),
        recovered,
    )
    assert [e.status for e in episodes] == ["completed"] * run.episodes_expected
    for episode in episodes.prefetch_related("steps"):
        assert [s.index for s in episode.steps.all()] == list(range(episode.steps_taken))
    assert steps.count() == sum(e.steps_taken for e in episodes) == len(fake.requests)
    assert [e.attempts for e in episodes] == [1] * run.episodes_expected
