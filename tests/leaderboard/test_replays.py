"""Replays, frames served by content key, episode lists, the scene gallery and behaviour."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.core.files.storage import storages
from django.test import override_settings

from evaluation.confusion import CONFUSED_THRESHOLD
from leaderboard.frames.services import (
    episode_frames_register,
    frames_render,
    run_eager_frame_keys,
)
from leaderboard.models import Episode, Frame, Run, Step
from simulation.backends import renderer_version
from simulation.renderer import frame_key
from tests.leaderboard.factories import board_run, import_run, make_bundle

pytestmark = pytest.mark.django_db
SIZE = 32
SCENE = "tienkung-allegro-logo_0"


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def small_run(tmp_path):
    """A random agent's run of two scenes at two levels, with 32-pixel frames."""
    bundle = make_bundle(
        tmp_path / "small.jsonl",
        "random",
        scenes=f"{SCENE},male_0-mano_white-splash",
        levels=(0, 3),
        image_size=SIZE,
    )
    return import_run(bundle, "Random small", kind="baseline")


def _episode(run: Run, scene: str = SCENE, level: int = 0) -> Episode:
    return Episode.objects.select_related("scene", "run").get(
        run=run, scene__scene_id=scene, level=level
    )


def _data(content: str) -> dict:
    found = re.search(r'<script id="replay-data" type="application/json">(.*?)</script>', content)
    assert found, "the replay's data is missing"
    return json.loads(found.group(1))


# Frames.


def test_only_registered_frames_are_served_and_a_missing_one_is_rendered_on_request(
    client, small_run
):
    assert client.get(f"/frames/{'ab' * 20}.webp").status_code == 404
    assert client.get("/frames/not-a-key.webp").status_code == 404
    episode = _episode(small_run)
    keys = episode_frames_register(episode)
    assert not Frame.objects.filter(pk=keys[0], stored__isnull=False).exists()
    response = client.get(f"/frames/{keys[0]}.webp")  # never rendered: rendered now
    assert response.status_code == 200 and response["Content-Type"] == "image/webp"
    body = b"".join(response.streaming_content)
    assert body[8:12] == b"WEBP"
    assert response["Cache-Control"] == "public, max-age=31536000, immutable"
    assert response["ETag"] == f'"{keys[0]}.webp"'
    assert Frame.objects.get(pk=keys[0]).stored is not None
    again = client.get(f"/frames/{keys[0]}.webp", HTTP_IF_NONE_MATCH=f'"{keys[0]}.webp"')
    assert again.status_code == 304
    png = client.get(f"/frames/{keys[0]}.png")
    assert b"".join(png.streaming_content)[:8] == b"\x89PNG\r\n\x1a\n"
    assert png["Content-Type"] == "image/png"
    thumb = client.get(f"/frames/{keys[0]}.thumb.webp")
    assert thumb.status_code == 200 and thumb["ETag"] == f'"{keys[0]}.thumb"'


def test_a_frame_of_another_renderer_build_is_not_remade(client, small_run):
    keys = episode_frames_register(_episode(small_run))
    Frame.objects.filter(pk=keys[0]).update(renderer="v2-mujoco-0.0-scene0")
    assert client.get(f"/frames/{keys[0]}.webp").status_code == 404
    assert not Frame.objects.filter(pk=keys[0], stored__isnull=False).exists()


def test_with_s3_a_frame_is_a_redirect_to_a_signed_url(client, small_run, s3_server, monkeypatch):
    import boto3

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1").create_bucket(
        Bucket="frames-serve"
    )
    s3 = {
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": "frames-serve",
                "endpoint_url": s3_server,
                "region_name": "us-east-1",
                "querystring_auth": True,
                "default_acl": None,
            },
        },
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    with override_settings(STORAGES=s3, S3_BUCKET="frames-serve"):
        storages._storages.clear()
        try:
            keys = episode_frames_register(_episode(small_run))
            response = client.get(f"/frames/{keys[0]}.png")
            assert response.status_code == 302
            location = response["Location"]
            assert location.startswith(s3_server) and "Signature" in location
            assert response["Cache-Control"] == "private, max-age=300"
            import urllib.request

            with urllib.request.urlopen(location) as fetched:  # the signed URL works
                assert fetched.read(8) == b"\x89PNG\r\n\x1a\n"
        finally:
            storages._storages.clear()


def test_a_finished_run_renders_only_its_start_and_final_views_eagerly(small_run):
    keys = run_eager_frame_keys(run=small_run)
    finals = {
        tuple(Step.objects.filter(episode=e).order_by("-index").first().hand_cell)
        for e in small_run.episodes.filter(scene__scene_id=SCENE)
    }
    expected_for_scene = {frame_key(renderer_version(), SCENE, (0, 0, 0), SIZE)} | {
        frame_key(renderer_version(), SCENE, cell, SIZE) for cell in finals
    }
    assert expected_for_scene <= set(keys)
    all_views = {
        k
        for e in small_run.episodes.select_related("scene", "run")
        for k in episode_frames_register(e)
    }
    assert set(keys) < all_views  # fewer than every view
    count = frames_render(keys)
    assert count.rendered == len(set(keys))


# The replay page.


def test_the_replay_shows_each_view_and_what_was_answered(client, small_run):
    episode = _episode(small_run)
    step = Step.objects.get(episode=episode, index=0)
    step.response = "<script>alert('x')</script> I choose option 5"
    step.save()
    response = client.get(f"/episodes/{episode.pk}/")
    assert response.status_code == 200
    content = response.content.decode()
    assert "<script>alert('x')</script>" not in content  # escaped in the page and in its data
    assert "&lt;script&gt;alert(" in content
    data = _data(content)
    assert len(data["views"]) == episode.steps_taken + 1
    assert data["views"][0]["step"]["response"].startswith("<script>")
    assert [v["distance"] for v in data["views"]] == episode.distances
    assert data["views"][-1]["last"] and "step" not in data["views"][-1]
    assert data["views"][0]["frame"]["webp"].startswith("/frames/")
    # Every view's frame is registered, so the viewer may ask for each.
    keys = [v["key"] for v in data["views"]]
    assert Frame.objects.filter(pk__in=keys).count() == len(set(keys))
    assert "does not look at images" in content


def test_the_step_in_the_address_opens_that_view_and_bad_steps_are_refused(client, small_run):
    episode = _episode(small_run)
    last = episode.steps_taken
    ok = client.get(f"/episodes/{episode.pk}/?step={last}")
    assert ok.status_code == 200 and "After the last step" in ok.content.decode()
    for bad in ("-1", str(last + 1), "two"):
        response = client.get(f"/episodes/{episode.pk}/?step={bad}")
        assert response.status_code == 400, bad
        assert "step" in response.content.decode()
    assert client.get("/episodes/999999/").status_code == 404


def test_a_private_runs_replay_is_its_owners_only(client, small_run, alice, bob):
    Run.objects.filter(pk=small_run.pk).update(visibility=Run.Visibility.PRIVATE, owner=alice)
    episode = _episode(small_run)
    assert client.get(f"/episodes/{episode.pk}/").status_code == 404
    client.force_login(bob)
    assert client.get(f"/episodes/{episode.pk}/").status_code == 404
    assert client.get(f"/episodes/{episode.pk}/prompt.txt").status_code == 404
    client.force_login(alice)
    assert client.get(f"/episodes/{episode.pk}/").status_code == 200


def test_the_prompt_of_a_step_is_the_levels_text_with_the_moves_so_far(client, small_run):
    episode = _episode(small_run, level=3)
    first = client.get(f"/episodes/{episode.pk}/prompt.txt?step=0")
    assert first.status_code == 200 and first["Content-Type"].startswith("text/plain")
    text = first.content.decode()
    assert "=== system ===" in text and "[image current view" in text
    assert "mirror" not in text.split("=== user ===")[1].lower()  # level 3 never says it
    answered = Step.objects.filter(episode=episode, option__isnull=False).order_by("index")
    if answered.count() >= 2:
        later = client.get(f"/episodes/{episode.pk}/prompt.txt?step={answered[1].index}")
        assert "previous view" in later.content.decode()
    bad = client.get(f"/episodes/{episode.pk}/prompt.txt?step=500")
    assert bad.status_code == 400 and b"step:" in bad.content


def test_the_prompt_of_a_retired_versions_episode_is_not_shown_as_todays(client, small_run):
    from leaderboard.models import BenchmarkVersion, Run

    episode = _episode(small_run, level=3)
    v2, _ = BenchmarkVersion.objects.get_or_create(
        name="v2", defaults={"scene_set": "v2", "prompt_version": "v2", "dynamics_version": "v1"}
    )
    Run.objects.filter(pk=episode.run_id).update(benchmark=v2)
    text = client.get(f"/episodes/{episode.pk}/prompt.txt?step=0").content.decode()
    assert "played with the v2 prompts" in text and "git show 8e0d756:evaluation/prompts.py" in text
    assert "=== user ===" not in text and "Choice: [Option Number]" not in text


# Episode lists.


def test_a_runs_episodes_are_cards_with_thumbnails_and_filters(client, small_run):
    page = client.get(f"/runs/{small_run.pk}/").content.decode()
    assert page.count('class="episode-card ') == 4
    # Not stored yet: a placeholder naming the frame, which the page asks for once loaded.
    thumbs = re.findall(r'data-frame="(/frames/[0-9a-f]{40}\.thumb\.webp)"', page)
    assert len(thumbs) == 4 and page.count('src="/static/img/frame-pending') == 4
    assert client.get(thumbs[0]).status_code == 200  # registered, so rendered on request
    # Stored: the card's image is the frame itself.
    again = client.get(f"/runs/{small_run.pk}/").content.decode()
    assert f'<img src="{thumbs[0]}"' in again and f'data-frame="{thumbs[0]}"' not in again
    assert again.count("data-frame=") == 3
    level3 = client.get(f"/runs/{small_run.pk}/?level=3&track=human").content.decode()
    assert level3.count('class="episode-card ') == 1
    scene = client.get(f"/runs/{small_run.pk}/?scene={SCENE}").content.decode()
    assert scene.count('class="episode-card ') == 2
    bad = client.get(f"/runs/{small_run.pk}/?scene=nowhere&level=9")
    assert bad.status_code == 400
    text = bad.content.decode()
    assert "scene" in text and "level" in text and "nowhere" in text


def test_each_cell_of_a_model_page_links_to_its_episodes(client, small_run):
    page = client.get(f"/models/{small_run.model_entry.slug}/").content.decode()
    assert f'href="/runs/{small_run.pk}/?level=0&amp;track=human#episodes"' in page
    assert f'href="/runs/{small_run.pk}/?level=3&amp;track=robot#episodes"' in page


# Behaviour.


def test_the_mirror_confused_agent_is_flagged_and_the_oracle_never(client, bundles):
    confused = import_run(bundles["mirror-confused"], "Confused", kind="baseline")
    oracle = import_run(bundles["oracle"], "Oracle", kind="baseline")
    assert confused.episodes.filter(mirror_confused=True).count() > 200
    assert not oracle.episodes.filter(mirror_confused=True).exists()
    assert set(oracle.episodes.values_list("confusion_rate", flat=True)) <= {0.0, None}
    confused.refresh_from_db()
    overall = confused.behaviour["overall"]["overall"]
    assert overall["confusion_rate"] >= CONFUSED_THRESHOLD
    rows = list(
        csv.DictReader(io.StringIO(client.get(f"/runs/{oracle.pk}/behaviour.csv").content.decode()))
    )
    assert len(rows) == 15 and rows[-1]["level"] == "overall"
    assert {r["confusion_rate"] for r in rows} == {"0.000"}
    page = client.get(f"/runs/{confused.pk}/?outcome=confused").content.decode()
    assert "mirror-confused" in page and page.count('class="episode-card ') == 48
    api = client.get(f"/api/episodes/?run={confused.pk}").json()["results"][0]
    assert api["mirror_confused"] is True and api["replay_url"].startswith("/episodes/")
    detail = client.get(f"/api/runs/{confused.pk}/").json()
    assert detail["behaviour"]["overall"]["overall"]["confusion_rate"] >= CONFUSED_THRESHOLD


def test_the_episode_api_lists_a_frame_per_view(client, small_run):
    episode = _episode(small_run)
    data = client.get(f"/api/episodes/{episode.pk}/").json()
    assert len(data["frames"]) == episode.steps_taken + 1
    assert data["frames"][0]["view"] == 0 and data["frames"][0]["png"].endswith(".png")
    assert client.get(data["frames"][-1]["webp"]).status_code == 200


# The gallery.


def test_the_gallery_lists_every_scene_and_a_scene_page_has_each_conditions_start(
    client, paper_scenes
):
    page = client.get("/scenes/").content.decode()
    assert page.count('class="episode-card"') == 66
    assert "Human track" in page and "Robot track" in page
    scene = client.get(f"/scenes/{SCENE}/").content.decode()
    urls = re.findall(r'<img src="(/frames/[0-9a-f]{40}\.webp)"', scene)
    # Start, goal, and the start under each control: no-mirror, mark-unseen, moved-mark.
    assert len(urls) == 5 and len(set(urls)) == 5
    assert "No mirror" in scene and "Goal" in scene
    assert "Mark unseen" in scene and "Moved mark" in scene
    assert Frame.objects.filter(mirror=False).count() == 66
    for condition in ("mark-unseen", "moved-mark"):
        assert Frame.objects.filter(condition=condition, cell=[0, 0, 0]).count() == 66
    assert client.get("/scenes/no-such-scene/").status_code == 404
    assert client.get("/scenes/?version=v1").status_code == 400
    # The header and the About page lead to it.
    about = client.get("/about/").content.decode()
    assert about.count('href="/scenes/"') >= 2


@pytest.fixture
def paper_scenes(db):
    from leaderboard.runs.imports import reference_results_load

    reference_results_load()


def test_each_cell_of_a_leaderboard_row_with_episodes_links_to_them(client, paper_scenes, bundles):
    run = board_run(bundles["random"], "Evaluated VLM", kind="open-weights")
    overall = client.get("/").content.decode()
    assert f'href="/runs/{run.pk}/?track=human#episodes"' in overall
    assert f'href="/runs/{run.pk}/#episodes"' in overall  # the Overall column
    level = client.get("/levels/2/").content.decode()
    assert f'href="/runs/{run.pk}/?level=2&amp;track=robot#episodes"' in level
    # The paper's rows have no episodes to link to.
    assert level.count('class="cell-link"') == 15


def test_a_model_page_shows_each_runs_behaviour(client, bundles):
    run = import_run(bundles["mirror-confused"], "Confused", kind="baseline")
    page = client.get(f"/models/{run.model_entry.slug}/").content.decode()
    assert "Mirror-self confusion" in page and f"/runs/{run.pk}/behaviour.csv" in page
    overall = run.behaviour["overall"]["overall"]
    assert f"{overall['confusion_rate'] * 100:.0f}%" in page
    assert f"{overall['mirror_confused_episodes']} of 264" in page


# Steps answered from the response cache.


def _with_cached_steps(path, cached_indices):
    """Give every step of the bundle at ``path`` tokens and a latency, and mark the steps at
    ``cached_indices`` of each episode as answered from the response cache."""
    header, *episodes = (json.loads(line) for line in path.read_text().splitlines())
    for episode in episodes:
        for step in episode["steps"]:
            step.update(
                input_tokens=1000,
                output_tokens=50,
                latency_s=0.5,
                cached=step["index"] in cached_indices,
            )
    path.write_text("".join(json.dumps(record) + "\n" for record in [header, *episodes]))
    return path


@pytest.fixture
def cached_run(tmp_path):
    """One episode whose steps 0 and 2 came from the response cache."""
    bundle = make_bundle(tmp_path / "cached.jsonl", "random", scenes=SCENE, levels=(0,))
    return import_run(_with_cached_steps(bundle, {0, 2}), "Cached VLM")


def test_cached_steps_are_marked_in_the_replay_and_the_api(client, cached_run):
    episode = _episode(cached_run)
    assert episode.steps_taken > 3
    cached = Step.objects.filter(episode=episode, cached=True)
    assert sorted(cached.values_list("index", flat=True)) == [0, 2]
    content = client.get(f"/episodes/{episode.pk}/?step=2").content.decode()
    assert f"2 of {episode.steps_taken} steps came from the response cache (" in content
    facts = re.search(r'<dd data-field="cached">(.*?)</dd>', content)
    assert facts and 'class="badge cached">from cache</span>' in facts.group(1)
    data = _data(content)
    steps = [v["step"] for v in data["views"] if "step" in v]
    assert [s["number"] - 1 for s in steps if s["cached"]] == [0, 2]
    other = client.get(f"/episodes/{episode.pk}/?step=1").content.decode()
    assert re.search(r'<dd data-field="cached">no: asked for this run</dd>', other)

    api = client.get(f"/api/episodes/{episode.pk}/").json()
    assert [s["index"] for s in api["steps"] if s["cached"]] == [0, 2]
    # The run's bundle gives them back as they came.
    lines = client.get(f"/runs/{cached_run.pk}/bundle.jsonl").content.decode().splitlines()
    exported = json.loads(lines[1])["steps"]
    assert [s["index"] for s in exported if s["cached"]] == [0, 2]


def test_a_runs_tokens_leave_out_the_cached_steps(client, cached_run):
    episode = _episode(cached_run)
    progress = client.get(f"/runs/{cached_run.pk}/progress.json").json()
    assert progress["steps"] == episode.steps_taken and progress["cached_steps"] == 2
    assert progress["input_tokens"] == 1000 * (episode.steps_taken - 2)
    assert progress["output_tokens"] == 50 * (episode.steps_taken - 2)
    page = client.get(f"/runs/{cached_run.pk}/").content.decode()
    spent = f"{1000 * (episode.steps_taken - 2):,}"  # thousands separated, as on the page
    assert f'<span data-field="input_tokens">{spent}</span>' in page


def test_a_replay_without_cached_steps_has_no_cache_row(client, small_run):
    content = client.get(f"/episodes/{_episode(small_run).pk}/").content.decode()
    assert 'data-field="cached"' not in content and "response cache" not in content
