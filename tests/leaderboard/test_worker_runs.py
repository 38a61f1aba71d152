"""Runs evaluated on the server, with a real Celery worker on the embedded broker."""

import json
import time

import pytest
from django.core.management import call_command

from evaluation.bundle import read_bundle
from evaluation.verify import verify_bundle
from leaderboard.models import Episode, Run, Step
from leaderboard.selectors import LeaderboardFilters, leaderboard_table
from tests.leaderboard.workers import start_worker, stop_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def worker():
    process = start_worker()
    yield process
    stop_worker(process)


def evaluate(capsys, *args):
    call_command("evaluate", *args, "--wait", "--json", "--timeout", "300")
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


def test_a_duplicated_task_does_nothing(worker, capsys):
    from leaderboard.tasks import episode_evaluate, run_start

    result = evaluate(capsys, "--agent", "oracle", "--scenes", "robot", "--levels", "1")
    run = Run.objects.get(pk=result["run"])
    steps = Step.objects.filter(episode__run=run).count()
    episode = Episode.objects.filter(run=run).first()
    episode_evaluate.delay(episode.pk).get(timeout=60) if False else episode_evaluate.delay(
        episode.pk
    )
    run_start.delay(run.pk)
    time.sleep(3)
    assert Step.objects.filter(episode__run=run).count() == steps
    assert Run.objects.get(pk=run.pk).status == "completed"
