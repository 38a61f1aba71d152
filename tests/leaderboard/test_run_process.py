"""A run's process metrics on the site: /runs/<id>/process.csv and /api/runs/<id>/process/."""

from __future__ import annotations

import csv
import io
import json

import pytest

from evaluation.bundle import read_bundle
from evaluation.cli import main
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.models import ModelEntry, Run
from leaderboard.runs.imports import run_import_bundle
from tests.leaderboard.factories import make_bundle

pytestmark = pytest.mark.django_db

SCENE = "male_1-mano_brown-leaf_0"
ANSWERS = [
    "Thought: my reflection is in the mirror; move backward.\nChoice: [6]",
    "Thought: I'll move up.\nChoice: [2]",
]


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("process")
    script = folder / "script.json"
    script.write_text(json.dumps(ANSWERS))
    return make_bundle(folder / "b.jsonl", f"scripted:{script}", scenes=SCENE, levels=(0, 3))


@pytest.fixture
def run(scripted) -> Run:
    entry = model_entry_upsert(name="Talker", kind=ModelEntry.Kind.OPEN_WEIGHTS)
    return run_import_bundle(model_entry=entry, bundle=read_bundle(scripted)).run


def test_the_csv_and_the_api_give_what_mirrorbench_score_gives(client, run, scripted, capsys):
    assert main(["score", str(scripted), "--json"]) == 0
    expected = json.loads(capsys.readouterr().out)["process"]
    api = client.get(f"/api/runs/{run.pk}/process/").json()
    assert api == {"run": run.pk, "condition": "main", "process": expected}
    response = client.get(f"/runs/{run.pk}/process.csv")
    assert response.status_code == 200
    lines = list(csv.DictReader(io.StringIO(response.content.decode())))
    by_key = {(line["table"], line["track"]): line for line in lines}
    assert len(lines) == 6 * 3  # four levels, L2+L3 and overall; human, robot, overall
    level3 = by_key[("3", "overall")]
    assert level3["method"] == "lexicon-v1"
    assert (level3["mirror_mentions"], level3["own_reflection"], level3["consistent"]) == (
        "1",
        "1",
        "1",
    )
    assert by_key[("0", "overall")]["mirror_share"] == ""


def test_a_private_runs_process_metrics_are_its_owners(client, run, alice, bob):
    Run.objects.filter(pk=run.pk).update(visibility=Run.Visibility.PRIVATE, owner=alice)
    client.force_login(bob)
    assert client.get(f"/runs/{run.pk}/process.csv").status_code == 404
    assert client.get(f"/api/runs/{run.pk}/process/").status_code == 404
    client.force_login(alice)
    assert client.get(f"/runs/{run.pk}/process.csv").status_code == 200
    assert client.get(f"/api/runs/{run.pk}/process/").status_code == 200


def test_the_replay_marks_what_each_answer_says(client, run):
    episode = run.episodes.get(level=3)
    page = client.get(f"/episodes/{episode.pk}/").content.decode()
    assert 'data-field="says">names the mirror; calls the reflection its own</dd>' in page
    second = client.get(f"/episodes/{episode.pk}/?step=1").content.decode()
    assert "contradicts itself: its reasoning says move up, its choice is 2" in second
