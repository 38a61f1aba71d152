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
    client, evaluator, settings, django_capture_on_commit_callbacks
):
    settings.MIRRORBENCH_MAX_ACTIVE_RUNS = 3
    with django_capture_on_commit_callbacks(execute=False):
        assert _evaluate(client, condition="no-mirror").status_code == 201
        assert _evaluate(client).status_code == 201
    control, main = Run.objects.order_by("-pk")[1], Run.objects.order_by("-pk")[0]
    assert (control.condition, control.config.condition) == ("no-mirror", "no-mirror")
    assert (main.condition, main.config.condition) == ("main", "main")
    assert client.get(f"/api/runs/{control.pk}/").json()["condition"] == "no-mirror"
    page = client.get("/evaluate/").content.decode()
    assert 'name="conditions"' in page and "Moved mark" in page
    # A form from before several conditions sends one ``condition``: the same run.
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post("/evaluate/", _form(condition="mark-unseen"))
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert Run.objects.order_by("-pk")[0].condition == "mark-unseen"


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


def _form(**changes):
    data = {
        "provider": "openai",
        "model": "gpt-4o",
        "kind": "proprietary",
        "api_key": "sk-test",
        "levels": ["0"],
        "scenes": "robot",
        **changes,
    }
    return data


def test_the_form_starts_a_run_per_condition_chosen(
    client, evaluator, settings, django_capture_on_commit_callbacks
):
    settings.MIRRORBENCH_MAX_ACTIVE_RUNS = 3
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = client.post("/evaluate/", _form(conditions=["moved-mark", "main"]))
    main, moved = Run.objects.order_by("pk")
    assert (main.condition, moved.condition) == ("main", "moved-mark")
    assert len(queued) == 2
    # The main run's page follows, and says the other run was queued with it.
    assert response.status_code == 302 and response["Location"] == f"/runs/{main.pk}/"
    page = client.get(response["Location"]).content.decode()
    assert f"Run {main.pk} (main) is queued" in page
    assert f"run {moved.pk} (moved mark) is queued with it" in page


def test_one_bad_condition_on_the_form_changes_nothing(client, evaluator, settings):
    settings.MIRRORBENCH_MAX_ACTIVE_RUNS = 3
    response = client.post("/evaluate/", _form(conditions=["main", "mirrorless"]))
    assert response.status_code == 400
    page = response.content.decode()
    assert "mirrorless is not one of the available choices" in page
    assert re.search(r'<fieldset class="field choices has-error">\s*<legend>Conditions', page)
    assert not Run.objects.exists()


def test_a_run_that_cannot_start_takes_the_others_back(
    client, evaluator, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """All or nothing: the second condition's run fails after the first was written."""
    from leaderboard.errors import FieldError
    from leaderboard.runs import services

    settings.MIRRORBENCH_MAX_ACTIVE_RUNS = 3
    real = services.run_create

    def second_fails(**kwargs):
        if Run.objects.exists():  # the first run is written: fail as a refused endpoint does
            raise FieldError("base_url", "refused for this test")
        return real(**kwargs)

    monkeypatch.setattr(services, "run_create", second_fails)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = _evaluate(client, conditions=["main", "no-mirror"])
    assert response.status_code == 400 and list(response.json()) == ["base_url"]
    assert not Run.objects.exists() and not Episode.objects.exists()
    assert not ModelEntry.objects.filter(name="gpt-4o").exists()
    assert queued == []


def test_the_estimate_gives_each_conditions_cost_and_the_total(client, evaluator, settings):
    settings.MIRRORBENCH_PRICES = {"openai:gpt-4o": {"input_per_mtok": 2.5, "output_per_mtok": 10}}
    query = "/evaluate/estimate.json?provider=openai&model=gpt-4o&scenes=robot&levels=0"
    one = client.get(query).json()
    three = client.get(query + "&conditions=main&conditions=no-mirror&conditions=moved-mark").json()
    assert (one["runs"], three["runs"]) == (1, 3)
    assert [c["name"] for c in three["conditions"]] == ["main", "no-mirror", "moved-mark"]
    for key in ("episodes", "requests", "input_tokens", "output_tokens"):
        assert three[key] == 3 * one[key]
        assert all(c[key] == one[key] for c in three["conditions"])
    assert one["cost_usd"] > 0 and three["cost_usd"] == pytest.approx(3 * one["cost_usd"])
    # The form's estimate, for the conditions chosen: each one's row and the total.
    page = client.post(
        "/evaluate/", _form(model="gpt-4o", conditions=["main", "no-mirror"], estimate="1")
    ).content.decode()
    assert "What these 2 runs will cost" in page
    rows = re.findall(r'<tr><th scope="row">([^<]+)</th><td class="num">([\d,]+)</td>', page)
    assert rows == [("Main", str(one["episodes"])), ("No mirror", str(one["episodes"]))]
    assert f'<dd data-field="episodes">{2 * one["episodes"]}</dd>' in page


@pytest.mark.django_db(transaction=True)
def test_mirrorbench_submit_uploads_a_control_bundle_as_a_control_run(
    live_server, tmp_path, alice, capsys, settings, monkeypatch
):
    """End to end on a live server on loopback: `mirrorbench run --condition moved-mark`, then
    `mirrorbench submit`: the header's condition makes a control run, never listed."""
    from evaluation.cli import main
    from leaderboard.models import Submission
    from leaderboard.submissions.tokens import api_token_create

    monkeypatch.delenv("MIRRORBENCH_TOKEN", raising=False)
    settings.MEDIA_ROOT = tmp_path / "media"
    bundle = tmp_path / "moved.jsonl"
    argv = ["run", "--agent", "chest", "--scenes", "robot", "--levels", "1"]
    assert main([*argv, "--condition", "moved-mark", "--out", str(bundle)]) == 0
    assert read_bundle(bundle).header["condition"] == "moved-mark"
    key = api_token_create(user=alice, name="cli").key
    argv = ["submit", str(bundle), "--url", live_server.url, "--model", "Chest Upload"]
    assert main([*argv, "--kind", "open-weights", "--token", key]) == 0
    out = capsys.readouterr().out
    assert "verified: 18 episodes under the control condition moved-mark" in out
    assert "never ranked in the main tables" in out
    submission = Submission.objects.select_related("run").get()
    assert (submission.run.condition, submission.run.listed) == ("moved-mark", False)
    assert submission.run.metadata["condition"] == "moved-mark"  # the header, kept
    # The API and the submission's page say so too.
    from django.test import Client

    owner = Client()
    owner.force_login(alice)
    assert owner.get(f"/api/submissions/{submission.pk}/").json()["condition"] == "moved-mark"
    page = owner.get(f"/submissions/{submission.pk}/").content.decode()
    assert "Moved mark (<code>moved-mark</code>): a" in page
    assert "make this control run public" in page
