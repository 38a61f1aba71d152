"""The S3-compatible frame store answering 503, or unreachable, for 10 s in the middle of a
model's run whose episodes store every frame they show: no episode fails, every frame a step
names ends up stored, once, and the run goes on by itself when the store is back.

moto's server is the store; ``tests.faults.s3proxy`` stands in front of it and is switched to
503 (S3's Slow Down) or closed. 10 s: longer than botocore's own retries of one request
(about 7 s on average), so the site's handling is what is tested, and short enough for the test
to stay near a minute.
"""

from __future__ import annotations

import time

import boto3
import pytest

from leaderboard.models import Episode, ModelEntry, Run, Step
from tests.evaluation.fake_providers import FakeOpenAI, Scripted
from tests.faults.processes import empty_queues, start_celery_worker, wait_until
from tests.faults.s3proxy import S3Proxy
from tests.leaderboard.factories import ModelEntryFactory
from tests.leaderboard.workers import stop_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.waits]

OUTAGE_S = 10
BUCKET = "frames"
SCENE = "tienkung-allegro-logo_0"  # one scene: its set-up is paid once (8 s on a busy CPU)


def bucket_objects(client) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
    return [item["Key"] for page in pages for item in page.get("Contents", [])]


@pytest.mark.parametrize("outage", ["503", "unreachable"])
def test_frames_are_stored_through_an_s3_outage(outage, s3_server, results, fault_row):
    from evaluation.config import RunConfig
    from leaderboard.frames.selectors import FRAME_VARIANTS, frame_path
    from leaderboard.runs.services import run_create

    credentials = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    s3 = boto3.client(
        "s3",
        endpoint_url=s3_server,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    s3.create_bucket(Bucket=BUCKET)
    proxy = S3Proxy(s3_server).start()
    env = {
        **credentials,
        **results.env,
        "MIRRORBENCH_S3_BUCKET": BUCKET,
        "MIRRORBENCH_S3_ENDPOINT_URL": proxy.url,
        "MIRRORBENCH_S3_REGION": "us-east-1",
    }
    empty_queues()
    with FakeOpenAI() as fake:
        fake.enqueue(*[Scripted(200, delay_s=0.1)] * 400)
        worker = start_celery_worker(env=env, queues=("models",))
        try:
            entry = ModelEntryFactory(kind=ModelEntry.Kind.OPEN_WEIGHTS)
            config = RunConfig(
                agent="openai:fake-vl",
                base_url=fake.base_url,
                image_size=32,
                scenes=SCENE,
                levels=(0, 1, 2, 3),
            )
            run = run_create(model_entry=entry, config=config)
            wait_until(
                lambda: len(bucket_objects(s3)) >= 3 * 4, timeout=90, what="no frame was stored"
            )
            if outage == "503":
                proxy.mode = "503"
            else:
                proxy.down()
            time.sleep(OUTAGE_S)
            steps_in_outage = Step.objects.filter(episode__run=run).count()
            proxy.up()
            back = time.monotonic()
            wait_until(
                lambda: (
                    Step.objects.filter(episode__run=run).count() > steps_in_outage
                    or Run.objects.get(pk=run.pk).status != Run.Status.RUNNING
                ),
                timeout=60,
                what="no step was stored after the store came back",
            )
            recovered = time.monotonic() - back
            wait_until(
                lambda: Run.objects.get(pk=run.pk).status != Run.Status.RUNNING,
                timeout=90,
                what="the run did not finish after the store came back",
            )
        finally:
            stop_worker(worker)
            proxy.stop()
    assert outage == "unreachable" or proxy.refused > 0
    episodes = Episode.objects.filter(run=run)
    steps = Step.objects.filter(episode__run=run)
    objects = bucket_objects(s3)
    keys = set(steps.values_list("frame_key", flat=True))
    wanted = {frame_path(key, variant) for key in keys for variant in FRAME_VARIANTS}
    duplicated = len(objects) - len(set(objects) & wanted)
    fault_row(
        f"S3 {outage} for {OUTAGE_S} s while storing frames",
        run.episodes_expected,
        episodes.filter(status="completed").count(),
        duplicated + sum(e.attempts - 1 for e in episodes),
        recovered,
    )
    assert Run.objects.get(pk=run.pk).status == Run.Status.COMPLETED
    assert [e.status for e in episodes] == ["completed"] * run.episodes_expected, [
        e.error for e in episodes
    ]
    for episode in episodes.prefetch_related("steps"):
        assert [s.index for s in episode.steps.all()] == list(range(episode.steps_taken))
    # Every frame a model was shown is stored, whole, and nothing else.
    assert wanted <= set(objects), sorted(wanted - set(objects))[:5]
    assert duplicated == 0, sorted(set(objects) - wanted)[:5]
