"""A model's badge (``/models/<slug>/badge.svg``) and its results for Hugging Face
(``eval_results.yaml``, an ``.eval_results/`` file; ``model-index.yaml``, a model card's)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
import yaml

from evaluation.vocabulary import METRICS, OVERALL
from leaderboard.boards.badges import BADGE_METRICS
from leaderboard.exports import published_float
from leaderboard.models import ModelEntry, Run, RunScore
from tests.leaderboard.factories import import_run, make_bundle

pytestmark = pytest.mark.django_db

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def random_run(module_rows, tmp_path_factory) -> Run:
    """The random baseline on the robot track at every level, on the board (as a partial
    upload a moderator lets on)."""
    bundle = make_bundle(tmp_path_factory.mktemp("badges") / "random.jsonl", "random", "robot")
    with module_rows():
        run = import_run(bundle, "Random", kind=ModelEntry.Kind.BASELINE)
        Run.objects.filter(pk=run.pk).update(listed=True)
        return run


def _texts(svg: bytes) -> list[str]:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_the_badge_shows_the_score_with_its_interval(client, random_run):
    slug = random_run.model_entry.slug
    response = client.get(f"/models/{slug}/badge.svg?metric=overall_avg")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("image/svg+xml")
    row = RunScore.objects.get(run=random_run, table=OVERALL, track=OVERALL)
    low, high = row.ci["avg"]
    message = f"{row.avg:.3f} (95% CI {low:.3f}\u2013{high:.3f})"
    texts = _texts(response.content)
    assert "MirrorBench Overall AVG" in texts and message in texts
    # The default metric is the overall AVG; another column names its track and metric.
    assert client.get(f"/models/{slug}/badge.svg").content == response.content
    robot = RunScore.objects.get(run=random_run, table=OVERALL, track="robot")
    texts = _texts(client.get(f"/models/{slug}/badge.svg?metric=robot_tsr").content)
    assert "MirrorBench Robot TSR" in texts
    assert any(t.startswith(f"{robot.tsr:.3f} (95% CI ") for t in texts)


def test_the_badge_may_be_cached_and_revalidated(client, random_run):
    url = f"/models/{random_run.model_entry.slug}/badge.svg?metric=overall_avg"
    response = client.get(url)
    assert "max-age=" in response["Cache-Control"] and response["ETag"].startswith('"')
    again = client.get(url, HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304 and again["ETag"] == response["ETag"]


def test_an_unknown_metric_is_refused_naming_the_parameter_and_the_choices(client, random_run):
    response = client.get(f"/models/{random_run.model_entry.slug}/badge.svg?metric=rank")
    assert response.status_code == 400
    text = response.content.decode()
    assert text.startswith("metric: 'rank' is not a badge metric")
    assert all(metric in text for metric in BADGE_METRICS)


def test_a_model_without_a_public_run_has_no_badge_and_no_results(client, random_run, alice):
    assert client.get("/models/no-such-model/badge.svg").status_code == 404
    Run.objects.filter(pk=random_run.pk).update(visibility=Run.Visibility.PRIVATE, owner=alice)
    slug = random_run.model_entry.slug
    client.force_login(alice)  # even its owner: the badge is public
    assert client.get(f"/models/{slug}/badge.svg").status_code == 404
    assert client.get(f"/models/{slug}/eval_results.yaml").status_code == 404
    assert client.get(f"/models/{slug}/model-index.yaml").status_code == 404


def test_the_hub_results_give_each_tables_avg_under_the_benchmark_with_its_source(
    client, random_run, settings
):
    settings.MIRRORBENCH_HUB_DATASET = "someone/mirrorbench"
    response = client.get(f"/models/{random_run.model_entry.slug}/eval_results.yaml")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    results = yaml.safe_load(response.content)
    # Every table's pooled cell, then the overall table's tracks (a robot-only run: no human).
    assert [r["dataset"] for r in results] == [
        {"id": "someone/mirrorbench", "task_id": task}
        for task in ("overall", "level-0", "level-1", "level-2", "level-3", "overall-robot")
    ]
    run = Run.objects.get(pk=random_run.pk)
    row = RunScore.objects.get(run=random_run, table=OVERALL, track=OVERALL)
    first = results[0]
    assert first["value"] == published_float(row.avg)
    assert first["date"] == run.finished.date().isoformat()
    assert first["source"] == {
        "url": f"http://testserver/runs/{random_run.pk}/",
        "name": f"MirrorBench leaderboard, run {random_run.pk} ({run.get_source_display()})",
    }
    low, high = row.ci["avg"]
    assert f"interval over scenes {low:.3f}-{high:.3f}" in first["notes"]
    assert "AVG, the mean of TSR, SIR, FCR and PCR" in first["notes"]
    robot = RunScore.objects.get(run=random_run, table=OVERALL, track="robot")
    assert results[-1]["value"] == published_float(robot.avg)


def test_the_model_card_results_name_task_dataset_metrics_and_source(client, random_run):
    response = client.get(f"/models/{random_run.model_entry.slug}/model-index.yaml")
    assert response.status_code == 200
    document = yaml.safe_load(response.content)
    (entry,) = document["model-index"]
    assert entry["name"] == "Random"
    results = entry["results"]
    # Every table's pooled cell, then the overall table's tracks (a robot-only run: no human).
    assert [(r["dataset"]["config"], r["dataset"]["split"]) for r in results] == [
        ("overall", "all"),
        ("level-0", "all"),
        ("level-1", "all"),
        ("level-2", "all"),
        ("level-3", "all"),
        ("overall", "robot"),
    ]
    overall = results[0]
    assert overall["task"]["type"] and overall["dataset"]["type"] == "mirrorbench"
    row = RunScore.objects.get(run=random_run, table=OVERALL, track=OVERALL)
    assert {m["type"]: m["value"] for m in overall["metrics"]} == {
        m: published_float(getattr(row, m)) for m in METRICS
    }
    assert all(m["name"] for m in overall["metrics"])
    assert overall["source"]["url"] == f"http://testserver/runs/{random_run.pk}/"


def test_the_model_page_offers_the_badge_markdown_and_the_results(client, random_run):
    slug = random_run.model_entry.slug
    page = client.get(f"/models/{slug}/").content.decode()
    badge = f"http://testserver/models/{slug}/badge.svg?metric=overall_avg"
    assert f"[![MirrorBench Overall AVG]({badge})](http://testserver/models/{slug}/)" in page
    assert f'href="http://testserver/models/{slug}/eval_results.yaml"' in page
    assert f'href="http://testserver/models/{slug}/model-index.yaml"' in page
