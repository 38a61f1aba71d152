"""Submission benchmark (``make bench``): verifying an uploaded bundle on the server.

A full 264-episode bundle played by the random agent, with every response padded to the length
of a reasoning model's answer (``BENCH_RESPONSE_CHARS``, default 1,500 characters), goes
through ``services.submissions.submission_create`` as an upload: spooled and hashed, read,
replayed (``evaluation.verify``) and stored as a private run. Prints the median wall time of
``BENCH_REPEATS`` uploads (each a new user, so none is a duplicate) and the peak of memory
allocated while verifying (tracemalloc) and the process's peak resident memory.

Then the same uploads with frames in an S3 bucket (moto's server on loopback, a dev
dependency): the median wall time and the HEAD requests an upload made to the bucket, which
its frame registration no longer makes per frame (it made 3,778, 14 s of 16).
``BENCH_S3=0`` leaves this part out.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any, cast

RESPONSE_CHARS = int(os.environ.get("BENCH_RESPONSE_CHARS", "1500"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "5"))
S3 = os.environ.get("BENCH_S3", "1") != "0"


def _bundle(folder: Path) -> Path:
    from evaluation.agents import RandomAgent
    from evaluation.config import RunConfig
    from evaluation.runner import run

    plain = folder / "random.jsonl"
    run(RandomAgent, RunConfig(agent="random"), plain)
    padded = folder / "padded.jsonl"
    filler = ("I look at the mirror and compare the hand with the mark. " * 40)[:RESPONSE_CHARS]
    with plain.open() as src, padded.open("w") as out:
        for line in src:
            record = json.loads(line)
            for step in record.get("steps", []):
                step["response"] = filler + "\n" + step["response"]
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
    return padded


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="mirrorbench-bench-"))
    os.environ["MIRRORBENCH_DATA_DIR"] = str(folder / "data")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mirrorbench_site.settings")
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from leaderboard.submissions.services import submission_create

    with open(os.devnull, "w") as quiet:
        call_command("prepare_data_dir", stdout=quiet)
        call_command("migrate", verbosity=0)
    bundle = _bundle(folder)
    size = bundle.stat().st_size
    data = {"model_name": "", "kind": "open-weights"}
    times, peaks = [], []
    for i in range(REPEATS + 1):
        user = User.objects.create_user(f"bench{i}", is_staff=True)  # staff: no caps
        traced = i == REPEATS  # the last upload measures memory (tracemalloc slows it down)
        with bundle.open("rb") as handle:
            chunks = iter(lambda: handle.read(1024 * 1024), b"")
            if traced:
                tracemalloc.start()
            start = time.perf_counter()
            done = submission_create(user=user, chunks=chunks, data={**data, "model_name": f"M{i}"})
            if traced:
                peaks.append(tracemalloc.get_traced_memory()[1])
                tracemalloc.stop()
            else:
                times.append(time.perf_counter() - start)
        assert done.submission.episodes == 264 and not done.duplicate
    s3 = _s3_uploads(bundle, data) if S3 else None
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"MirrorBench submission benchmark: a {size / 2**20:.1f} MiB bundle (264 episodes, "
        f"{RESPONSE_CHARS}-character responses), {REPEATS} uploads"
    )
    print(
        f"  spool, read, verify and store (scores, intervals, behaviour): median "
        f"{statistics.median(times) * 1000:.0f} ms"
    )
    print(
        f"  memory allocated while verifying: peak {statistics.median(peaks) / 2**20:.0f} MiB "
        f"(tracemalloc); process peak RSS {rss_mib:.0f} MiB"
    )
    if s3 is not None:
        median_s, requests = s3
        print(
            f"  the same with frames in S3 (moto on loopback): median {median_s * 1000:.0f} ms, "
            f"{requests} HEAD requests to the bucket per upload"
        )
    sys.stdout.flush()


def _s3_uploads(bundle: Path, data: dict[str, str]) -> tuple[float, int]:
    """Upload ``bundle`` ``REPEATS`` times with S3 frame storage; return the median seconds and
    the requests an upload made to the bucket."""
    import boto3
    from django.contrib.auth.models import User
    from django.core.files.storage import default_storage
    from django.test import override_settings
    from moto.server import ThreadedMotoServer

    from leaderboard.models import Frame
    from leaderboard.submissions.services import submission_create

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's server logs every request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
            Bucket="bench-frames"
        )
        options: dict[str, Any] = {"bucket_name": "bench-frames", "endpoint_url": endpoint}
        options |= {"region_name": "us-east-1", "file_overwrite": False, "default_acl": None}
        stores = {
            "default": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options},
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        }
        times, requests = [], []
        # override_settings makes the storages anew (Django's storages_changed receiver).
        with override_settings(STORAGES=stores):
            counted = [0]
            events = cast(Any, default_storage).connection.meta.client.meta.events
            events.register(
                "before-call.s3.HeadObject", lambda **_: counted.__setitem__(0, counted[0] + 1)
            )
            for i in range(REPEATS):
                user = User.objects.create_user(f"s3bench{i}", is_staff=True)
                # Every upload brings views the site has not registered, as a new model's does
                # (the same bundle again would find its frames registered already).
                Frame.objects.all().delete()
                counted[0] = 0
                with bundle.open("rb") as handle:
                    chunks = iter(lambda: handle.read(1024 * 1024), b"")
                    start = time.perf_counter()
                    done = submission_create(
                        user=user, chunks=chunks, data={**data, "model_name": f"S{i}"}
                    )
                    times.append(time.perf_counter() - start)
                requests.append(counted[0])
                assert done.submission.episodes == 264 and not done.duplicate
    finally:
        server.stop()
    return statistics.median(times), int(statistics.median(requests))


if __name__ == "__main__":
    main()
