"""Open Graph and Twitter card tags on model, run and episode pages, and their share cards
(``card.png``): a server-drawn image that a shared link previews."""

from __future__ import annotations

import io
import re
from html import unescape
from urllib.parse import urlsplit

import pytest
from PIL import Image

from leaderboard.data_version import data_version_cache_clear
from leaderboard.frames.services import episode_frames_render
from leaderboard.models import Episode, ModelEntry, Run
from tests.leaderboard.factories import import_run, make_bundle

pytestmark = pytest.mark.django_db

PLACEHOLDER = (234, 238, 242)


@pytest.fixture(scope="module")
def oracle_run(module_rows, tmp_path_factory) -> Run:
    """The oracle on two robot scenes at every level (32 px frames), on the board."""
    bundle = make_bundle(
        tmp_path_factory.mktemp("cards") / "oracle.jsonl",
        "oracle",
        "tienkung-allegro-logo_0,tienkung-shadow_hand-logo_0",
        image_size=32,
    )
    with module_rows():
        run = import_run(bundle, "Oracle", kind=ModelEntry.Kind.BASELINE)
        Run.objects.filter(pk=run.pk).update(listed=True)
        return run


def _meta(html: str) -> dict[str, str]:
    tags = re.findall(
        r'<meta (?:property|name)="((?:og|twitter):[a-z:_]+)" content="([^"]*)">', html
    )
    return {name: unescape(content) for name, content in tags}


def _card(client, url: str) -> Image.Image:
    response = client.get(urlsplit(url).path)
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    return Image.open(io.BytesIO(response.content))


def test_model_run_and_episode_pages_carry_preview_tags_with_their_card(client, oracle_run):
    episode = Episode.objects.filter(run=oracle_run).order_by("pk").first()
    slug = oracle_run.model_entry.slug
    pages = {
        f"/models/{slug}/": f"/models/{slug}/card.png",
        f"/runs/{oracle_run.pk}/": f"/runs/{oracle_run.pk}/card.png",
        f"/episodes/{episode.pk}/": f"/episodes/{episode.pk}/card.png",
    }
    for page, card in pages.items():
        meta = _meta(client.get(page).content.decode())
        assert meta["og:url"] == f"http://testserver{page}"
        assert meta["og:image"] == meta["twitter:image"] == f"http://testserver{card}"
        assert meta["twitter:card"] == "summary_large_image"
        assert "Oracle" in meta["og:title"] and meta["og:description"] and meta["og:image:alt"]
        assert (meta["og:image:width"], meta["og:image:height"]) == ("1200", "630")
        assert _card(client, meta["og:image"]).size == (1200, 630)
    model = _meta(client.get(f"/models/{oracle_run.model_entry.slug}/").content.decode())
    assert "Overall AVG 1.000 (95% CI" in model["og:description"]


def test_an_episode_card_shows_its_last_frame_once_stored(client, oracle_run, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    episode = Episode.objects.filter(run=oracle_run).order_by("pk").first()
    before = _card(client, f"/episodes/{episode.pk}/card.png").convert("RGB")
    assert before.getpixel((200, 200)) == PLACEHOLDER
    episode_frames_render(episode_id=episode.pk)
    data_version_cache_clear()
    after = _card(client, f"/episodes/{episode.pk}/card.png").convert("RGB")
    assert after.getpixel((200, 200)) != PLACEHOLDER
    # The outcome, in its colour, beside the frame: green for a reached mark.
    greens = [p for p in after.crop((640, 60, 1160, 120)).getdata() if p[1] > p[0] + 60]
    assert greens


def test_a_card_is_cached_and_revalidated(client, oracle_run):
    url = f"/runs/{oracle_run.pk}/card.png"
    first = client.get(url)
    assert first["Cache-Control"] == "public, max-age=3600"
    assert client.get(url).content == first.content
    assert client.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304


def test_a_private_runs_pages_have_no_preview_and_no_card(client, tmp_path, alice):
    bundle = make_bundle(
        tmp_path / "mine.jsonl", "random", "tienkung-allegro-logo_0", (0,), image_size=32
    )
    run = import_run(bundle, "Alice's private model")
    Run.objects.filter(pk=run.pk).update(visibility=Run.Visibility.PRIVATE, owner=alice)
    episode = Episode.objects.get(run=run)
    client.force_login(alice)
    for page in (f"/runs/{run.pk}/", f"/episodes/{episode.pk}/"):
        response = client.get(page)
        assert response.status_code == 200 and "og:image" not in response.content.decode()
    for card in (
        f"/runs/{run.pk}/card.png",
        f"/episodes/{episode.pk}/card.png",
        f"/models/{run.model_entry.slug}/card.png",
    ):
        assert client.get(card).status_code == 404
