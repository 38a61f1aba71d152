"""Replays that travel: an episode as one HTML file to download, and as an animation.

The file is the one `mirrorbench replay-html` writes (evaluation.replay_html); the site fills
it with its stored frames, rendering the missing ones within the render limits.
"""

from __future__ import annotations

import io
import json
import math
import re

import pytest
from django.core.files.storage import default_storage
from PIL import Image

from evaluation.cli import main
from evaluation.render_pool import RenderPool
from leaderboard.frames import services as frames_service
from leaderboard.frames.services import episode_frames_register, frames_render
from leaderboard.models import Episode, Frame, Run
from leaderboard.replays import services as replays_service
from tests.leaderboard.factories import import_run, make_bundle

pytestmark = pytest.mark.django_db
SIZE = 32
SCENE = "male_0-mano_white-splash"
HOSTILE = [
    "<script>document.title = 'pwned'</script> Backward. Choice: [6]",
    "</script><img src=x onerror=\"document.title='pwned'\"> Up. Choice: [1]",
    "Choice: [3]",
]


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def bundle(tmp_path):
    script = tmp_path / "hostile.json"
    script.write_text(json.dumps(HOSTILE))
    return make_bundle(
        tmp_path / "hostile.jsonl", f"scripted:{script}", scenes=SCENE, levels=(2,), image_size=SIZE
    )


@pytest.fixture
def episode(bundle) -> Episode:
    run = import_run(bundle, "Hostile script", kind="baseline")
    return Episode.objects.select_related("scene", "run").get(run=run)


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """The episodes queued for the render worker."""
    sent: list[int] = []
    monkeypatch.setattr(
        frames_service, "task_send", lambda name, episode_id: sent.append(episode_id)
    )
    return sent


def _data(html: str) -> dict:
    found = re.search(r'<script type="application/json" id="replay-data">(.*?)</script>', html)
    assert found, "the replay's data is missing"
    return json.loads(found.group(1))


def _views(episode: Episode) -> int:
    return episode.steps.count() + 1


def test_the_export_is_one_file_to_download_with_every_frame_inside(client, episode):
    response = client.get(f"/episodes/{episode.pk}/export.html")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="mirrorbench-hostile-script-{SCENE}-level-2-episode-'
        f'{episode.pk}.html"'
    )
    html = response.content.decode()
    views = _data(html)["views"]
    assert len(views) == _views(episode)
    assert all(v["frame"].startswith("data:image/webp;base64,") for v in views)
    assert not re.search(r"https?:|/frames/|/episodes/|href=", html)
    # Rendered for this request, so stored now, like a replay's frames.
    cells = {tuple(v["cell"]) for v in views}
    assert Frame.objects.filter(stored__isnull=False).count() == len(cells)
    assert [v["step"]["response"] for v in views[:3]] == HOSTILE
    assert "<script>document" not in html and "<img src=x" not in html
    assert "Hostile script in <code>" in html


def test_the_site_and_the_command_line_write_the_same_viewer(client, episode, bundle, tmp_path):
    site = client.get(f"/episodes/{episode.pk}/export.html").content.decode()
    out = tmp_path / "cli.html"
    assert main(["replay-html", str(bundle), "--episode", f"{SCENE}:2", "--out", str(out)]) == 0
    offline = out.read_text(encoding="utf-8")

    def parts(html: str) -> tuple[str, str]:
        style = re.search(r"<style>(.*?)</style>", html, re.S)
        script = re.search(r"<script>(.*?)</script>", html, re.S)
        assert style and script
        return style.group(1), script.group(1)

    assert parts(site) == parts(offline)
    ours, theirs = _data(site)["views"], _data(offline)["views"]
    for field in ("cell", "distance", "last", "step"):
        assert [v[field] for v in ours] == [v[field] for v in theirs], field
    # The same pixels: the frames the site stored are the ones the engine renders.
    assert [v["frame"] for v in ours] == [v["frame"] for v in theirs]


def test_another_users_private_episode_is_not_found(client, episode, alice, bob):
    Run.objects.filter(pk=episode.run_id).update(visibility=Run.Visibility.PRIVATE, owner=alice)
    addresses = [
        f"/episodes/{episode.pk}/export.html",
        f"/episodes/{episode.pk}/animation.webp",
        f"/episodes/{episode.pk}/animation.gif",
    ]
    for address in addresses:
        assert client.get(address).status_code == 404, address
    client.force_login(bob)
    for address in addresses:
        assert client.get(address).status_code == 404, address
    client.force_login(alice)
    assert client.get(addresses[0]).status_code == 200
    assert client.get("/episodes/999999/export.html").status_code == 404


def test_past_the_render_budget_the_export_says_when_to_come_back(
    client, episode, settings, queued, monkeypatch
):
    # A pool of its own: frames another test had made are not in its memory, free to serve.
    pool = RenderPool(1)
    monkeypatch.setattr(frames_service, "render_pool", lambda: pool)
    settings.MIRRORBENCH_RENDER_RATE = "2/hour"
    response = client.get(f"/episodes/{episode.pk}/export.html")
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "new ones again in" in response.content.decode()
    assert queued == [episode.pk]  # the render worker makes the rest
    assert Frame.objects.filter(stored__isnull=False).count() == 2  # kept for the next try
    pool.close()


def test_frames_not_registered_yet_answer_503_with_retry_after(client, episode, queued):
    Frame.objects.all().delete()
    response = client.get(f"/episodes/{episode.pk}/export.html")
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert "being prepared" in response.content.decode()
    assert queued == [episode.pk]


def test_the_animation_has_a_frame_per_view_and_is_made_once(client, episode, monkeypatch):
    frames_render(episode_frames_register(episode))
    response = client.get(f"/episodes/{episode.pk}/animation.webp")
    assert response.status_code == 200 and response["Content-Type"] == "image/webp"
    image = Image.open(io.BytesIO(b"".join(response.streaming_content)))
    assert image.format == "WEBP" and image.n_frames == _views(episode)
    assert image.size == (SIZE, SIZE)
    shards, _ = default_storage.listdir("animations")
    assert len(shards) == 1 and len(default_storage.listdir(f"animations/{shards[0]}")[1]) == 1

    def never(*args, **kwargs):
        raise AssertionError("made again")

    monkeypatch.setattr(replays_service, "episode_animation", never)
    again = client.get(f"/episodes/{episode.pk}/animation.webp")
    assert again.status_code == 200
    assert (
        client.get(
            f"/episodes/{episode.pk}/animation.webp", HTTP_IF_NONE_MATCH=again["ETag"]
        ).status_code
        == 304
    )


def test_the_animation_as_gif_and_a_bad_format_named(client, episode):
    response = client.get(f"/episodes/{episode.pk}/animation.webp?format=gif")
    assert response.status_code == 200 and response["Content-Type"] == "image/gif"
    image = Image.open(io.BytesIO(b"".join(response.streaming_content)))
    assert image.format == "GIF" and image.n_frames == _views(episode)
    assert response["Content-Disposition"].startswith("inline; filename=")
    assert response["Content-Disposition"].endswith('.gif"')
    gif = client.get(f"/episodes/{episode.pk}/animation.gif")
    assert gif.status_code == 200 and gif["ETag"] == response["ETag"]
    bad = client.get(f"/episodes/{episode.pk}/animation.webp?format=png")
    assert bad.status_code == 400
    assert bad.content.decode().startswith("format: one of webp, gif")


def test_the_replay_page_links_to_its_file_and_animations(client, episode):
    page = client.get(f"/episodes/{episode.pk}/").content.decode()
    assert f'href="/episodes/{episode.pk}/export.html" download' in page
    assert f'href="/episodes/{episode.pk}/animation.webp"' in page
    assert f'href="/episodes/{episode.pk}/animation.gif"' in page


def test_animations_count_in_the_frames_disk_budget_and_the_oldest_is_made_again(
    client, episode, monkeypatch
):
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard.frames.services import frames_evict, frames_stored_bytes
    from leaderboard.models import Animation

    frames_render(episode_frames_register(episode))
    made: list[str] = []
    real = replays_service.episode_animation

    def counted(pngs, distances, *, fmt):
        made.append(fmt)
        return real(pngs, distances, fmt=fmt)

    monkeypatch.setattr(replays_service, "episode_animation", counted)
    webp = b"".join(client.get(f"/episodes/{episode.pk}/animation.webp").streaming_content)
    gif = b"".join(client.get(f"/episodes/{episode.pk}/animation.gif").streaming_content)
    assert made == ["webp", "gif"]
    rows = {a.path.rsplit(".", 1)[1]: a for a in Animation.objects.all()}
    assert {fmt: a.size_bytes for fmt, a in rows.items()} == {"webp": len(webp), "gif": len(gif)}
    assert all(default_storage.size(a.path) == a.size_bytes for a in rows.values())
    # The GIF was served longest ago; the frames and the WebP since.
    now = timezone.now()
    Animation.objects.filter(pk=rows["gif"].path).update(used=now - timedelta(days=2))
    Animation.objects.filter(pk=rows["webp"].path).update(used=now - timedelta(hours=1))
    Frame.objects.update(used=now)
    total = frames_stored_bytes() + len(webp) + len(gif)
    assert frames_evict(budget=total).animations == 0  # within the budget: nothing goes
    # Room for all but the oldest animation, once the sweep is down to 90% of the budget.
    budget = math.ceil((total - len(gif)) / 0.9) + 1
    assert budget < total
    evicted = frames_evict(budget=budget)
    assert (evicted.animations, evicted.frames, evicted.bytes) == (1, 0, len(gif))
    assert not default_storage.exists(rows["gif"].path)
    assert default_storage.exists(rows["webp"].path)
    assert list(Animation.objects.values_list("path", flat=True)) == [rows["webp"].path]
    # Asked for again, the evicted one is made again (and counted again); the other is served.
    again = client.get(f"/episodes/{episode.pk}/animation.gif")
    assert again.status_code == 200 and b"".join(again.streaming_content) == gif
    assert client.get(f"/episodes/{episode.pk}/animation.webp").status_code == 200
    assert made == ["webp", "gif", "gif"]
    assert Animation.objects.get(pk=rows["gif"].path).size_bytes == len(gif)
    # With no room at all, every animation goes.
    Animation.objects.update(used=now - timedelta(days=3))
    evicted = frames_evict(budget=1)
    assert evicted.animations == 2 and not Animation.objects.exists()
