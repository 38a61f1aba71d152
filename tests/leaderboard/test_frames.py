"""Frames in storage: local files by default, and a real S3-compatible server on loopback."""

import pytest
from django.core.files.storage import default_storage, storages
from django.test import override_settings

from leaderboard.frames.selectors import frame_exists, frame_path
from leaderboard.frames.services import (
    episode_frames_register,
    episode_frames_render,
    frame_store,
)
from leaderboard.models import Episode, Frame
from simulation.backends import renderer_version
from simulation.renderer import frame_key
from tests.leaderboard.factories import import_run, make_bundle

pytestmark = pytest.mark.django_db
SIZE = 48


@pytest.fixture
def episode(tmp_path):
    bundle = make_bundle(
        tmp_path / "b.jsonl",
        "oracle",
        scenes="tienkung-allegro-logo_0",
        levels=(0,),
        image_size=SIZE,
    )
    run = import_run(bundle, "Oracle", kind="baseline")
    return Episode.objects.get(run=run)


def test_an_episodes_frames_are_stored_as_png_and_webp_under_their_keys(
    episode, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    count = episode_frames_render(episode_id=episode.pk)
    assert count.rendered == len(episode.distances) and count.reused == 0
    key = frame_key(renderer_version(), episode.scene.scene_id, (0, 0, 0), SIZE)
    assert frame_exists(key)
    with default_storage.open(frame_path(key, "png")) as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with default_storage.open(frame_path(key, "webp")) as f:
        assert f.read(12)[8:12] == b"WEBP"
    with default_storage.open(frame_path(key, "thumb")) as f:
        assert f.read(12)[8:12] == b"WEBP"
    frame = Frame.objects.get(pk=key)
    assert frame.stored is not None and frame.cell == [0, 0, 0] and frame.size == SIZE
    assert frame.png_bytes == default_storage.size(frame_path(key, "png")) > 0
    assert frame.thumb_bytes > 0 and frame.webp_bytes > 0


def test_a_frame_that_exists_is_never_rendered_or_stored_twice(episode, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    episode_frames_render(episode_id=episode.pk)
    again = episode_frames_render(episode_id=episode.pk)
    assert again.rendered == 0 and again.reused == len(episode.distances)
    assert frame_store(key="ab" * 20, png=_png()) is True
    assert frame_store(key="ab" * 20, png=_png()) is False


def test_registering_is_idempotent_and_finds_frames_already_in_storage(episode, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    keys = episode_frames_register(episode)
    assert len(keys) == len(episode.distances)
    rows = Frame.objects.count()  # the gallery's too, registered with the scenes
    assert episode_frames_register(episode) == keys
    assert Frame.objects.count() == rows
    assert Frame.objects.filter(pk__in=keys).count() == len(set(keys))
    assert not Frame.objects.filter(stored__isnull=False).exists()
    # A model run stores the frames it is shown before they are registered.
    Frame.objects.all().delete()
    frame_store(key=keys[0], png=_png())
    assert episode_frames_register(episode) == keys
    assert Frame.objects.get(pk=keys[0]).stored is not None


def test_an_import_asks_the_store_nothing_and_a_frame_found_stored_later_is_not_rendered(
    settings, tmp_path, monkeypatch
):
    """An import registers its frames without a request to the store per new frame (a HEAD on
    S3, some 3,800 for a 264-episode bundle, inside the import's transaction); a frame whose
    files are in the store already is marked by the first render instead of made again."""
    from django.core.files.base import ContentFile

    from leaderboard.boards.entries import benchmark_current
    from leaderboard.frames import services
    from leaderboard.frames.services import frames_render, run_frames_register

    settings.MEDIA_ROOT = tmp_path / "media"
    bundle = make_bundle(tmp_path / "one.jsonl", scenes="female_1-mano_white-bread", levels=(0,))
    benchmark_current()  # the scenes, whose gallery frames are registered once
    asked: list[str] = []
    with monkeypatch.context() as patched:
        patched.setattr(services, "frame_exists", lambda key: asked.append(key) or False)
        run = import_run(bundle, "Imported")
    assert asked == []
    keys = run_frames_register(run=run, check_store=False)  # idempotent: the import's keys
    assert len(keys) > 1
    assert not Frame.objects.filter(pk__in=keys, stored__isnull=False).exists()
    for variant in ("png", "webp", "thumb"):  # stored meanwhile (an earlier row, another site)
        default_storage.save(frame_path(keys[0], variant), ContentFile(_png()))
    count = frames_render(keys[:1])
    assert count.rendered == 0
    assert Frame.objects.get(pk=keys[0]).stored is not None


def test_frames_of_another_renderer_build_are_skipped_not_remade(episode, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    keys = episode_frames_register(episode)
    Frame.objects.filter(pk=keys[0]).update(renderer="v2-mujoco-0.0-scene0")
    from leaderboard.frames.services import frames_render

    count = frames_render(keys)
    assert count.rendered == len(set(keys)) - 1
    assert not frame_exists(keys[0])


def _png():
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def test_frames_land_in_an_s3_bucket_under_their_content_keys(episode, s3_server, monkeypatch):
    import boto3

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    client = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    client.create_bucket(Bucket="frames-test")
    s3 = {
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": "frames-test",
                "endpoint_url": s3_server,
                "region_name": "us-east-1",
                "file_overwrite": False,
                "default_acl": None,
            },
        },
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    with override_settings(STORAGES=s3):
        storages._storages.clear()
        try:
            count = episode_frames_render(episode_id=episode.pk)
            keys = sorted(
                o["Key"] for o in client.list_objects_v2(Bucket="frames-test")["Contents"]
            )
            assert count.rendered == len(episode.distances)
            assert len(keys) == 3 * count.rendered
            assert all(k.startswith("frames/") and k.endswith((".png", ".webp")) for k in keys)
            stamps = {
                o["Key"]: o["LastModified"]
                for o in client.list_objects_v2(Bucket="frames-test")["Contents"]
            }
            again = episode_frames_render(episode_id=episode.pk)
            assert again.rendered == 0
            after = {
                o["Key"]: o["LastModified"]
                for o in client.list_objects_v2(Bucket="frames-test")["Contents"]
            }
            assert after == stamps  # nothing uploaded again
        finally:
            storages._storages.clear()
