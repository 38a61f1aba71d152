"""The worker's step store (``leaderboard.worker._steps_store``): each store refreshes the claim
with one SQL update written once, and stops the task once the run ends or another task holds
the episode."""

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.config import RunConfig
from leaderboard import worker
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.frames.services import FrameSpec
from leaderboard.models import Episode, Run, Step
from leaderboard.runs import selectors
from leaderboard.runs.services import run_cancel, run_create, run_start

pytestmark = pytest.mark.django_db


def record(index: int) -> dict:
    return {
        "index": index,
        "option": 1,
        "executed": 1,
        "response": "",
        "hand_cell": [0, 0, index],
        "distance_steps": 3,
        "parse_error": None,
    }


@pytest.fixture
def held():
    """A running random run's first episode, claimed: (episode, token)."""
    entry = model_entry_upsert(name="Random", kind="baseline")
    run = run_create(model_entry=entry, config=RunConfig(agent="random", image_size=32))
    first = run_start(run_id=run.pk)[0]
    token = worker.episode_claim(episode_id=first)
    assert token
    return Episode.objects.select_related("scene", "run").get(pk=first), token


def store(episode: Episode, token: str, index: int) -> None:
    step = record(index)
    frame = FrameSpec(episode.scene, tuple(step["hand_cell"]), 32)
    worker._steps_store(episode.pk, token, [(step, frame)])


def test_a_held_episode_stores_its_step_and_its_heartbeat_reads_back_as_now(held):
    episode, token = held
    before = timezone.now()
    store(episode, token, 0)
    store(episode, token, 1)
    episode.refresh_from_db()
    assert episode.steps_taken == 2
    assert list(Step.objects.filter(episode=episode).values_list("index", flat=True)) == [0, 1]
    # Written as the ORM writes it: compared and read back as a time, so the stale check works.
    assert before <= episode.heartbeat <= timezone.now()
    assert Episode.objects.filter(pk=episode.pk, heartbeat__gte=before).exists()
    assert episode.pk not in selectors.episodes_stale()
    Episode.objects.filter(pk=episode.pk).update(heartbeat=before - timedelta(days=1))
    assert episode.pk in selectors.episodes_stale()


def test_storing_a_step_registers_its_frame_without_asking_the_store(held, monkeypatch):
    from leaderboard.frames import services
    from leaderboard.models import Frame

    episode, token = held
    asked: list[str] = []
    monkeypatch.setattr(services, "frame_exists", lambda key: asked.append(key) or True)
    store(episode, token, 0)
    key = FrameSpec(episode.scene, (0, 0, 0), 32).key  # the view step 0 led to
    assert asked == [] and Frame.objects.get(pk=key).stored is None


def test_a_cancelled_run_stops_its_task_at_the_next_step(held):
    episode, token = held
    store(episode, token, 0)
    assert run_cancel(run=Run.objects.get(pk=episode.run_id))
    with pytest.raises(worker.EpisodeLost):
        store(episode, token, 1)
    assert Step.objects.filter(episode=episode).count() == 1


def test_a_task_whose_episode_another_task_took_over_stores_nothing(held):
    episode, token = held
    Episode.objects.filter(pk=episode.pk).update(claim="another-task")
    with pytest.raises(worker.EpisodeLost):
        store(episode, token, 0)
    assert not Step.objects.filter(episode=episode).exists()
    assert Episode.objects.get(pk=episode.pk).steps_taken == 0


def test_a_step_stored_twice_is_refused_and_leaves_the_first(held):
    episode, token = held
    store(episode, token, 0)
    with pytest.raises(worker.EpisodeLost):
        store(episode, token, 0)
    assert Step.objects.filter(episode=episode).count() == 1


def _stores(monkeypatch) -> list[list[int]]:
    """Record the step indices of every ``_steps_store`` call (each is one transaction)."""
    calls: list[list[int]] = []
    real = worker._steps_store

    def spy(episode_id, token, steps):
        calls.append([record["index"] for record, _ in steps])
        return real(episode_id, token, steps)

    monkeypatch.setattr(worker, "_steps_store", spy)
    return calls


def test_a_baselines_episode_stores_its_steps_together_when_it_ends(held, monkeypatch):
    """A baseline plays an episode in milliseconds and plays it the same way again: one
    transaction for all its steps and their frames instead of one a step."""
    from leaderboard.models import Frame

    episode, _ = held  # claimed: handed back for the worker's own claim
    Episode.objects.filter(pk=episode.pk).update(status=Episode.Status.PENDING, claim="")
    calls = _stores(monkeypatch)
    assert worker.episode_evaluate(episode_id=episode.pk) == "completed"
    episode.refresh_from_db()
    steps = list(Step.objects.filter(episode=episode).order_by("index"))
    assert episode.steps_taken == len(steps) > 1
    assert calls == [list(range(len(steps)))]
    # Every view the episode led to is registered, as a step stored alone registers its own.
    keys = {FrameSpec(episode.scene, tuple(s.hand_cell), 32).key for s in steps}
    assert Frame.objects.filter(pk__in=keys).count() == len(keys)


def test_a_baselines_episode_taken_over_meanwhile_stores_nothing(held, monkeypatch):
    episode, _ = held  # claimed: handed back for the worker's own claim
    Episode.objects.filter(pk=episode.pk).update(status=Episode.Status.PENDING, claim="")
    real = worker._steps_store

    def taken_over(episode_id, token, steps):
        Episode.objects.filter(pk=episode_id).update(claim="another-task")
        return real(episode_id, token, steps)

    monkeypatch.setattr(worker, "_steps_store", taken_over)
    assert worker.episode_evaluate(episode_id=episode.pk) == "lost"
    assert not Step.objects.filter(episode=episode).exists()


def test_a_models_episode_stores_each_step_as_it_comes(
    settings, monkeypatch, django_capture_on_commit_callbacks
):
    """Each answer is a paid call: a step is stored as soon as it is taken, one at a time."""
    from tests.evaluation.fake_providers import FakeOpenAI
    from tests.leaderboard.test_hosted_runs import _evaluate_one_episode

    calls = _stores(monkeypatch)
    entry = model_entry_upsert(name="Fake VL", kind="open-weights")
    with FakeOpenAI() as fake:
        run = _evaluate_one_episode(
            entry, fake, settings, monkeypatch, django_capture_on_commit_callbacks
        )
    taken = Episode.objects.get(run=run).steps_taken
    assert taken > 1 and calls == [[index] for index in range(taken)]
