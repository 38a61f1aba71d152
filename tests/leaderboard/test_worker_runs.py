"""Runs evaluated on the server, with a real Celery worker on the embedded broker."""

import json
import time

import pytest
from django.core.management import call_command

from evaluation.bundle import read_bundle
from evaluation.outbound import ALLOW_PRIVATE_ENV
from evaluation.verify import verify_bundle
from leaderboard.boards.selectors import LeaderboardFilters, leaderboard_table
from leaderboard.models import Episode, ModelEntry, Run, Step
from tests.leaderboard.factories import ModelEntryFactory
from tests.leaderboard.workers import Results, start_worker, stop_worker
from tests.parts import TEST_DEPS, require_part

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture(autouse=True)
def local_models(settings, monkeypatch):
    """The fake providers listen on loopback: the site and its workers (which inherit this
    environment) are told to allow private endpoints, as for a local vLLM server."""
    settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS = True
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")


@pytest.fixture
def results(tmp_path):
    """What the tasks of a worker started with ``results.env`` returned."""
    return Results(tmp_path / "results")


@pytest.fixture
def worker(results):
    process = start_worker(extra_env=results.env)
    yield process
    stop_worker(process)


def evaluate(capsys, *args):
    # Small frames: every finished episode queues its frames on the render queue.
    call_command("evaluate", *args, "--image-size", "48", "--wait", "--json", "--timeout", "300")
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_a_random_run_completes_on_a_worker_and_lands_on_the_leaderboard(worker, capsys, tmp_path):
    result = evaluate(capsys, "--agent", "random")
    assert result["status"] == "completed" and result["episodes"] == 264
    run = Run.objects.get(pk=result["run"])
    assert run.listed and run.source == "evaluated"
    assert Episode.objects.filter(run=run, status="completed").count() == 264
    board = leaderboard_table(table="overall", filters=LeaderboardFilters(sources=("evaluated",)))
    assert list(board.frame["model"]) == ["Random"]
    assert result["metrics"]["overall"]["overall"]["avg"] == pytest.approx(
        board.frame["overall_avg"][0]
    )
    out = tmp_path / "run.jsonl"
    call_command("export_run", str(run.pk), "--out", str(out))
    assert verify_bundle(read_bundle(out)) == []


def test_a_duplicated_task_does_nothing(worker, results, capsys):
    from leaderboard.tasks import episode_evaluate, run_start

    result = evaluate(capsys, "--agent", "oracle", "--scenes", "robot", "--levels", "1")
    run = Run.objects.get(pk=result["run"])
    steps = Step.objects.filter(episode__run=run).count()
    episode = Episode.objects.filter(run=run).first()
    # The worker runs both duplicates to their end: the finished episode is not claimed again,
    # and the completed run is not started again, so it queues no episode.
    assert results.of(episode_evaluate.delay(episode.pk)) == "claimed-elsewhere"
    assert results.of(run_start.delay(run.pk)) == 0
    assert Episode.objects.get(pk=episode.pk).attempts == episode.attempts == 1
    assert Step.objects.filter(episode__run=run).count() == steps
    assert Run.objects.get(pk=run.pk).status == "completed"


def test_a_killed_worker_loses_nothing_and_a_new_one_finishes_the_run(monkeypatch):
    from evaluation.config import RunConfig
    from leaderboard.boards.entries import model_entry_upsert
    from leaderboard.runs.services import run_create

    fast_recovery = {"MIRRORBENCH_EPISODE_STALE_S": "2", "MIRRORBENCH_STALE_CHECK_S": "1"}
    monkeypatch.setattr("django.conf.settings.MIRRORBENCH_EPISODE_STALE_S", 2)
    first = start_worker(extra_env=fast_recovery)
    entry = model_entry_upsert(name="Random", kind="baseline")
    # One level of every scene (66 episodes): the first worker is killed after 30 of them, with
    # two in flight, and the second plays the rest.
    config = RunConfig(agent="random", levels=(3,), image_size=48)
    run = run_create(model_entry=entry, config=config)
    deadline = time.monotonic() + 120
    while Episode.objects.filter(run=run, status="completed").count() < 30:
        assert time.monotonic() < deadline, "the first worker made no progress"
        time.sleep(0.2)
    stop_worker(first, kill=True)
    assert Episode.objects.filter(run=run, status__in=["pending", "running"]).exists()
    interrupted = {
        e.pk: e.steps_taken
        for e in Episode.objects.filter(run=run, status="running", steps_taken__gt=0)
    }
    second = start_worker(extra_env=fast_recovery)
    try:
        deadline = time.monotonic() + 240
        while Run.objects.get(pk=run.pk).status != "completed":
            assert time.monotonic() < deadline, "the run did not complete after the restart"
            time.sleep(0.5)
    finally:
        stop_worker(second)
    # Every episode has exactly its steps: none lost, none written twice.
    for episode in Episode.objects.filter(run=run).prefetch_related("steps"):
        indices = [s.index for s in episode.steps.all()]
        assert indices == list(range(len(episode.distances) - 1)), episode
        assert episode.status == "completed"
    # Episodes cut off mid-way were taken over and continued, not started again.
    for episode in Episode.objects.filter(pk__in=interrupted):
        assert episode.attempts >= 2
        assert episode.steps_taken >= interrupted[episode.pk]


def running(run: Run) -> set[int]:
    return set(Episode.objects.filter(run=run, status="running").values_list("pk", flat=True))


def unfinished(episodes: set[int]) -> int:
    return Episode.objects.filter(pk__in=episodes, status="running").count()


def test_a_model_run_against_a_loopback_api_stores_its_responses_and_can_be_cancelled(
    results,
):
    from evaluation.config import RunConfig
    from leaderboard.runs.services import run_cancel, run_create
    from leaderboard.tasks import episode_evaluate
    from tests.evaluation.fake_providers import FakeOpenAI, Scripted

    with FakeOpenAI() as fake:
        fake.enqueue(*[Scripted(200, delay_s=0.15)] * 2000)
        worker = start_worker(extra_env=results.env)
        try:
            entry = ModelEntryFactory(kind=ModelEntry.Kind.OPEN_WEIGHTS)
            config = RunConfig(agent="openai:fake-vl", base_url=fake.base_url, image_size=32)
            run = run_create(model_entry=entry, config=config)
            deadline = time.monotonic() + 120
            while Step.objects.filter(episode__run=run).count() < 10:
                assert time.monotonic() < deadline, "no step stored"
                time.sleep(0.2)
            step = Step.objects.filter(episode__run=run).order_by("pk").first()
            assert step.response.endswith("Choice: [2]") and step.option == 2
            assert step.input_tokens is not None and step.frame_key
            assert run_cancel(run=Run.objects.get(pk=run.pk))
            # A step is stored only while its run is running: what is stored now is final.
            stored = Step.objects.filter(episode__run=run).count()
            held = running(run)
            assert held, "no episode was in flight when the run was cancelled"
            # The tasks in flight stop at their next step: each reports its episode lost (one
            # that had just taken its last step may still complete it).
            deadline = time.monotonic() + 60
            while results.returned().count("lost") < unfinished(held):
                assert time.monotonic() < deadline, (
                    f"{unfinished(held)} episodes held at the cancel are unfinished, and the "
                    f"tasks returned {sorted(map(str, results.returned()))}"
                )
                time.sleep(0.2)
            # A task queued after the cancel comes back refused; by then the worker has taken
            # every episode task queued before it, and each found the run cancelled.
            pending = Episode.objects.filter(run=run, status="pending").first()
            last = episode_evaluate.delay(pending.pk)
            deadline = time.monotonic() + 120
            while not results.done(last):
                started = running(run) - held
                assert not started, f"episodes {sorted(started)} were claimed after the cancel"
                assert time.monotonic() < deadline, "the worker did not reach the last task"
                time.sleep(0.2)
            assert results.of(last) == "claimed-elsewhere"
        finally:
            stop_worker(worker)
    # Nothing new started: no episode was claimed after the cancel, no step stored, and the
    # only requests beyond the stored steps are the one each task in flight was waiting on.
    assert running(run) <= held
    assert Step.objects.filter(episode__run=run).count() == stored
    assert len(fake.requests) <= stored + len(held)
    assert Run.objects.get(pk=run.pk).status == "cancelled"


@pytest.fixture
def redis_url(tmp_path):
    import shutil
    import socket
    import subprocess

    require_part("redis-server", shutil.which("redis-server") is not None, TEST_DEPS)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            "redis-server",
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    server.terminate()
    server.wait(timeout=10)


def test_runs_complete_with_a_redis_broker(redis_url):
    import os
    import subprocess
    import sys

    from django.conf import settings
    from django.db import connection

    from tests.evaluation.fake_providers import FakeOpenAI

    env = {
        **os.environ,
        "CELERY_BROKER_URL": redis_url,
        "MIRRORBENCH_DATA_DIR": str(settings.DATA_DIR),
        "MIRRORBENCH_SQLITE_PATH": str(connection.settings_dict["NAME"]),
    }

    def evaluate(*args):
        result = subprocess.run(
            [
                sys.executable,
                "manage.py",
                "evaluate",
                *args,
                "--image-size",
                "32",
                "--wait",
                "--json",
                "--timeout",
                "240",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        return json.loads(result.stdout.strip().splitlines()[-1])

    worker = start_worker(extra_env={"CELERY_BROKER_URL": redis_url})
    try:
        baseline = evaluate("--agent", "random")
        with FakeOpenAI() as fake:
            model = evaluate(
                "--agent",
                "openai:fake-vl",
                "--base-url",
                fake.base_url,
                "--scenes",
                "nova_carter-allegro-logo_1",
                "--levels",
                "2",
            )
            requests = len(fake.requests)
    finally:
        stop_worker(worker)
    # The random run lands on the leaderboard.
    assert baseline["status"] == "completed" and baseline["episodes"] == 264
    assert Run.objects.get(pk=baseline["run"]).listed
    board = leaderboard_table(table="overall", filters=LeaderboardFilters(sources=("evaluated",)))
    assert list(board.frame["model"]) == ["Random"]
    # The model run's responses are stored, one per request.
    assert model["status"] == "completed"
    steps = Step.objects.filter(episode__run_id=model["run"])
    assert steps.count() == requests > 0
    assert all(s.response.endswith("Choice: [2]") for s in steps)


def test_a_provider_that_keeps_failing_gives_an_error_episode_not_answers():
    from evaluation.config import RunConfig
    from leaderboard.boards.entries import model_entry_upsert
    from leaderboard.runs.services import run_create
    from tests.evaluation.fake_providers import FakeOpenAI, Scripted

    with FakeOpenAI() as fake:
        # Step 0 is answered; step 1 meets a 429 (retry after 0 s), then 500s until the budget ends.
        fake.enqueue(
            Scripted(200), Scripted(429, headers={"Retry-After": "0"}), *[Scripted(500)] * 5
        )
        worker = start_worker(
            extra_env={"MIRRORBENCH_RETRY_ATTEMPTS": "3", "MIRRORBENCH_RETRY_BASE_MS": "10"}
        )
        try:
            entry = model_entry_upsert(name="flaky-vl", kind="open-weights")
            config = RunConfig(
                agent="openai:flaky-vl",
                base_url=fake.base_url,
                image_size=32,
                scenes="GR1_T2-allegro-logo_0",
                levels=(1,),
            )
            run = run_create(model_entry=entry, config=config)
            deadline = time.monotonic() + 120
            while Run.objects.get(pk=run.pk).status != "completed":
                assert time.monotonic() < deadline, "the run did not finish"
                time.sleep(0.3)
        finally:
            stop_worker(worker)
    episode = Episode.objects.get(run=run)
    assert episode.status == "error" and "500" in episode.error and episode.avg is None
    steps = list(episode.steps.all())
    assert len(steps) == 1 and steps[0].option == 2  # only the real answer is stored
    assert len(fake.requests) == 1 + 3
    assert not Run.objects.get(pk=run.pk).listed


def test_a_workers_episodes_share_its_render_pool(settings, monkeypatch):
    # The Celery worker runs episodes on threads; here four threads of this process play the
    # episodes of one run, as the worker's would, with one render thread for all of them.
    from concurrent.futures import ThreadPoolExecutor

    import evaluation.render_pool as render_pool_module
    from evaluation.config import RunConfig
    from leaderboard.frames import services as frames_service
    from leaderboard.runs.services import run_create, run_start
    from leaderboard.worker import episode_evaluate
    from simulation.mujoco_backend import MujocoRenderer
    from tests.evaluation.fake_providers import FakeOpenAI

    made: list[MujocoRenderer] = []

    def counting_renderer(keep_scenes, keep_models):
        made.append(MujocoRenderer(keep_scenes=keep_scenes, keep_models=keep_models))
        return made[-1]

    settings.MIRRORBENCH_RENDER_THREADS = 1
    monkeypatch.setattr(render_pool_module, "_pool_renderer", counting_renderer)
    monkeypatch.setattr(frames_service, "_pool", None)
    with FakeOpenAI() as fake:
        entry = ModelEntryFactory(kind=ModelEntry.Kind.OPEN_WEIGHTS)
        config = RunConfig(
            agent="openai:fake-vl",
            base_url=fake.base_url,
            image_size=24,
            scenes="GR1_T2-allegro-logo_0,male_0-mano_white-splash",
            levels=(0, 3),
        )
        run = run_create(model_entry=entry, config=config)
        episodes = run_start(run_id=run.pk)
        with ThreadPoolExecutor(4) as threads:
            outcomes = list(threads.map(lambda pk: episode_evaluate(episode_id=pk), episodes))
    pool = frames_service.render_pool()
    pool.close()
    assert outcomes == ["completed"] * 4
    rendering = [renderer for renderer in made if renderer.loads]
    assert len(rendering) == 1  # one persistent renderer for every episode and both scenes
    keys = set(Step.objects.filter(episode__run=run).values_list("frame_key", flat=True))
    # Every view a model was shown is stored, each rendered once (the levels share views).
    assert all(frames_service.frame_png(key) for key in keys)
    assert pool.stats.rendered == len(keys) and pool.stats.loads == 2
