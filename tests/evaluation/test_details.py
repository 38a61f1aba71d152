"""A run's per-episode details as parquet (``mirrorbench export-parquet``, evaluation.details)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from evaluation.bundle import episode_results, read_bundle
from evaluation.cli import main
from evaluation.details import (
    EpisodeExtras,
    details,
    episode_key,
    episode_schema,
    step_schema,
)
from evaluation.details import episode_results as parquet_results
from evaluation.metrics import cognitive_stability, score_json
from tests.evaluation.bundle_records import errored_episode, model_header


@pytest.fixture(scope="module")
def random_bundle(tmp_path_factory) -> Path:
    """The random baseline's 264 episodes at 32 px (it looks at no image: nothing renders)."""
    path = tmp_path_factory.mktemp("random") / "random.jsonl"
    assert main(["run", "--agent", "random", "--image-size", "32", "--out", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def exported(random_bundle, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("details")
    assert main(["export-parquet", str(random_bundle), "--out", str(out)]) == 0
    return out


def test_it_writes_both_tables_and_a_card(exported, capsys):
    assert sorted(p.name for p in exported.iterdir()) == [
        "README.md",
        "episodes.parquet",
        "steps.parquet",
    ]
    episodes = pq.read_table(exported / "episodes.parquet")
    steps = pq.read_table(exported / "steps.parquet")
    assert episodes.num_rows == 264
    assert steps.num_rows == sum(len(d) - 1 for d in episodes.column("distances").to_pylist())


def test_every_column_has_its_type_whatever_the_values(exported):
    episodes = pq.read_schema(exported / "episodes.parquet")
    steps = pq.read_schema(exported / "steps.parquet")
    assert episodes.remove_metadata() == episode_schema()
    assert steps.remove_metadata() == step_schema()
    # No stringly numbers: counts are integers, scores floats, times timestamps.
    assert pa.types.is_integer(episodes.field("level").type)
    assert pa.types.is_integer(episodes.field("repeat").type)
    assert pa.types.is_integer(episodes.field("input_tokens").type)
    assert pa.types.is_floating(episodes.field("avg").type)
    assert pa.types.is_timestamp(episodes.field("started").type)
    assert pa.types.is_integer(steps.field("option").type)
    assert pa.types.is_integer(steps.field("distance").type)


def test_reading_the_parquet_back_rescores_to_the_runs_tables_to_the_last_digit(
    random_bundle, exported
):
    bundle = read_bundle(random_bundle)
    episodes = pq.read_table(exported / "episodes.parquet")
    from_parquet = parquet_results(episodes)
    from_bundle = episode_results(bundle.episodes)
    # Exact equality of every float: the same trajectories give the same tables.
    assert score_json(from_parquet) == score_json(from_bundle)
    assert cognitive_stability(from_parquet) == cognitive_stability(from_bundle)
    # The episode rows carry the bundle's metrics, and the steps table the same trajectories.
    rows = {r["episode_key"]: r for r in episodes.to_pylist()}
    for record in bundle.episodes:
        row = rows[episode_key(record["scene_id"], record["level"])]
        assert {m: row[m] for m in record["metrics"]} == record["metrics"]
        assert row["distances"] == record["distances"]
    steps = pq.read_table(exported / "steps.parquet").to_pandas()
    for key, group in steps.groupby("episode_key"):
        ordered = group.sort_values("index")
        assert [rows[key]["d0_steps"], *ordered["distance"]] == rows[key]["distances"]


def _card(exported: Path) -> tuple[dict, list[str]]:
    """The card's front matter and its Python snippets."""
    text = (exported / "README.md").read_text()
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert match
    return yaml.safe_load(match.group(1)), re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_card_is_front_matter_the_hub_reads(exported):
    front, snippets = _card(exported)
    assert front["license"] == "mit"
    assert front["task_categories"] and front["pretty_name"] == "MirrorBench details: random"
    configs = {c["config_name"]: c["data_files"] for c in front["configs"]}
    assert configs == {
        "episodes": [{"split": "train", "path": "episodes.parquet"}],
        "steps": [{"split": "train", "path": "steps.parquet"}],
    }
    assert len(snippets) == 2


def test_the_cards_pandas_snippet_runs_on_the_files_as_written(exported, monkeypatch):
    monkeypatch.chdir(exported)
    scope: dict[str, Any] = {}
    exec(_card(exported)[1][0], scope)
    assert len(scope["episodes"]) == 264
    assert "outcome" in scope["steps"].columns
    # Integer columns with nulls stay integers.
    assert str(scope["episodes"]["input_tokens"].dtype) == "Int64"


def test_the_cards_datasets_snippet_runs_on_the_files_as_written(exported, monkeypatch):
    pytest.importorskip("datasets")  # not a dependency: checked where it is installed
    monkeypatch.chdir(exported)
    scope: dict[str, Any] = {}
    exec(_card(exported)[1][1], scope)
    assert scope["episodes"].num_rows == 264


def test_a_bundle_that_does_not_verify_is_not_exported(random_bundle, tmp_path, capsys):
    lines = random_bundle.read_text().splitlines()
    record = json.loads(lines[1])
    record["metrics"]["avg"] = 0.5
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps(record), *lines[2:]]) + "\n")
    out = tmp_path / "out"
    assert main(["export-parquet", str(bad), "--out", str(out)]) == 1
    assert "does not verify" in capsys.readouterr().err
    assert not out.exists()


def test_a_model_episode_keeps_its_tokens_errors_and_a_sites_urls():
    header, errored = model_header(), errored_episode()
    extras = [EpisodeExtras(url="https://x/episodes/3/", cost_usd=0.01, frame_urls=["https://f"])]
    tables = details(header, [errored], extras=extras)
    row = tables.episodes.to_pylist()[0]
    assert row["run_id"] == 7 and row["model"] == "gpt-4o" and row["agent"] == "openai:gpt-4o"
    assert row["outcome"] == "error" and row["error_category"] == "rate_limited"
    assert row["avg"] is None and row["mirror_confused"] is None
    assert (row["input_tokens"], row["output_tokens"], row["latency_s"]) == (1200, 30, 1.5)
    assert row["cost_usd"] == 0.01 and row["episode_url"] == "https://x/episodes/3/"
    assert (row["body"], row["hand"], row["mark"]) == ("male_0", "mano_white", "splash")
    assert row["started"].isoformat() == "2026-12-01T10:00:00+00:00" and row["finished"] is None
    (step_row,) = tables.steps.to_pylist()
    assert step_row["option"] is None and step_row["parse_error"] == "no option 1-6"
    assert step_row["frame_url"] == "https://f" and step_row["repeat"] == 0
    assert "(run 7)" in tables.card
