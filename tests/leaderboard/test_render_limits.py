"""What visitors can make the server render (issue 29, item 7).

New frames are counted per address, session and account (a stored frame costs nothing);
frames made for requests go through a bounded queue (503 and Retry-After when it is full);
stored frames have a disk budget, kept by evicting the least recently used frames that no
listed run and not the gallery shows; uploads use the image sizes the site serves, with frame
keys that agree with their header.
"""

from __future__ import annotations

import io
import json
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.test import Client
from django.utils import timezone
from PIL import Image

from evaluation.agents import oracle_options
from leaderboard.frames import services as frames_service
from leaderboard.frames.selectors import frame_exists, frame_path
from leaderboard.frames.services import (
    FrameSpec,
    frame_store,
    frames_evict,
    frames_kept_keys,
    frames_register,
    frames_stored_bytes,
    gallery_frames_register,
)
from leaderboard.models import Frame, Run, Scene, Submission
from simulation.catalogue import get_scene
from simulation.renderer import DEFAULT_SIZE, frame_key
from tests.leaderboard.factories import import_run, make_bundle

pytestmark = pytest.mark.django_db
SCENE = "male_1-mano_white-splash"


def _png(side: int = 8, shade: int = 0) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (side, side), (shade, 0, 0)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(autouse=True)
def _setup(settings, tmp_path):
    settings.MIRRORBENCH_PLAY_IMAGE_SIZE = 32
    settings.MEDIA_ROOT = tmp_path / "media"
    from django.core.cache import cache

    cache.clear()  # the budgets' counters


@pytest.fixture(autouse=True)
def _fresh_pool(own_render_pool):
    """A render pool of this test's own (``tests/leaderboard/render_fakes.py``)."""
    return own_render_pool


def _play(client: Client, steps: int) -> list[str]:
    """Play ``steps`` moves of an episode; return the frame URLs shown, the start's first."""
    view = client.post("/play/start/", {"scene": SCENE, "level": 0}).json()
    urls = [view["frame"]["webp"]]
    for option in oracle_options(get_scene(SCENE))[:steps]:
        view = client.post(view["answer_url"], {"index": view["index"], "option": option}).json()
        urls.append(view["frame"]["webp"])
    return urls


def test_an_anonymous_visitor_causes_at_most_the_render_rate_of_new_frames(
    client, settings, renders
):
    settings.MIRRORBENCH_RENDER_RATE = "3/hour"
    urls = _play(client, 4)
    assert len(set(urls)) == 5
    answers = [client.get(url) for url in urls]
    assert [a.status_code for a in answers] == [200, 200, 200, 429, 429]
    assert len(renders) == 3
    refused = answers[3]
    assert 0 < int(refused["Retry-After"]) <= 3601 and "new frames" in refused.content.decode()
    # A frame already stored costs nothing: it is served however often it is asked for.
    assert all(client.get(url).status_code == 200 for url in urls[:3] for _ in range(5))
    # Another session from the same address is counted with the first ...
    other = Client()
    assert other.get(urls[4]).status_code == 429
    # ... and the same session from another address too.
    assert client.get(urls[4], REMOTE_ADDR="198.51.100.7").status_code == 429
    assert len(renders) == 3
    # Somebody else, elsewhere, is not.
    assert Client(REMOTE_ADDR="198.51.100.8").get(urls[4]).status_code == 200


def test_an_account_is_counted_wherever_it_signs_in_from(client, alice, settings, renders):
    settings.MIRRORBENCH_RENDER_RATE = "2/hour"
    urls = _play(client, 4)
    for n, url in enumerate(urls[:3]):
        signed_in = Client(REMOTE_ADDR=f"203.0.113.{n + 1}")
        signed_in.force_login(alice)
        assert signed_in.get(url).status_code == (200 if n < 2 else 429)
    assert len(renders) == 2


def test_ipv6_visitors_are_counted_by_their_slash_64(client, settings, renders):
    settings.MIRRORBENCH_RENDER_RATE = "2/hour"
    urls = _play(client, 3)
    answers = [
        Client(REMOTE_ADDR=f"2001:db8:1:2::{n + 1}").get(url) for n, url in enumerate(urls[:3])
    ]
    assert [a.status_code for a in answers] == [200, 200, 429]


def test_a_full_render_queue_answers_503_with_retry_after_at_once(client, settings, monkeypatch):
    """One frame at a time here: while it renders, a request for another is turned away."""
    settings.MIRRORBENCH_RENDER_QUEUE = 1
    release = threading.Event()
    started = threading.Event()

    def slow(frame, timeout_s=None):
        started.set()
        assert release.wait(30)
        return _png()

    monkeypatch.setattr(frames_service, "_frame_png_render", slow)
    urls = _play(client, 2)
    keys = [url.split("/")[-1].split(".")[0] for url in urls]
    busy = frames_service._queue_submit(Frame.objects.select_related("scene").get(pk=keys[0]))
    assert started.wait(10)
    try:
        answer = client.get(urls[1])
        assert answer.status_code == 503 and answer["Retry-After"] == "2"
        assert "ask again shortly" in answer.content.decode()
        assert Frame.objects.get(pk=keys[1]).stored is None
    finally:
        release.set()
    assert busy.result(10)
    # The queue has room again; the frame rendered for nobody is taken from memory, not remade.
    monkeypatch.setattr(frames_service, "_frame_png_render", lambda frame, timeout_s=None: _png())
    assert client.get(urls[1]).status_code == 200


def test_a_request_for_a_frame_being_rendered_shares_it_and_is_not_charged(
    client, settings, monkeypatch
):
    settings.MIRRORBENCH_RENDER_RATE = "1/hour"
    release = threading.Event()
    made = []

    def slow(frame, timeout_s=None):
        made.append(frame.key)
        assert release.wait(30)
        return _png()

    monkeypatch.setattr(frames_service, "_frame_png_render", slow)
    (url,) = _play(client, 0)
    key = url.split("/")[-1].split(".")[0]
    frame = Frame.objects.select_related("scene").get(pk=key)
    first = frames_service._queue_submit(frame)
    assert frames_service._queue_submit(frame, charge=lambda: pytest.fail("charged")) is first
    release.set()
    first.result(10)
    assert client.get(url).status_code == 200 and made == [key]


def _stored(specs: list[FrameSpec], *, shade: int = 0) -> list[str]:
    keys = frames_register(specs)
    for key in keys:
        frame_store(key=key, png=_png(64, shade))
    return keys


def test_stored_frames_are_kept_within_the_disk_budget_least_recently_used_first(
    settings, tmp_path
):
    bundle = make_bundle(tmp_path / "b.jsonl", "oracle", scenes=SCENE, levels=(0,), image_size=32)
    listed = import_run(bundle, "Oracle", kind="baseline")
    Run.objects.filter(pk=listed.pk).update(listed=True)
    scene = Scene.objects.get(scene_id=SCENE, benchmark=listed.benchmark)
    gallery = gallery_frames_register(size=DEFAULT_SIZE, scenes=[scene])
    for key in gallery:
        frame_store(key=key, png=_png(64))
    kept = frames_kept_keys()
    listed_keys = frames_service.run_frames_register(run=listed)
    for key in listed_keys:
        frame_store(key=key, png=_png(64))
    assert set(gallery) | set(listed_keys) <= kept
    # Frames of played episodes: nobody lists them. The oldest used go first.
    others = _stored([FrameSpec(scene, (x, 5, 5), 32) for x in range(6)], shade=9)
    assert not set(others) & kept
    now = timezone.now()
    for age, key in enumerate(reversed(others)):
        Frame.objects.filter(pk=key).update(used=now - timedelta(hours=age))
    Frame.objects.filter(pk__in=[*gallery, *listed_keys]).update(used=now - timedelta(days=9))
    one = Frame.objects.get(pk=others[0])
    each = one.png_bytes + one.webp_bytes + one.thumb_bytes
    total = frames_stored_bytes()
    # Room for all but about three of the others.
    budget = int((total - 3 * each) / 0.9) + 1
    evicted = frames_evict(budget=budget)
    assert evicted.frames == 3 and evicted.stored_bytes <= budget * 0.9
    gone = others[:3]  # the least recently used
    for key in gone:
        frame = Frame.objects.get(pk=key)
        assert frame.stored is None and frame.png_bytes is None
        assert not frame_exists(key)
        assert not any(default_storage.exists(frame_path(key, v)) for v in ("png", "webp", "thumb"))
    for key in [*others[3:], *gallery, *listed_keys]:
        assert Frame.objects.get(pk=key).stored is not None and frame_exists(key)
    # Within the budget, nothing more goes; a budget the kept frames exceed evicts only others.
    assert frames_evict(budget=budget).frames == 0
    assert frames_evict(budget=1).frames == 3
    assert set(Frame.objects.filter(stored__isnull=False).values_list("pk", flat=True)) == set(
        gallery
    ) | set(listed_keys)


def test_an_evicted_frame_is_made_again_when_asked_for(client, renders, monkeypatch):
    from evaluation.render_pool import RenderPool

    (url,) = _play(client, 0)
    key = url.split("/")[-1].split(".")[0]
    assert client.get(url).status_code == 200 and len(renders) == 1
    assert frames_evict(budget=1).frames == 1 and not frame_exists(key)
    later = RenderPool(1)  # its memory long gone
    monkeypatch.setattr(frames_service, "render_pool", lambda: later)
    assert client.get(url).status_code == 200 and len(renders) == 2
    assert frame_exists(key) and Frame.objects.get(pk=key).stored is not None


def test_the_stale_check_does_not_render_again_the_eager_frames_the_sweep_evicted(
    tmp_path, monkeypatch
):
    from django.core.cache import cache

    bundle = make_bundle(tmp_path / "b.jsonl", "oracle", scenes=SCENE, levels=(0,), image_size=32)
    run = import_run(bundle, "Oracle", kind="baseline")  # not listed: nothing keeps its frames
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.COMPLETED, listed=False, finished=timezone.now() - timedelta(hours=1)
    )
    eager = frames_service.run_eager_frame_keys(run=run)
    for key in eager:
        frame_store(key=key, png=_png(64))
    queued: list[int] = []
    monkeypatch.setattr(frames_service, "task_send", lambda name, run_id: queued.append(run_id))
    assert frames_evict(budget=1).frames == len(eager)
    assert frames_service.runs_frames_requeue() == [] and queued == []
    # A frame never made (its render worker died) is queued again, once the run is looked at.
    Frame.objects.filter(pk=eager[0]).update(used=None)
    cache.clear()
    assert frames_service.runs_frames_requeue() == [run.pk] and queued == [run.pk]


def test_beat_sweeps_the_frames_on_the_render_queue(settings):
    from mirrorbench_site import settings as site

    schedule = site.CELERY_BEAT_SCHEDULE["frames-sweep"]
    assert schedule["task"] == "leaderboard.tasks.frames_sweep"
    assert schedule["schedule"] == float(site.MIRRORBENCH_FRAMES_SWEEP_S)
    assert site.CELERY_TASK_ROUTES["leaderboard.tasks.frames_sweep"] == {"queue": "render"}
    from leaderboard.tasks import frames_sweep

    settings.MIRRORBENCH_FRAMES_MAX_BYTES = 0
    assert frames_sweep() == {"frames": 0, "animations": 0, "bytes": 0, "stored_bytes": 0}


def test_a_served_frame_is_marked_used_at_most_hourly(client, renders):
    (url,) = _play(client, 0)
    key = url.split("/")[-1].split(".")[0]
    client.get(url)  # rendered and stored now: used now
    assert Frame.objects.get(pk=key).used is not None
    day_ago = timezone.now() - timedelta(days=1)
    Frame.objects.filter(pk=key).update(used=day_ago)
    client.get(url)  # served: used now
    used = Frame.objects.get(pk=key).used
    assert used > day_ago + timedelta(hours=23)
    Frame.objects.filter(pk=key).update(used=day_ago)
    client.get(url)  # served again within the hour: not written again
    assert Frame.objects.get(pk=key).used == day_ago
    from django.core.cache import cache

    cache.delete(f"frame-used:{key}")  # the hour is over
    client.get(url)
    assert Frame.objects.get(pk=key).used > day_ago + timedelta(hours=23)


# Uploads


def _upload(client, content: bytes):
    data = {"model_name": "Sized VLM", "kind": "open-weights", "bundle": io.BytesIO(content)}
    data["bundle"].name = "b.jsonl"
    return client.post("/api/submissions/", data)


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _bytes(records: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


@pytest.mark.parametrize("size", [4096, 16384, 512])
def test_an_upload_declaring_an_image_size_the_site_does_not_serve_is_refused(
    client, alice, tmp_path, size
):
    bundle = make_bundle(tmp_path / "b.jsonl", "random", scenes=SCENE, levels=(0,))
    records = _records(bundle)
    records[0]["renderer"]["image_size"] = size
    for record in records[1:]:  # keys that agree with the size: only the size is wrong
        cell = (0, 0, 0)
        for step in record["steps"]:
            step["frame_key"] = frame_key(
                records[0]["renderer"]["version"], record["scene_id"], cell, size
            )
            cell = tuple(step["hand_cell"])
    client.force_login(alice)
    response = _upload(client, _bytes(records))
    assert response.status_code == 400, response.content
    assert f"renderer.image_size is {size}" in json.dumps(response.json())
    assert "1024" in json.dumps(response.json())
    assert not Submission.objects.exists() and not Frame.objects.exists()


def test_the_sizes_served_are_the_galleries_the_play_pages_and_the_settings(settings):
    from leaderboard.submissions.services import served_image_sizes

    settings.MIRRORBENCH_PLAY_IMAGE_SIZE = 1024
    settings.MIRRORBENCH_IMAGE_SIZES = [1024]
    assert served_image_sizes() == [1024]
    settings.MIRRORBENCH_PLAY_IMAGE_SIZE = 512
    settings.MIRRORBENCH_IMAGE_SIZES = [768]
    assert served_image_sizes() == [512, 768, 1024]


def test_an_upload_whose_frame_keys_disagree_with_its_header_is_refused(client, alice, tmp_path):
    bundle = make_bundle(tmp_path / "b.jsonl", "random", scenes=SCENE, levels=(0, 1))
    records = _records(bundle)
    header = records[0]
    # The key of a frame at another cell, as if the agent had been shown something else.
    wrong = frame_key(header["renderer"]["version"], SCENE, (3, 3, 3), 1024)
    records[2]["steps"][1]["frame_key"] = wrong
    client.force_login(alice)
    response = _upload(client, _bytes(records))
    assert response.status_code == 400, response.content
    text = json.dumps(response.json())
    assert "step 1: frame_key" in text and wrong in text
    assert not Submission.objects.exists()
    # The bundle as made is taken, its keys untouched.
    assert _upload(client, bundle.read_bytes()).status_code == 201
