"""A run's results in the Every Eval Ever schema on the site: ``/runs/<id>/eee.json`` and
``/runs/<id>/eee-instances.jsonl``, validated with the ``every-eval-ever`` package."""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from evaluation.vocabulary import METRICS
from leaderboard.models import ModelEntry, Run, RunScore
from leaderboard.runs.imports import reference_results_load
from tests.evaluation.test_eee import EEE_HINT, assert_valid
from tests.leaderboard.factories import import_run, make_bundle
from tests.parts import import_part

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def validation() -> Any:
    return import_part("every_eval_ever.validator.validation_core", "every-eval-ever", EEE_HINT)


@pytest.fixture(scope="module")
def runs(module_rows, tmp_path_factory) -> dict[str, Run]:
    """The random baseline evaluated here and the same bundle uploaded as a model's, on the
    robot track at every level (72 episodes each), images of 32 px."""
    bundle = make_bundle(
        tmp_path_factory.mktemp("eee") / "random.jsonl", "random", "robot", image_size=32
    )
    with module_rows():
        return {
            "evaluated": import_run(bundle, "Random", kind=ModelEntry.Kind.BASELINE),
            "verified": import_run(
                bundle,
                "Acme Bot 1",
                organisation="Acme Labs",
                source=Run.Source.VERIFIED,
            ),
        }


def _download(client, run: Run, root: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Fetch both files and put them under ``root`` at the datastore paths they name."""
    response = client.get(f"/runs/{run.pk}/eee.json")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    aggregate = json.loads(response.content)
    detail = aggregate["detailed_evaluation_results"]
    folder = detail["file_path"].rsplit("/", 1)[0]
    (name,) = re.findall(r'filename="([^"]+)"', response["Content-Disposition"])
    assert re.fullmatch(r"[0-9a-f-]{36}\.json", name)
    (root / folder).mkdir(parents=True)
    (root / folder / name).write_bytes(response.content)
    samples = client.get(f"/runs/{run.pk}/eee-instances.jsonl")
    assert samples.status_code == 200
    assert f'filename="{name[:-5]}_samples.jsonl"' in samples["Content-Disposition"]
    (root / detail["file_path"]).write_bytes(samples.content)
    assert hashlib.sha256(samples.content).hexdigest() == detail["checksum"]
    return aggregate, [json.loads(line) for line in samples.content.splitlines()]


def test_an_evaluated_runs_files_validate_and_say_who_evaluated_it(
    client, runs, validation, tmp_path
):
    run = runs["evaluated"]
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert f'href="/runs/{run.pk}/eee.json"' in page
    assert f'href="/runs/{run.pk}/eee-instances.jsonl"' in page
    aggregate, samples = _download(client, run, tmp_path)
    assert_valid(validation, tmp_path)
    source = aggregate["source_metadata"]
    assert source["evaluator_relationship"] == "first_party"  # the site's own baseline
    assert source["source_type"] == "evaluation_run"
    assert source["additional_details"]["mirrorbench_source"] == "evaluated"
    assert source["additional_details"]["run_url"] == f"http://testserver/runs/{run.pk}/"
    assert aggregate["model_info"]["id"] == "mirrorbench/random"
    assert aggregate["model_info"]["name"] == "Random"
    first = aggregate["evaluation_results"][0]
    assert first["source_data"]["url"] == ["http://testserver/scenes/"]
    assert first["generation_config"]["additional_details"]["image_size"] == "32"
    assert len(samples) == 72 == aggregate["detailed_evaluation_results"]["total_rows"]
    # The same run gives the same bytes.
    again = client.get(f"/runs/{run.pk}/eee.json").content
    assert again == (next(tmp_path.rglob("*.json"))).read_bytes()


def test_the_scores_and_intervals_are_the_runs_stored_rows(client, runs, tmp_path):
    run = runs["evaluated"]
    aggregate, _ = _download(client, run, tmp_path)
    by_id = {r["evaluation_result_id"]: r["score_details"] for r in aggregate["evaluation_results"]}
    rows = list(RunScore.objects.filter(run=run))
    assert rows and len(by_id) == len(rows) * len(METRICS)
    for row in rows:
        table = "overall" if row.table == "overall" else f"level-{row.table}"
        for metric in METRICS:
            cell = by_id[f"{table}/{row.track}/{metric}"]
            assert cell["score"] == getattr(row, metric)
            interval = cell["uncertainty"]["confidence_interval"]
            assert [interval["lower"], interval["upper"]] == row.ci[metric]
            assert cell["uncertainty"]["num_samples"] == row.episodes


def test_each_instance_names_its_frames_and_replay_as_the_details_do(client, runs, tmp_path):
    run = runs["evaluated"]
    _, samples = _download(client, run, tmp_path)
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/runs/{run.pk}/details.zip").content))
    episodes = pq.read_table(io.BytesIO(archive.read("episodes.parquet"))).to_pylist()
    steps = pq.read_table(io.BytesIO(archive.read("steps.parquet"))).to_pylist()
    by_key = {s["sample_id"]: s["metadata"] for s in samples}
    assert set(by_key) == {e["episode_key"] for e in episodes}
    for episode in episodes:
        metadata = by_key[episode["episode_key"]]
        assert metadata["episode_url"] == episode["episode_url"]
        urls = [s["frame_url"] for s in steps if s["episode_key"] == episode["episode_key"]]
        assert json.loads(metadata["frame_urls"]) == urls
        assert all(u.startswith("http://testserver/frames/") for u in urls)


def test_an_uploaded_run_is_said_to_be_uploaded_by_someone_unknown(
    client, runs, validation, tmp_path
):
    aggregate, _ = _download(client, runs["verified"], tmp_path)
    assert_valid(validation, tmp_path)
    assert aggregate["source_metadata"]["evaluator_relationship"] == "other"
    assert aggregate["source_metadata"]["additional_details"]["mirrorbench_source"] == "verified"
    info = aggregate["model_info"]
    assert info["id"] == "Acme-Labs/acme-bot-1" and info["developer"] == "Acme Labs"
    assert info["additional_details"]["model_availability"] == "open_weights"
    assert "evaluation_timestamp" not in aggregate


def test_the_papers_rows_are_third_party_documentation_without_samples(
    client, validation, tmp_path
):
    reference_results_load()
    run = Run.objects.filter(source=Run.Source.REPORTED).select_related("model_entry").first()
    assert run is not None
    response = client.get(f"/runs/{run.pk}/eee.json")
    assert response.status_code == 200
    aggregate = json.loads(response.content)
    assert "detailed_evaluation_results" not in aggregate
    (name,) = re.findall(r'filename="([^"]+)"', response["Content-Disposition"])
    folder = tmp_path / "data" / "mirrorbench" / aggregate["model_info"]["id"]
    folder.mkdir(parents=True)
    (folder / name).write_bytes(response.content)
    assert_valid(validation, tmp_path)
    source = aggregate["source_metadata"]
    assert (source["source_type"], source["evaluator_relationship"]) == (
        "documentation",
        "third_party",
    )
    assert source["additional_details"]["citation"] == run.citation
    assert all("uncertainty" not in r["score_details"] for r in aggregate["evaluation_results"])
    assert client.get(f"/runs/{run.pk}/eee-instances.jsonl").status_code == 404


def test_a_private_run_is_its_owners_alone(client, runs, alice, charlie):
    run = runs["evaluated"]
    Run.objects.filter(pk=run.pk).update(visibility=Run.Visibility.PRIVATE, owner=alice)
    for path in (f"/runs/{run.pk}/eee.json", f"/runs/{run.pk}/eee-instances.jsonl"):
        assert client.get(path).status_code == 404
        client.force_login(charlie)
        assert client.get(path).status_code == 404
        client.force_login(alice)
        assert client.get(path).status_code == 200
        client.logout()


@pytest.mark.parametrize(
    "path",
    [
        "/runs/999999/eee.json",
        "/runs/999999/eee-instances.jsonl",
        "/runs/x/eee.json",
        "/runs/-1/eee.json",
    ],
)
def test_a_bad_id_is_not_found(client, path):
    assert client.get(path).status_code == 404
