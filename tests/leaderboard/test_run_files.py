"""A run's configuration as a run file (`/runs/<id>/run.toml`) for `mirrorbench run --config`."""

from __future__ import annotations

import json

import pytest

from evaluation.bundle import read_bundle
from evaluation.cli import main
from evaluation.config import RunConfig
from evaluation.run_file import load_run_file
from leaderboard.models import ModelEntry, Run
from leaderboard.runs.services import run_create
from tests.leaderboard.factories import ModelEntryFactory, import_run, make_bundle

pytestmark = pytest.mark.django_db

SECRET_PATH = "https://models.example/v1/deployments/d-123"


@pytest.fixture
def hosted_run(alice, django_capture_on_commit_callbacks) -> Run:
    """Alice's hosted run of a model, queued."""
    entry = ModelEntryFactory(name="GPT-4o", kind=ModelEntry.Kind.PROPRIETARY)
    config = RunConfig(
        agent="openai:gpt-4o", levels=(0, 2), scenes="robot", seed=4, image_size=64, max_tokens=300
    )
    with django_capture_on_commit_callbacks(execute=False):
        return run_create(model_entry=entry, config=config, owner=alice)


def test_a_runs_configuration_downloads_as_a_run_file_that_reads_back_the_same(
    client, hosted_run, tmp_path
):
    response = client.get(f"/runs/{hosted_run.pk}/run.toml")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="run.toml"'
    text = response.content.decode()
    assert text.startswith(f"# MirrorBench run {hosted_run.pk}: GPT-4o")
    assert "never from this file" in text
    path = tmp_path / "run.toml"
    path.write_bytes(response.content)
    assert load_run_file(path).config == hosted_run.config


def test_the_run_file_shows_the_endpoint_as_the_visitor_may_see_it(client, hosted_run, alice):
    Run.objects.filter(pk=hosted_run.pk).update(spec={**hosted_run.spec, "base_url": SECRET_PATH})
    public = client.get(f"/runs/{hosted_run.pk}/run.toml").content.decode()
    assert 'base_url = "https://models.example"' in public and "d-123" not in public
    assert "Only the run's owner sees its endpoint's path" in public
    client.force_login(alice)
    owned = client.get(f"/runs/{hosted_run.pk}/run.toml").content.decode()
    assert f'base_url = "{SECRET_PATH}"' in owned


def test_a_private_run_file_is_its_owners(client, hosted_run, alice, bob):
    Run.objects.filter(pk=hosted_run.pk).update(visibility=Run.Visibility.PRIVATE)
    assert client.get(f"/runs/{hosted_run.pk}/run.toml").status_code == 404
    client.force_login(bob)
    assert client.get(f"/runs/{hosted_run.pk}/run.toml").status_code == 404
    client.force_login(alice)
    assert client.get(f"/runs/{hosted_run.pk}/run.toml").status_code == 200


def test_an_imported_runs_file_repeats_it(client, tmp_path):
    bundle = make_bundle(tmp_path / "random.jsonl", "random", "robot", (1,), image_size=32)
    run = import_run(bundle, "Random", kind=ModelEntry.Kind.BASELINE)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert f'href="/runs/{run.pk}/run.toml"' in page
    path = tmp_path / "run.toml"
    path.write_bytes(client.get(f"/runs/{run.pk}/run.toml").content)
    assert load_run_file(path).config == RunConfig(
        agent="random", levels=(1,), scenes="robot", image_size=32
    )
    again = tmp_path / "again.jsonl"
    assert main(["run", "--config", str(path), "--out", str(again)]) == 0
    played = {(e["scene_id"], e["level"]): e["distances"] for e in read_bundle(bundle).episodes}
    replayed = {(e["scene_id"], e["level"]): e["distances"] for e in read_bundle(again).episodes}
    assert replayed == played


def test_the_bundle_header_holds_the_configuration_with_the_endpoint_as_the_visitor_may_see_it(
    client, hosted_run, alice
):
    header = hosted_run.metadata
    header["model"]["base_url"] = header["config"]["base_url"] = SECRET_PATH
    Run.objects.filter(pk=hosted_run.pk).update(
        spec={**hosted_run.spec, "base_url": SECRET_PATH}, metadata=header
    )
    public = client.get(f"/runs/{hosted_run.pk}/bundle.jsonl").content.decode()
    header = json.loads(public.splitlines()[0])
    assert header["config"]["base_url"] == "https://models.example" and "d-123" not in public
    assert header["config"]["seed"] == 4 and header["config"]["max_tokens"] == 300
    client.force_login(alice)
    own = json.loads(client.get(f"/runs/{hosted_run.pk}/bundle.jsonl").content.splitlines()[0])
    assert own["config"]["base_url"] == SECRET_PATH
