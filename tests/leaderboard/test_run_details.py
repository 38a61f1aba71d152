"""A run's details as parquet on the site: ``/runs/<id>/details.zip``, and each of its tables
alone (``details.parquet``, ``steps.parquet``)."""

from __future__ import annotations

import io
import re
import zipfile

import pyarrow.parquet as pq
import pytest

from evaluation.details import episode_results
from evaluation.metrics import score_json
from evaluation.vocabulary import LEVEL_KEYS, METRICS, OVERALL
from leaderboard.frames.selectors import episode_frame_keys
from leaderboard.models import Episode, ModelEntry, Run
from tests.leaderboard.factories import import_run, make_bundle

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def random_run(module_rows, tmp_path_factory) -> Run:
    """The random baseline on the robot track at every level (72 episodes), images of 32 px."""
    bundle = make_bundle(
        tmp_path_factory.mktemp("details") / "random.jsonl", "random", "robot", image_size=32
    )
    with module_rows():
        return import_run(bundle, "Random", kind=ModelEntry.Kind.BASELINE)


def _files(response) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    return {name: archive.read(name) for name in archive.namelist()}


def test_a_run_offers_its_details_as_parquet_with_a_card(client, random_run):
    page = client.get(f"/runs/{random_run.pk}/").content.decode()
    assert f'href="/runs/{random_run.pk}/details.zip"' in page
    response = client.get(f"/runs/{random_run.pk}/details.zip")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert f"mirrorbench-run-{random_run.pk}-details.zip" in response["Content-Disposition"]
    files = _files(response)
    assert sorted(files) == ["README.md", "episodes.parquet", "steps.parquet"]
    card = files["README.md"].decode()
    assert f"(run {random_run.pk})" in card
    assert f"http://testserver/runs/{random_run.pk}/" in card
    # The same run gives the same bytes.
    assert client.get(f"/runs/{random_run.pk}/details.zip").content == response.content


def test_the_details_name_each_episode_and_frame_by_their_address(client, random_run):
    files = _files(client.get(f"/runs/{random_run.pk}/details.zip"))
    episodes = pq.read_table(io.BytesIO(files["episodes.parquet"])).to_pylist()
    steps = pq.read_table(io.BytesIO(files["steps.parquet"])).to_pylist()
    assert len(episodes) == 72
    assert {(e["run_id"], e["model"]) for e in episodes} == {(random_run.pk, "Random")}
    stored = Episode.objects.select_related("scene", "run").get(
        run=random_run, scene__scene_id=episodes[0]["scene_id"], level=episodes[0]["level"]
    )
    assert episodes[0]["episode_url"] == f"http://testserver/episodes/{stored.pk}/"
    first = [s for s in steps if s["episode_key"] == episodes[0]["episode_key"]]
    assert len(first) == episodes[0]["steps"]
    # Step i shows the view the replay serves before it.
    keys = episode_frame_keys(stored)
    assert [s["frame_url"] for s in first] == [
        f"http://testserver/frames/{key}.png" for key in keys[: len(first)]
    ]
    assert all(
        re.fullmatch(r"http://testserver/frames/[0-9a-f]{40}\.png", s["frame_url"]) for s in steps
    )


def test_the_details_rescore_to_the_runs_tables_to_the_last_digit(client, random_run):
    files = _files(client.get(f"/runs/{random_run.pk}/details.zip"))
    scores = score_json(episode_results(pq.read_table(io.BytesIO(files["episodes.parquet"]))))
    tables = {OVERALL: scores["overall"], **{k: scores["levels"][k] for k in LEVEL_KEYS}}
    rows = list(random_run.scores.all())
    assert rows
    for row in rows:
        cell = tables[row.table][row.track]
        assert cell is not None, (row.table, row.track)
        assert {m: cell[m] for m in METRICS} == {m: getattr(row, m) for m in METRICS}


def test_only_who_may_see_a_run_gets_its_details(client, random_run, alice, bob):
    Run.objects.filter(pk=random_run.pk).update(visibility=Run.Visibility.PRIVATE, owner=alice)
    try:
        assert client.get(f"/runs/{random_run.pk}/details.zip").status_code == 404
        client.force_login(bob)
        assert client.get(f"/runs/{random_run.pk}/details.zip").status_code == 404
        client.force_login(alice)
        assert client.get(f"/runs/{random_run.pk}/details.zip").status_code == 200
    finally:
        Run.objects.filter(pk=random_run.pk).update(visibility=Run.Visibility.PUBLIC, owner=None)


def test_each_table_is_also_served_alone_as_the_same_parquet(client, random_run, alice):
    files = _files(client.get(f"/runs/{random_run.pk}/details.zip"))
    page = client.get(f"/runs/{random_run.pk}/").content.decode()
    for path, name in (("details.parquet", "episodes"), ("steps.parquet", "steps")):
        assert f'href="/runs/{random_run.pk}/{path}"' in page
        response = client.get(f"/runs/{random_run.pk}/{path}")
        assert response.status_code == 200
        assert response["Content-Type"] == "application/vnd.apache.parquet"
        assert f"mirrorbench-run-{random_run.pk}-{name}.parquet" in response["Content-Disposition"]
        assert response.content == files[f"{name}.parquet"]
    # A private run's tables are its owner's alone; no run, no table.
    Run.objects.filter(pk=random_run.pk).update(visibility=Run.Visibility.PRIVATE, owner=alice)
    assert client.get(f"/runs/{random_run.pk}/details.parquet").status_code == 404
    client.force_login(alice)
    assert client.get(f"/runs/{random_run.pk}/steps.parquet").status_code == 200
    assert client.get("/runs/999999/details.parquet").status_code == 404
