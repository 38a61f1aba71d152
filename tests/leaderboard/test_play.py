"""Episodes played in the browser: the service's checks, storage, the Human set, the views."""

from __future__ import annotations

import random
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from evaluation.agents import oracle_options
from evaluation.bundle import Bundle
from evaluation.prompts import BENIGN_NOTE, CHOICE_LINE
from evaluation.verify import verify_bundle
from leaderboard.errors import FieldError
from leaderboard.models import Episode, Frame, ModelEntry, Play, Run, Step, Submission
from leaderboard.play.selectors import human_set_bundle, quick_scene_ids, subset_episodes
from leaderboard.play.services import PLAY_TTL, play_answer, play_start, plays_expired_delete
from leaderboard.play.state import Player, PlayNotFound, PlayRefused
from leaderboard.submissions.services import submission_publish, submission_review
from simulation.catalogue import get_scene
from tests.leaderboard.factories import board_run, make_bundle

pytestmark = pytest.mark.django_db
SCENE = "male_1-mano_white-splash"


@pytest.fixture(autouse=True)
def _small_frames(settings, tmp_path):
    settings.MIRRORBENCH_PLAY_IMAGE_SIZE = 32
    settings.MEDIA_ROOT = tmp_path / "media"


def optimal_options(scene_id: str) -> list[int]:
    """Return the shortest moves to the mark (the oracle's), x first, never colliding."""
    return oracle_options(get_scene(scene_id))


def play_through(player: Player, scene_id: str, level: int, options: list[int] | None = None):
    state = play_start(player=player, scene_id=scene_id, level=level)
    for option in options or optimal_options(scene_id):
        state = play_answer(player=player, ref=state.ref, index=state.index, option=option)
    return state


def start(client, scene: str = SCENE, level: int | str = 0):
    return client.post("/play/start/", {"scene": scene, "level": level})


def answer(client, view: dict, option: int, index: int | None = None):
    return client.post(
        view["answer_url"], {"index": view["index"] if index is None else index, "option": option}
    )


# The service


def test_the_optimal_moves_reach_the_mark_in_d0_minus_one_steps():
    options = optimal_options(SCENE)
    assert len(options) == get_scene(SCENE).d0_steps - 1


def test_an_anonymous_visitor_plays_to_the_mark_and_nothing_is_stored(client):
    response = start(client)
    assert response.status_code == 201, response.content
    view = response.json()
    assert (view["index"], view["stored"], view["previous"]) == (0, False, None)
    assert view["history"] == "Previous moves: none yet, this is your first move."
    assert view["instructions"].endswith(BENIGN_NOTE) and CHOICE_LINE in view["instructions"]
    for option in optimal_options(SCENE):
        response = answer(client, view, option)
        assert response.status_code == 200, response.content
        view = response.json()
    assert view["done"] and view["result"]["success"]
    assert view["result"]["metrics"]["avg"] == 1.0
    assert view["result"]["replay"] is None
    assert (
        "1. Option 6, move backward (towards the camera): executed without collision."
        in (view["history"])
    )
    assert (Run.objects.count(), Episode.objects.count(), Step.objects.count()) == (0, 0, 0)
    assert ModelEntry.objects.count() == 0


def test_an_answer_for_a_step_that_is_not_the_current_one_is_refused(client):
    view = start(client).json()
    ahead = answer(client, view, 6, index=1)
    assert ahead.status_code == 409
    assert (
        ahead.json()["error"] == "step 1 is not the current step, 0: answer the current step first"
    )
    assert answer(client, view, 6).status_code == 200
    again = answer(client, view, 5)  # step 0 once more, as a second tab would
    assert again.status_code == 409
    assert "step 0 is not the current step, 1: it was answered already" in again.json()["error"]


def test_an_answer_after_the_end_is_refused(client):
    view = start(client).json()
    for option in optimal_options(SCENE):
        view = answer(client, view, option).json()
    late = answer(client, view, 1)
    assert late.status_code == 409
    assert late.json()["error"].startswith("this episode has ended after 9 steps")


def test_the_budget_ends_an_episode_that_never_reaches_the_mark(alice):
    player = Player(alice)
    state = play_through(player, SCENE, 3, [1] * get_scene(SCENE).max_steps)
    assert state.done and not state.success and state.index == 20
    episode = Episode.objects.get()
    assert (episode.status, episode.steps_taken, episode.success) == ("completed", 20, False)
    with pytest.raises(PlayRefused, match="has ended"):
        play_answer(player=player, ref=state.ref, index=20, option=1)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"index": 0, "option": 7}, "option"),
        ({"index": 0, "option": 0}, "option"),
        ({"index": 0, "option": "up"}, "option"),
        ({"index": -1, "option": 1}, "index"),
        ({"option": 1}, "index"),
    ],
)
def test_a_bad_answer_is_a_400_naming_the_field(client, data, field):
    view = start(client).json()
    response = client.post(view["answer_url"], data)
    assert response.status_code == 400
    assert response.json()["field"] == field


@pytest.mark.parametrize(
    ("data", "field"), [({"scene": "nowhere", "level": 0}, "scene"), ({"level": 4}, "level")]
)
def test_a_bad_start_is_a_400_naming_the_field(client, data, field):
    response = client.post("/play/start/", data)
    assert response.status_code == 400
    assert response.json()["field"] == field
    assert Play.objects.count() == 0


def test_the_service_refuses_an_option_outside_one_to_six(alice):
    state = play_start(player=Player(alice), scene_id=SCENE, level=0)
    with pytest.raises(FieldError, match="option"):
        play_answer(player=Player(alice), ref=state.ref, index=0, option=7)


def test_someone_elses_episode_is_not_found(client, alice, bob):
    client.force_login(alice)
    stored = start(client).json()
    client.logout()
    anonymous = start(client).json()
    other = type(client)()
    other.force_login(bob)
    for view in (stored, anonymous):
        assert answer(other, view, 1).status_code == 404
        assert other.get(view["state_url"]).status_code == 404
    stranger = type(client)()  # anonymous, another session
    assert answer(stranger, anonymous, 1).status_code == 404
    assert stranger.get(anonymous["state_url"]).status_code == 404
    assert client.get("/play/e999999/").status_code == 404
    assert client.post("/play/e12/answer/", {"index": 0, "option": 1}).status_code == 404
    assert client.get("/play/x12/").status_code == 404  # not a reference at all
    with pytest.raises(PlayNotFound):
        play_answer(player=Player(bob), ref=stored["ref"], index=0, option=1)


def test_a_signed_in_players_episode_is_stored_in_their_human_run_and_verifies(client, alice, bob):
    client.force_login(alice)
    view = start(client).json()
    assert view["stored"] and view["ref"].startswith("e")
    for option in optimal_options(SCENE):
        view = answer(client, view, option).json()
    run = Run.objects.get()
    assert (run.owner, run.agent, run.visibility, run.source, run.status) == (
        alice,
        "human:alice",
        "private",
        "evaluated",
        "completed",
    )
    assert (run.model_entry.name, run.model_entry.kind, run.model_entry.owner) == (
        "Human (alice)",
        "human",
        alice,
    )
    episode = Episode.objects.get()
    assert (episode.status, episode.success, episode.avg, episode.steps_taken) == (
        "completed",
        True,
        1.0,
        9,
    )
    steps = list(episode.steps.order_by("index"))
    assert [s.response for s in steps[:2]] == ["Choice: [6]", "Choice: [6]"]
    assert all(s.latency_s is not None and s.frame_key for s in steps)
    records, missing = human_set_bundle(run=run, episode=episode)
    assert missing == []
    assert verify_bundle(Bundle(records[0], records[1:], list(range(2, len(records) + 1)))) == []
    # Every view it showed is a registered frame, so its replay can show it.
    assert Frame.objects.filter(pk__in=[s.frame_key for s in steps]).count() == len(
        {s.frame_key for s in steps}
    )
    assert run.scores.filter(table="0", track="human").get().avg == 1.0
    assert view["result"]["replay"] == f"/episodes/{episode.pk}/"
    assert client.get(view["result"]["replay"]).status_code == 200
    other = type(client)()
    other.force_login(bob)
    assert other.get(view["result"]["replay"]).status_code == 404


def test_an_unfinished_episode_is_resumed_not_restarted(alice):
    player = Player(alice)
    first = play_start(player=player, scene_id=SCENE, level=2)
    first = play_answer(player=player, ref=first.ref, index=0, option=6)
    again = play_start(player=player, scene_id=SCENE, level=2)
    assert (again.ref, again.index, again.options) == (first.ref, 1, [6])
    assert len(again.cells) == 2 and again.keys[-1] != again.keys[0]


def test_a_scene_and_level_played_before_is_practice_and_not_stored(alice):
    player = Player(alice)
    play_through(player, SCENE, 1)
    practice = play_through(player, SCENE, 1, [1, 1])
    assert practice.practice and not practice.stored and practice.ref.startswith("p")
    assert Episode.objects.count() == 1 and Step.objects.count() == 9


def test_a_random_pick_chooses_an_episode_not_played_yet(alice):
    player = Player(alice)
    play_through(player, SCENE, 0)
    for seed in range(5):
        state = play_start(player=player, scene_id=SCENE, rng=random.Random(seed))
        assert state.level != 0
        play_through(player, SCENE, state.level, [1] * get_scene(SCENE).max_steps)
    # Every level of the scene is played: a random pick is practice now.
    assert play_start(player=player, scene_id=SCENE, rng=random.Random(0)).practice


def test_unstored_episodes_expire(client):
    start(client)
    assert Play.objects.count() == 1
    assert plays_expired_delete(now=timezone.now() + PLAY_TTL - timedelta(minutes=1)) == 0
    assert plays_expired_delete(now=timezone.now() + PLAY_TTL + timedelta(minutes=1)) == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("signed_in", [True, False])
def test_two_answers_for_one_step_at_once_exactly_one_wins(django_user_model, signed_in):
    user = django_user_model.objects.create_user("tabs") if signed_in else None
    player = Player(user) if user else Player.anonymous("session-key")
    state = play_start(player=player, scene_id=SCENE, level=0)
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def tab(option: int) -> None:
        barrier.wait()
        try:
            play_answer(player=player, ref=state.ref, index=0, option=option)
            outcomes.append("taken")
        except PlayRefused:
            outcomes.append("refused")
        finally:
            connection.close()

    tabs = [threading.Thread(target=tab, args=(option,)) for option in (5, 6)]
    for thread in tabs:
        thread.start()
    for thread in tabs:
        thread.join()
    assert sorted(outcomes) == ["refused", "taken"]
    if signed_in:
        assert Step.objects.count() == 1 and Episode.objects.get().steps_taken == 1
    else:
        assert len(Play.objects.get().options) == 1


# The Human set


def test_the_quick_track_is_one_scene_of_each_body_at_each_level():
    scenes = quick_scene_ids()
    assert len(scenes) == 7 and len({get_scene(s).body.id for s in scenes}) == 7
    assert len(subset_episodes("quick")) == 28 and len(subset_episodes("full")) == 264


def test_the_quick_human_set_submits_as_a_partial_human_entry(client, alice, moderator):
    player = Player(alice)
    for scene_id, level in subset_episodes("quick")[:-1]:
        play_through(player, scene_id, level)
    client.force_login(alice)
    incomplete = client.post("/play/submit/", {"subset": "quick"})
    assert incomplete.status_code == 400
    assert "1 episodes of this set are not played to the end yet" in incomplete.content.decode()
    play_through(player, *subset_episodes("quick")[-1])
    response = client.post("/play/submit/", {"subset": "quick"})
    submission = Submission.objects.get()
    assert response.status_code == 302 and response.url == f"/submissions/{submission.pk}/"
    assert (submission.kind, submission.episodes, submission.partial) == ("human", 28, True)
    run = submission.run
    assert run is not None
    assert (run.model_entry.name, run.agent) == ("Human (alice)", "human:alice")
    full = client.post("/play/submit/", {"subset": "full"})
    assert full.status_code == 400 and "236 episodes of this set" in full.content.decode()
    submission_publish(submission=submission, user=alice)
    submission_review(
        submission=submission, moderator=moderator, decision="approve", allow_partial=True
    )
    run.refresh_from_db()
    assert run.listed and run.visibility == "public"
    # The play run itself stays private and unlisted.
    assert not Run.objects.filter(agent="human:alice", source="evaluated", listed=True).exists()


def test_after_an_episode_the_player_sees_how_the_models_did(client, bundles, tmp_path):
    # Without their steps: the comparison reads the listed runs' episodes alone.
    board_run(bundles["oracle"], "Oracle", kind="baseline")
    board_run(bundles["random"], "Random", kind="baseline")
    partial = make_bundle(tmp_path / "p.jsonl", "oracle", scenes=SCENE, levels=(0,))
    board_run(partial, "Unlisted", kind="baseline")  # partial: not on the board
    view = start(client).json()
    for option in optimal_options(SCENE):
        view = answer(client, view, option).json()
    models = view["result"]["models"]
    assert [m["model"] for m in models] == ["Oracle", "Random"]
    assert models[0]["avg"] == 1.0 and models[0]["success"]
    assert models[0]["replay"].startswith("/episodes/")


# The page and its limits


def test_the_play_page_offers_levels_scenes_and_the_six_keys(client):
    page = client.get("/play/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-option="6"' in html and "<kbd>1</kbd>" in html
    assert f'<option value="{SCENE}">' in html
    assert "nothing is stored" in html
    assert 'src="/static/js/play.js"' in html and "<script>" not in html


def test_a_signed_in_player_sees_their_progress_and_unfinished_episodes(client, alice):
    player = Player(alice)
    play_through(player, SCENE, 0)
    play_start(player=player, scene_id=SCENE, level=1)
    client.force_login(alice)
    html = client.get("/play/").content.decode()
    assert "You have finished 1 of 264 episodes of the full set and 1 of 28" in html
    assert f"<code>{SCENE}</code> L1" in html
    assert "your Human run" in html


def test_play_posts_are_throttled(client, monkeypatch):
    from rest_framework.throttling import SimpleRateThrottle

    rates = {**SimpleRateThrottle.THROTTLE_RATES, "play": "2/hour"}
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", rates)
    view = start(client).json()
    assert answer(client, view, 6).status_code == 200
    throttled = answer(client, {**view, "index": 1}, 6)
    assert throttled.status_code == 429 and throttled["Retry-After"]


def test_the_answer_endpoint_takes_only_posts(client):
    view = start(client).json()
    assert client.get(view["answer_url"]).status_code == 405
    assert client.get("/play/start/").status_code == 405


def test_while_a_player_reads_a_step_the_next_views_are_made_and_the_next_frame_costs_no_render(
    client, django_capture_on_commit_callbacks
):
    import time

    from leaderboard.frames.services import frame_render_now, render_pool
    from simulation.backends import renderer_version
    from simulation.dynamics import Action, EpisodeState, apply_action
    from simulation.renderer import frame_key

    scene = get_scene(SCENE)
    with django_capture_on_commit_callbacks(execute=True):
        view = start(client).json()
    here = EpisodeState(scene).cell
    nexts = {apply_action(scene, here, action).cell for action in Action} - {here}
    keys = {frame_key(renderer_version(), SCENE, cell, 32) for cell in nexts}
    # Registered with the start (a POST), and rendered in the background.
    assert Frame.objects.filter(pk__in=keys, stored__isnull=True).count() == len(keys) > 1
    pool = render_pool()
    deadline = time.monotonic() + 60
    while not all(pool.cached(key) is not None for key in keys):
        assert time.monotonic() < deadline, "the next views were not made"
        time.sleep(0.05)
    option = optimal_options(SCENE)[0]
    with django_capture_on_commit_callbacks(execute=True):
        moved = answer(client, view, option).json()
    shown = frame_key(renderer_version(), SCENE, apply_action(scene, here, Action(option)).cell, 32)
    assert shown in keys and moved["index"] == 1
    # Made while the player read the start: the frame request (frame_render_now) finds it in
    # memory and stores it, without a render (the answer's own prefetch runs meanwhile).
    assert pool.cached(shown) is not None
    assert frame_render_now(shown)
    assert Frame.objects.get(pk=shown).stored is not None
