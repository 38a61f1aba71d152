"""A GET changes nothing: no page, CSV, JSON or API read writes to the database.

Frames are registered by what stores them (the worker per step, an import, the scene set
with its gallery, a play's start and answers), never by a page that shows them. The one
exception is the frame file itself (``/frames/<key>.png``), a content-addressed cache that a
request may fill (docs/leaderboard.md, Frames); it is not among the addresses below.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.boards.entries import benchmark_current
from leaderboard.models import Episode, Frame, Run
from leaderboard.runs.imports import reference_results_load
from tests.leaderboard.factories import import_run, make_bundle

pytestmark = pytest.mark.django_db

WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)
SCENE = "tienkung-allegro-logo_0"


@pytest.fixture
def run(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    benchmark_current()
    reference_results_load()  # listed models for the boards, charts and comparisons
    bundle = make_bundle(tmp_path / "b.jsonl", "random", scenes=SCENE, levels=(0,), image_size=32)
    return import_run(bundle, "Random small", kind="baseline")


def _writes(client, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return [q["sql"][:120] for q in queries.captured_queries if WRITE.match(q["sql"])]


def test_no_get_writes_to_the_database(client, alice, run):
    Run.objects.filter(pk=run.pk).update(owner=alice)
    episode = Episode.objects.filter(run=run).first()
    assert episode is not None
    client.force_login(alice)
    client.get("/")  # the session's first save is the sign-in's, not a page's
    slugs = Run.objects.filter(listed=True).values_list("model_entry__slug", flat=True)[:2]
    two = "&".join(f"m={slug}" for slug in slugs)
    urls = [
        "/",
        "/levels/0/",
        "/tracks/",
        "/leaderboard/overall.csv",
        "/leaderboard/tracks.csv",
        f"/models/{run.model_entry.slug}/",
        f"/runs/{run.pk}/",
        f"/runs/{run.pk}/progress.json",
        f"/runs/{run.pk}/bundle.jsonl",
        f"/runs/{run.pk}/details.zip",
        f"/runs/{run.pk}/details.parquet",
        f"/runs/{run.pk}/steps.parquet",
        f"/runs/{run.pk}/run.toml",
        f"/runs/{run.pk}/eee.json",
        f"/runs/{run.pk}/eee-instances.jsonl",
        f"/models/{run.model_entry.slug}/badge.svg",
        f"/models/{run.model_entry.slug}/eval_results.yaml",
        f"/models/{run.model_entry.slug}/model-index.yaml",
        f"/runs/{run.pk}/behaviour.csv",
        f"/episodes/{episode.pk}/",
        f"/episodes/{episode.pk}/?step=1",
        f"/episodes/{episode.pk}/prompt.txt?step=0",
        "/scenes/",
        f"/scenes/{SCENE}/",
        "/about/",
        "/charts/",
        f"/compare/?{two}",
        "/play/",
        "/search/?q=choice",
        f"/search/?q=choice+-left&run={run.pk}&level=1",
        "/accounts/profile/",
        "/api/",
        "/api/models/",
        f"/api/runs/{run.pk}/",
        f"/api/episodes/?run={run.pk}",
        f"/api/episodes/{episode.pk}/",
        "/api/leaderboards/overall/",
        "/api/tracks/",
        f"/api/charts/radar/?{two}",
    ]
    # Even with no frame registered, a page that shows frames does not register them.
    Frame.objects.all().delete()
    writes = {url: w for url in urls if (w := _writes(client, url))}
    assert not writes, writes
