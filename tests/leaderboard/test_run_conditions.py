"""Runs of control conditions on the site: stored with their condition, never ranked, played and
drawn under it (issue 36)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User

from evaluation.bundle import read_bundle
from evaluation.config import RunConfig
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.boards.selectors import sanity_check
from leaderboard.frames.services import episode_frames_register
from leaderboard.models import Episode, Frame, ModelEntry, Run, Step
from leaderboard.runs.imports import run_import_bundle
from leaderboard.runs.services import baseline_control_runs_ensure, run_create, run_start
from leaderboard.submissions.services import submission_create
from leaderboard.worker import episode_evaluate
from simulation.renderer import frame_key
from tests.leaderboard.factories import make_bundle

pytestmark = pytest.mark.django_db

SCENE = "male_1-mano_brown-leaf_0"


@pytest.fixture(scope="module")
def chest_bundles(tmp_path_factory) -> dict[str, Path]:
    """The chest baseline's full bundles under main and under moved-mark (no images: fast)."""
    folder = tmp_path_factory.mktemp("conditions")
    return {
        condition: make_bundle(folder / f"{condition}.jsonl", "chest", condition=condition)
        for condition in ("main", "moved-mark")
    }


def _import(path: Path) -> Run:
    entry = model_entry_upsert(name="Chest policy", kind=ModelEntry.Kind.OPEN_WEIGHTS)
    return run_import_bundle(model_entry=entry, bundle=read_bundle(path)).run


def test_a_control_bundle_keeps_its_condition_and_is_never_ranked(chest_bundles):
    main = _import(chest_bundles["main"])
    control = _import(chest_bundles["moved-mark"])
    main.refresh_from_db()
    control.refresh_from_db()
    assert (main.condition, main.listed) == ("main", True)
    # A complete public control run is not listed, and does not unlist its model's main run.
    assert (control.condition, control.listed) == ("moved-mark", False)
    assert list(Run.objects.on_board()) == [main]
    # Even listed by hand, the boards' rule leaves it out.
    Run.objects.filter(pk=control.pk).update(listed=True)
    assert list(Run.objects.on_board()) == [main]
    assert control.scores.exists()
    assert not Episode.objects.filter(run=control, success=True).exists()


def test_a_control_runs_frames_are_registered_under_its_condition(chest_bundles):
    control = _import(chest_bundles["moved-mark"])
    episode = Episode.objects.filter(run=control).select_related("scene", "run").first()
    assert episode is not None
    keys = episode_frames_register(episode)
    steps = Step.objects.filter(episode=episode).order_by("index")
    # The keys the bundle's steps name are the keys registered for the episode's views.
    assert [s.frame_key for s in steps] == keys[: len(steps)]
    assert set(Frame.objects.filter(pk__in=keys).values_list("condition", flat=True)) == {
        "moved-mark"
    }
    version = read_bundle(chest_bundles["moved-mark"]).header["renderer"]["version"]
    assert keys[0] == frame_key(
        version, episode.scene.scene_id, (0, 0, 0), 1024, condition="moved-mark"
    )
    assert keys[0] != frame_key(version, episode.scene.scene_id, (0, 0, 0), 1024)


def test_an_uploaded_control_bundle_passes_the_frame_key_check(chest_bundles, alice):
    submitted = submission_create(
        user=alice,
        chunks=[chest_bundles["moved-mark"].read_bytes()],
        data={"model_name": "Chest upload", "kind": ModelEntry.Kind.OPEN_WEIGHTS},
    )
    assert submitted.submission.run.condition == "moved-mark"


@pytest.fixture
def evaluator(client):
    user = User.objects.create_user("eve", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    client.force_login(user)
    return user


def _evaluate(client, **changes):
    body = {
        "provider": "openai",
        "model": "gpt-4o",
        "kind": "proprietary",
        "api_key": "sk-test",
        "levels": [0],
        "scenes": "robot",
        **changes,
    }
    return client.post("/api/evaluations/", body, content_type="application/json")


def test_a_hosted_run_takes_its_condition_from_the_api_and_the_form(
    client, evaluator, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        assert _evaluate(client, condition="no-mirror").status_code == 201
        assert _evaluate(client).status_code == 201
    control, main = Run.objects.order_by("-pk")[1], Run.objects.order_by("-pk")[0]
    assert (control.condition, control.config.condition) == ("no-mirror", "no-mirror")
    assert (main.condition, main.config.condition) == ("main", "main")
    assert client.get(f"/api/runs/{control.pk}/").json()["condition"] == "no-mirror"
    page = client.get("/evaluate/").content.decode()
    assert 'name="condition"' in page and "Moved mark" in page


def test_an_unknown_condition_is_a_400_naming_the_field(client, evaluator):
    response = _evaluate(client, condition="mirrorless")
    assert response.status_code == 400
    assert list(response.json()) == ["condition"]
    assert not Run.objects.exists()


@pytest.mark.parametrize(("condition", "reached"), [("main", True), ("moved-mark", False)])
def test_the_worker_plays_a_hosted_run_under_its_condition(condition, reached):
    entry = model_entry_upsert(name="Chest hosted", kind=ModelEntry.Kind.OPEN_WEIGHTS)
    config = RunConfig(agent="chest", scenes=SCENE, levels=(1,), condition=condition)
    run = run_create(model_entry=entry, config=config)
    (episode_id,) = run_start(run_id=run.pk)
    assert episode_evaluate(episode_id=episode_id) == "completed"
    episode = Episode.objects.get(pk=episode_id)
    assert episode.success is reached
    frames = Frame.objects.filter(scene=episode.scene, condition=condition)
    assert frames.exists()


def test_make_run_queues_each_baseline_under_every_condition_once(
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=False):
        created = baseline_control_runs_ensure()
    played = {(r.agent, r.condition) for r in created}
    controls = {"no-mirror", "mark-unseen", "moved-mark"}
    # random and oracle have their main runs from baseline_runs_ensure; the others get one.
    assert played == {
        *((agent, c) for agent in ("random", "oracle") for c in controls),
        *((agent, c) for agent in ("mirror-confused", "chest") for c in {"main", *controls}),
    }
    assert all(r.episodes_expected == 264 and r.config.condition == r.condition for r in created)
    with django_capture_on_commit_callbacks(execute=False):
        assert baseline_control_runs_ensure() == []
    # The shortcut baselines' main rows stay behind the boards' baselines switch.
    assert sanity_check(kind="baseline", slug="chest", agent="chest")
    assert sanity_check(kind="baseline", slug="mirror-confused", agent="mirror-confused")


def test_a_control_runs_page_says_it_is_a_control(client, chest_bundles):
    control = _import(chest_bundles["moved-mark"])
    page = client.get(f"/runs/{control.pk}/").content.decode()
    assert "A control run: played under <strong>moved mark</strong>" in page
    assert f'href="/runs/{control.pk}/process.csv"' in page
    main = _import(chest_bundles["main"])
    assert "A control run" not in client.get(f"/runs/{main.pk}/").content.decode()


def test_a_control_runs_episode_cards_show_its_own_final_views(client, chest_bundles):
    control = _import(chest_bundles["moved-mark"])
    registered = set(Frame.objects.filter(condition="moved-mark").values_list("key", flat=True))
    page = client.get(f"/runs/{control.pk}/").content.decode()
    shown = set(re.findall(r"/frames/([0-9a-f]{40})", page))
    # Every card's thumbnail is a registered frame of the run's condition.
    assert shown and shown <= registered
