"""Two hosts, one site, on one machine: docs/deploy.md's "Two hosts, one site" run as written.

The web host and two worker hosts are processes with a data directory each, so that nothing can
pass through a disk, against PostgreSQL, Redis and an S3-compatible server (moto) on loopback.
Each host runs its block of the page with bash as it is written; only the web's address becomes
a free loopback port. A hosted run of a fake model starts on the first worker; the second is
added in the middle of it, and the first is then stopped (SIGTERM, a warm shutdown) while it
plays. The run completes with every episode played once and every step stored once, a bundle
uploaded with ``mirrorbench submit`` becomes a run, and every frame the two runs' replays list
is fetched from the web, through its redirect to the bucket, and is a real image, whichever
process rendered it.
"""

from __future__ import annotations

import io
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import boto3
import psycopg
import pytest
import requests
from PIL import Image

from evaluation.outbound import ALLOW_PRIVATE_ENV
from tests.evaluation.fake_providers import FakeOpenAI, Scripted
from tests.faults.processes import RunRows, assert_played_once, duplicated, log_of, wait_until
from tests.faults.servers import PostgresServer, RedisServer, free_port
from tests.leaderboard.workers import stop_worker

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "deploy.md"
SECTION = "### Two hosts, one site"
BLOCKS = ("every host", "the web host", "each worker host", "one host only: beat")
WEB_BIND = "0.0.0.0:8000"
"""The web's address on the page, the one thing changed: here a free port on loopback."""

BUCKET = "mirrorbench-frames"
SCENES = ("tienkung-allegro-logo_0", "tienkung-allegro-logo_1")
EPISODES = 2 * 4  # twice the first worker's threads (-c 4): some are left for the second
REPLY_S = 1.0  # per model answer: an episode lasts long enough for the second worker to join
UPLOAD_LEVELS = ("0", "1")
FRAME_SIZE = 32
PASSWORD = secrets.token_urlsafe(16)
API_KEY = f"sk-{secrets.token_urlsafe(24)}"
RENDERED = re.compile(
    r"leaderboard\.tasks\.(?:frames_render_keys|episode_render_frames)\[[^]]*\] "
    r"succeeded in [0-9.]+s: \{'rendered': (\d+)"
)
PLAYED = re.compile(r"leaderboard\.tasks\.episode_evaluate\[[^]]*\] succeeded")
CANONICAL = re.compile(r"frames/[0-9a-f]{2}/[0-9a-f]{40}\.(png|webp|thumb\.webp)$")


def walkthrough() -> dict[str, str]:
    """Return the fenced blocks of the page's "Two hosts, one site" by their first line (where
    they run: ``# the web host``), each without that line."""
    section = DOC.read_text().split(SECTION, 1)[1]
    section = re.split(r"^##", section, maxsplit=1, flags=re.M)[0]
    blocks = {}
    for body in re.findall(r"^```sh\n(.*?)^```$", section, flags=re.M | re.S):
        title, _, script = body.partition("\n")
        blocks[title.removeprefix("# ")] = script
    return blocks


def exported(script: str) -> set[str]:
    """The names that the ``export`` lines of ``script`` set."""
    names: set[str] = set()
    for line in script.splitlines():
        if line.startswith("export "):
            names |= set(re.findall(r"(?:^export |\s)([A-Z][A-Z0-9_]*)=", line.split(" #")[0]))
    return names


def query(url: str, sql: str, *params: object) -> list[tuple]:
    with psycopg.connect(url, connect_timeout=5) as conn:
        return conn.execute(sql, params).fetchall()


@pytest.fixture
def shared(tmp_path, s3_server) -> Iterator[dict[str, str]]:
    """PostgreSQL, Redis and a bucket on loopback; yield what every host is given to reach
    them (the page's "every host" block, the data directory aside)."""
    postgres = PostgresServer().start()
    (tmp_path / "redis").mkdir()
    redis = RedisServer(tmp_path / "redis").start()
    try:
        postgres.create_database()
        credentials = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
        boto3.client(
            "s3",
            endpoint_url=s3_server,
            region_name="us-east-1",
            **{name.lower(): value for name, value in credentials.items()},
        ).create_bucket(Bucket=BUCKET)
        yield {
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "DATABASE_URL": postgres.url,
            "CELERY_BROKER_URL": redis.url(),
            "MIRRORBENCH_S3_BUCKET": BUCKET,
            "MIRRORBENCH_S3_ENDPOINT_URL": s3_server,
            "MIRRORBENCH_S3_REGION": "us-east-1",
            **credentials,
        }
    finally:
        redis.stop()
        postgres.remove()


@dataclass
class Site:
    """The hosts of the page, each a process group running its block, with a data directory
    of its own under ``folder``."""

    shared: dict[str, str]
    folder: Path
    blocks: dict[str, str] = field(default_factory=walkthrough)
    port: int = field(default_factory=free_port)
    hosts: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, host: str, **extra: str) -> dict[str, str]:
        """A host's environment: none of this test's own site settings, the shared values, a
        data directory of its own, the virtual environment's commands first."""
        inherited = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("MIRRORBENCH_", "DJANGO_", "DATABASE_", "CELERY_", "AWS_"))
        }
        return {
            **inherited,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{inherited.get('PATH', '')}",
            **self.shared,
            "MIRRORBENCH_DATA_DIR": str(self.folder / host),
            # The fake model listens on loopback; the upload's frames are 32 px.
            ALLOW_PRIVATE_ENV: "1",
            "MIRRORBENCH_IMAGE_SIZES": str(FRAME_SIZE),
            **extra,
        }

    def start(self, name: str, block: str, host: str, **extra: str) -> subprocess.Popen[bytes]:
        """Run ``block`` with bash as ``name`` on ``host`` (its data directory)."""
        script = self.blocks[block].replace(WEB_BIND, f"127.0.0.1:{self.port}")
        (self.folder / "logs").mkdir(exist_ok=True)
        log = open(self.folder / "logs" / f"{name}.log", "wb")  # noqa: SIM115  (its own now)
        process = subprocess.Popen(
            ["bash", "-e", "-c", script],
            env=self.env(host, **extra),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=ROOT,
        )
        process.log_path = Path(log.name)  # type: ignore[attr-defined]
        self.hosts[name] = process
        return process

    def worker(self, name: str) -> subprocess.Popen[bytes]:
        # Two hosts would name their workers after themselves; one machine names them here.
        return self.start(name, "each worker host", name, CELERY_WORKER_HOSTNAME=f"celery@{name}")

    def manage(self, *args: str, **extra: str) -> str:
        """Run ``python manage.py args`` on the web host; return its output."""
        done = subprocess.run(
            ["python", "manage.py", *args],
            env=self.env("web", **extra),
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    def wait_for_web(self) -> None:
        web = self.hosts["web"]

        def answers() -> bool:
            assert web.poll() is None, f"the web host's block ended:\n{log_of(web)[-3000:]}"
            try:
                return requests.get(f"{self.base}/about/", timeout=5).ok
            except (requests.ConnectionError, requests.Timeout):
                return False  # not listening yet, or its first page is slow on a loaded machine

        wait_until(answers, timeout=240, what="the web host never answered", every=0.5)

    def stop(self) -> None:
        for process in self.hosts.values():
            stop_worker(process)


def warm_stop(process: subprocess.Popen[bytes]) -> float:
    """SIGTERM a host's process group, wait until it has ended by itself; return the seconds."""
    started = time.monotonic()
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=120)
    return time.monotonic() - started


def hosted_run(base_url: str) -> str:
    """The web host's code that queues the uploader's hosted run with their API key, as the
    evaluate form does: the web encrypts the key, whichever worker plays decrypts it."""
    config = (
        f"agent='openai:fake-vl', base_url={base_url!r}, scenes={','.join(SCENES)!r}, "
        f"levels=(0, 1, 2, 3), image_size={FRAME_SIZE}"
    )
    return (
        "from django.contrib.auth import get_user_model\n"
        "from leaderboard.boards.entries import model_entry_upsert\n"
        "from evaluation.config import RunConfig\n"
        "from leaderboard.runs.services import run_create\n"
        "owner = get_user_model().objects.get(username='uploader')\n"
        "entry = model_entry_upsert(name='Fake VL', kind='open-weights')\n"
        f"run = run_create(model_entry=entry, config=RunConfig({config}), owner=owner, "
        f"api_key={API_KEY!r})\n"
        "print(run.pk)\n"
    )


def bundle_play(site: Site, token: str) -> tuple[Path, dict[str, str]]:
    """Play a random agent's bundle on the uploader's own machine; return it and the
    environment that uploads it."""
    env = {**site.env("client"), "MIRRORBENCH_TOKEN": token}
    bundle = site.folder / "client" / "random.jsonl"
    subprocess.run(
        [
            *("mirrorbench", "run", "--agent", "random", "--scenes", SCENES[0]),
            *("--levels", ",".join(UPLOAD_LEVELS), "--image-size", str(FRAME_SIZE)),
            *("--out", str(bundle)),
        ],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return bundle, env


def signed_in(base: str, username: str) -> requests.Session:
    session = requests.Session()
    session.get(f"{base}/accounts/login/", timeout=30).raise_for_status()
    answer = session.post(
        f"{base}/accounts/login/",
        data={
            "username": username,
            "password": PASSWORD,
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
        timeout=30,
    )
    assert answer.ok and "sessionid" in session.cookies, answer.text[-2000:]
    return session


def replay_frames(session: requests.Session, base: str, episode_id: int) -> list[str]:
    """The frame URLs an episode's replay page lists: each view's WebP and PNG."""
    page = session.get(f"{base}/episodes/{episode_id}/", timeout=60)
    page.raise_for_status()
    found = re.search(
        r'<script id="replay-data" type="application/json">(.*?)</script>', page.text, re.S
    )
    assert found, f"episode {episode_id}: no replay data"
    views = json.loads(found.group(1))["views"]
    return [view["frame"][variant] for view in views for variant in ("webp", "png")]


def frame_fetch(session: requests.Session, url: str, *, timeout: float = 120) -> Image.Image:
    """Fetch a frame from the web, following its redirect to the bucket, and asking again
    while the web answers that it is being rendered (503, Retry-After); return the image."""
    deadline = time.monotonic() + timeout
    while True:
        answer = session.get(url, timeout=90)
        if answer.status_code != 503:
            break
        assert time.monotonic() < deadline, f"{url}: still 503 after {timeout} s"
        time.sleep(float(answer.headers.get("Retry-After", "1")))
    assert answer.status_code == 200, f"{url}: {answer.status_code} {answer.text[:300]}"
    image = Image.open(io.BytesIO(answer.content))
    image.load()
    return image


def bucket_objects(shared: dict[str, str]) -> list[str]:
    s3 = boto3.client(
        "s3",
        endpoint_url=shared["MIRRORBENCH_S3_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id=shared["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=shared["AWS_SECRET_ACCESS_KEY"],
    )
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
    return [item["Key"] for page in pages for item in page.get("Contents", [])]


def test_the_page_names_what_every_host_is_given_and_where_each_block_runs():
    blocks = walkthrough()
    assert list(blocks) == list(BLOCKS)
    assert exported(blocks["every host"]) == {
        *("DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS", "DATABASE_URL", "CELERY_BROKER_URL"),
        *("MIRRORBENCH_S3_BUCKET", "MIRRORBENCH_S3_ENDPOINT_URL", "MIRRORBENCH_S3_REGION"),
        *("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "MIRRORBENCH_DATA_DIR"),
    }
    assert blocks["the web host"].count(WEB_BIND) == 1


@pytest.mark.slow
@pytest.mark.waits
def test_a_site_on_two_hosts_runs_uploads_and_serves_every_frame(tmp_path, shared, capsys):
    started = time.monotonic()
    site = Site(shared, tmp_path)
    # What every host is given is what the page says, the data directory aside (one each).
    assert exported(site.blocks["every host"]) == {*shared, "MIRRORBENCH_DATA_DIR"}
    figures: dict[str, Any] = {}
    try:
        site.start("web", "the web host", "web")
        site.worker("worker-1")
        site.start("beat", "one host only: beat", "worker-1")
        site.wait_for_web()
        figures["up_s"] = time.monotonic() - started

        # An uploader and their token, made on the web host; a bundle played on their machine.
        site.manage(
            *("createsuperuser", "--noinput", "--username", "uploader"),
            *("--email", "uploader@example.org"),
            DJANGO_SUPERUSER_PASSWORD=PASSWORD,
        )
        bundle, uploader = bundle_play(site, site.manage("token", "uploader").split()[-1])

        with FakeOpenAI() as fake:
            fake.enqueue(*[Scripted(200, delay_s=REPLY_S)] * 400)
            run_id = int(site.manage("shell", "-c", hosted_run(fake.base_url)).split()[-1])
            run = RunRows(partial(query, shared["DATABASE_URL"]), run_id, "%s")
            wait_until(lambda: run.steps() >= 1, timeout=120, what="worker-1 stored no step")
            second = site.worker("worker-2")
            submitted = subprocess.run(
                [
                    *("mirrorbench", "submit", str(bundle), "--url", site.base),
                    *("--model", "Random Mine", "--kind", "open-weights"),
                ],
                env=uploader,
                capture_output=True,
                text=True,
                timeout=180,
            )
            assert submitted.returncode == 0, submitted.stdout + submitted.stderr
            wait_until(
                lambda: "episode_evaluate" in log_of(second),
                timeout=120,
                what="worker-2 never took an episode",
            )
            assert run.status() == "running"
            figures["stop_s"] = warm_stop(site.hosts["worker-1"])
            wait_until(
                lambda: run.status() == "completed",
                timeout=180,
                what="the run did not complete after worker-1 stopped",
            )
            keys_sent = {r.headers.get("authorization") for r in fake.requests}
        figures["run_s"] = time.monotonic() - started
        episodes, step_rows = run.episodes(), run.step_rows()
        secrets_left = query(
            shared["DATABASE_URL"],
            "SELECT count(*) FROM leaderboard_runsecret WHERE run_id = %s",
            run_id,
        )[0][0]
        uploaded = query(
            shared["DATABASE_URL"],
            "SELECT r.status, array_agg(e.id ORDER BY e.id) FROM leaderboard_submission s "
            "JOIN leaderboard_run r ON s.run_id = r.id "
            "JOIN leaderboard_episode e ON e.run_id = r.id GROUP BY r.id",
        )
        assert [status for status, _ in uploaded] == ["completed"], uploaded

        # Every frame the replays of both runs list, from the web, as a browser asks for them.
        session = signed_in(site.base, "uploader")
        urls = []
        for episode_id in sorted(e[0] for e in episodes) + uploaded[0][1]:
            urls += replay_frames(session, site.base, episode_id)
        keys = sorted({url.rsplit("/", 1)[1].split(".")[0] for url in urls})
        unstored = query(
            shared["DATABASE_URL"],
            "SELECT count(*) FROM leaderboard_frame WHERE key = ANY(%s) AND stored IS NULL",
            keys,
        )[0][0]
        sizes = {frame_fetch(session, f"{site.base}{url}").size for url in urls}
        figures["frames_s"] = time.monotonic() - started - figures["run_s"]
    finally:
        site.stop()
    played = {n: len(PLAYED.findall(log_of(site.hosts[n]))) for n in ("worker-1", "worker-2")}
    rendered = {
        n: sum(int(c) for c in RENDERED.findall(log_of(site.hosts[n])))
        for n in ("worker-1", "worker-2")
    }
    twice = [
        k for k in bucket_objects(shared) if k.startswith("frames/") and not CANONICAL.match(k)
    ]
    steps_twice = len(step_rows) - len({(e, i) for e, i, _ in step_rows})
    with capsys.disabled():
        print(
            f"\ntwo hosts, one site: {time.monotonic() - started:.0f} s (site up at "
            f"{figures['up_s']:.0f} s, run completed at {figures['run_s']:.0f} s, frames "
            f"fetched in {figures['frames_s']:.0f} s)\n"
            f"{'':<28} {'expected':>8} {'stored':>7} {'duplicated':>10}\n"
            f"{'hosted run: episodes':<28} {EPISODES:>8} "
            f"{sum(e[1] == 'completed' for e in episodes):>7} "
            f"{duplicated(episodes, step_rows):>10}\n"
            f"{'hosted run: steps':<28} {sum(e[3] for e in episodes):>8} {len(step_rows):>7} "
            f"{steps_twice:>10}\n"
            f"{'upload: episodes':<28} {len(UPLOAD_LEVELS):>8} {len(uploaded[0][1]):>7}\n"
            f"{'frame files: asked, served':<28} {len(urls):>8} {len(urls):>7} {len(twice):>10}\n"
            f"episodes played: worker-1 {played['worker-1']}, worker-2 {played['worker-2']} "
            f"(worker-1 stopped by SIGTERM in {figures['stop_s']:.1f} s, its episodes done)\n"
            f"frames: {len(keys)} asked, {unstored} not stored yet when asked (made then by the "
            f"web or a render task); render tasks made worker-1 {rendered['worker-1']}, "
            f"worker-2 {rendered['worker-2']}"
        )
    assert_played_once(episodes, step_rows, EPISODES)
    # Both workers decrypted the key the web encrypted: the one secret key of the page.
    assert keys_sent == {f"Bearer {API_KEY}"}, keys_sent
    assert secrets_left == 0, "the run's API key was not erased when it ended"
    assert played["worker-1"] > 0 and played["worker-2"] > 0, played
    assert site.hosts["worker-1"].returncode == 0, log_of(site.hosts["worker-1"])[-3000:]
    assert sizes == {(FRAME_SIZE, FRAME_SIZE)}, sizes
    assert sum(rendered.values()) > 0, "no render task ran on a worker host"
    assert not twice, f"frames stored twice under other names: {twice[:5]}"
    # Frames went to the bucket only: no host has a media folder of its own.
    assert not [
        host for host in ("web", "worker-1", "worker-2") if (tmp_path / host / "media").exists()
    ]
