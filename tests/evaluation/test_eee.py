"""Every Eval Ever exports (``mirrorbench export-eee``, evaluation.eee), checked with the
``every-eval-ever`` package's own validator (its pydantic models and its datastore checks),
not a copy of its schema."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from evaluation.bundle import episode_results, read_bundle
from evaluation.cli import main
from evaluation.details import EpisodeExtras, details
from evaluation.eee import (
    SCHEMA_VERSION,
    ModelIdentity,
    Source,
    bundle_time,
    eee_export,
    path_component,
    result_id,
    scores_from_results,
    write_eee,
)
from evaluation.metrics import bootstrap_ci, repeat_spread, score_json
from evaluation.vocabulary import LEVEL_KEYS, METRICS, OVERALL
from tests.evaluation.bundle_records import errored_episode, model_header
from tests.parts import import_part

EEE_HINT = "make install installs it (requirements-eee.txt)"


@pytest.fixture(scope="module")
def validation() -> Any:
    """every-eval-ever's validator: under CI its absence fails the tests instead of skipping."""
    return import_part("every_eval_ever.validator.validation_core", "every-eval-ever", EEE_HINT)


def validate(validation: Any, root: Path) -> dict[str, Any]:
    """Validate every file under ``root`` as the datastore's validator does: the schema's
    models, then the path, companion-file, score and model checks, with ``root`` as the
    datastore's repository. Return each file's report."""
    files = {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}
    return {
        name: validation.validate_file(
            path,
            repo_path=name,
            available_files=frozenset(files),
            read_repo_file=lambda repo_path: files[repo_path].read_text(),
            run_semantic_checks=True,
        )
        for name, path in files.items()
    }


def schema_errors(root: Path) -> list[str]:
    """Return where the files under ``root`` break the JSON schemas the package ships: they
    are stricter than its models in places (an instance's ``metadata`` values are strings)."""
    schema = import_part("every_eval_ever.schema", "every-eval-ever", EEE_HINT)
    validators = {
        ".json": Draft7Validator(schema.schema_json("eval.schema.json")),
        ".jsonl": Draft7Validator(schema.schema_json("instance_level_eval.schema.json")),
    }
    errors = []
    for path in sorted(root.rglob("*.json*")):
        text = path.read_text()
        documents = (
            [json.loads(line) for line in text.splitlines()]
            if path.suffix == ".jsonl"
            else [json.loads(text)]
        )
        for document in documents:
            errors += [
                f"{path.name}: {e.message}" for e in validators[path.suffix].iter_errors(document)
            ]
    return errors


def assert_valid(validation: Any, root: Path) -> dict[str, Any]:
    reports = validate(validation, root)
    assert reports
    for name, report in reports.items():
        assert report.valid, (name, report.errors[:5])
        assert report.warnings == [], (name, report.warnings[:5])
    assert schema_errors(root) == []
    return reports


def _files(out: Path) -> tuple[dict[str, Any], list[dict[str, Any]], Path, Path]:
    (aggregate_path,) = out.rglob("*.json")
    (samples_path,) = out.rglob("*_samples.jsonl")
    aggregate = json.loads(aggregate_path.read_text())
    samples = [json.loads(line) for line in samples_path.read_text().splitlines()]
    return aggregate, samples, aggregate_path, samples_path


@pytest.fixture(scope="module")
def repeated_bundle(tmp_path_factory) -> Path:
    """The random baseline on the robot track, every level, two repeats (144 episodes)."""
    path = tmp_path_factory.mktemp("eee") / "random.jsonl"
    argv = ["run", "--agent", "random", "--scenes", "robot", "--repeats", "2"]
    assert main([*argv, "--image-size", "32", "--out", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def exported(repeated_bundle, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("eee-out")
    assert main(["export-eee", str(repeated_bundle), "--out", str(out)]) == 0
    return out


def test_the_validator_runs_here_and_knows_the_schema_version_written(validation):
    schema = import_part("every_eval_ever.schema", "every-eval-ever", EEE_HINT)
    assert schema.get_schema_version() == SCHEMA_VERSION


def test_the_command_writes_both_files_at_their_datastore_paths_and_they_validate(
    validation, exported
):
    aggregate, _, aggregate_path, samples_path = _files(exported)
    folder = aggregate_path.parent.relative_to(exported).as_posix()
    assert folder == "data/mirrorbench/mirrorbench/random"
    assert samples_path.name == aggregate_path.stem + "_samples.jsonl"
    assert_valid(validation, exported)
    assert aggregate["model_info"]["id"] == "mirrorbench/random"
    assert aggregate["source_metadata"]["evaluator_relationship"] == "first_party"
    assert aggregate["source_metadata"]["source_type"] == "evaluation_run"
    assert aggregate["eval_library"]["name"] == "mirrorbench"
    assert aggregate["eval_library"]["additional_details"]["benchmark_version"] == "v3"


def test_the_samples_checksum_and_rows_are_the_files(exported):
    aggregate, samples, _, samples_path = _files(exported)
    detail = aggregate["detailed_evaluation_results"]
    assert detail["checksum"] == hashlib.sha256(samples_path.read_bytes()).hexdigest()
    assert detail["hash_algorithm"] == "sha256"
    assert detail["total_rows"] == len(samples) == 144
    assert detail["file_path"] == samples_path.relative_to(samples_path.parents[4]).as_posix()


def test_every_cell_and_metric_carries_the_bootstrap_interval_the_site_computes(
    exported, repeated_bundle
):
    aggregate, *_ = _files(exported)
    results = episode_results(read_bundle(repeated_bundle).episodes)
    point = score_json(results)
    intervals = bootstrap_ci(results, n_resamples=1000)
    by_id = {r["evaluation_result_id"]: r for r in aggregate["evaluation_results"]}
    # The human track has no episode: only the robot and pooled columns are written.
    assert len(by_id) == 5 * 2 * 5
    for table in (*LEVEL_KEYS, OVERALL):
        tables = point["overall"] if table == OVERALL else point["levels"][table]
        cis = intervals["overall"] if table == OVERALL else intervals["levels"][table]
        assert tables["human"] is None and result_id(table, "human", "tsr") not in by_id
        for track in ("robot", OVERALL):
            for metric in METRICS:
                details_ = by_id[result_id(table, track, metric)]["score_details"]
                assert details_["score"] == tables[track][metric]
                interval = details_["uncertainty"]["confidence_interval"]
                assert (interval["lower"], interval["upper"]) == cis[track][metric]
                assert interval["confidence_level"] == 0.95
                assert details_["uncertainty"]["num_bootstrap_samples"] == 1000


def test_a_run_of_repeats_says_how_they_differ(exported, repeated_bundle):
    aggregate, *_ = _files(exported)
    spread = repeat_spread(episode_results(read_bundle(repeated_bundle).episodes), OVERALL)
    assert spread is not None
    by_id = {r["evaluation_result_id"]: r for r in aggregate["evaluation_results"]}
    details_ = by_id["overall/overall/avg"]["score_details"]["details"]
    assert details_["repeats"] == "2"
    assert details_["repeat_sd"] == json.dumps(spread.sd["avg"])
    assert details_["repeat_flipped_episodes"] == str(spread.flipped)
    assert "details" not in by_id["overall/robot/avg"]["score_details"]
    assert {s["metadata"]["repeat"] for s in _files(exported)[1]} == {"0", "1"}


def test_an_episode_is_an_agentic_record_of_its_steps_linked_to_its_levels_tsr(
    exported, repeated_bundle
):
    aggregate, samples, *_ = _files(exported)
    bundle = read_bundle(repeated_bundle)
    episode = next(e for e in bundle.episodes if e["level"] == 2 and e.get("repeat", 0) == 1)
    key = f"{episode['scene_id']}/L2/1"
    (record,) = [s for s in samples if s["sample_id"] == key]
    assert record["evaluation_id"] == aggregate["evaluation_id"]
    assert record["model_id"] == aggregate["model_info"]["id"]
    assert record["evaluation_result_id"] == "level-2/robot/tsr"
    assert record["interaction_type"] == "agentic" and record["output"] is None
    steps = episode["steps"]
    assert [m["role"] for m in record["messages"]] == ["user", "assistant"] * len(steps)
    assert [m["content"] for m in record["messages"][1::2]] == [s["response"] for s in steps]
    assert [a["extracted_value"] for a in record["answer_attribution"]] == [
        str(s["option"]) for s in steps
    ]
    assert record["answer_attribution"][-1]["is_terminal"] is True
    assert record["evaluation"]["is_correct"] is episode["success"]
    assert record["evaluation"]["score"] == episode["metrics"]["tsr"]
    assert json.loads(record["metadata"]["frame_keys"]) == [s["frame_key"] for s in steps]
    assert "frame_urls" not in record["metadata"]  # no site: no address
    assert json.loads(record["metadata"]["distances"]) == episode["distances"]
    assert record["metadata"]["avg"] == json.dumps(episode["metrics"]["avg"])
    # The level and track's TSR is the mean of its records' scores.
    by_id = {r["evaluation_result_id"]: r for r in aggregate["evaluation_results"]}
    level_2 = [s["evaluation"]["score"] for s in samples if s["sample_id"].count("/L2/")]
    assert by_id["level-2/robot/tsr"]["score_details"]["score"] == sum(level_2) / len(level_2)


def test_the_same_bundle_gives_the_same_bytes(exported, repeated_bundle, tmp_path):
    assert main(["export-eee", str(repeated_bundle), "--out", str(tmp_path)]) == 0
    for path in exported.rglob("*.*"):
        assert (tmp_path / path.relative_to(exported)).read_bytes() == path.read_bytes()


def test_a_control_run_names_its_condition_and_validates(validation, tmp_path):
    bundle = tmp_path / "no-mirror.jsonl"
    argv = ["run", "--agent", "random", "--scenes", "robot", "--levels", "0"]
    assert (
        main([*argv, "--condition", "no-mirror", "--image-size", "32", "--out", str(bundle)]) == 0
    )
    out = tmp_path / "out"
    assert main(["export-eee", str(bundle), "--out", str(out)]) == 0
    assert_valid(validation, out)
    aggregate, samples, *_ = _files(out)
    first = aggregate["evaluation_results"][0]
    assert first["evaluation_name"] == "MirrorBench v3, Level 0, Robot (No mirror control)"
    assert first["metric_config"]["additional_details"]["condition"] == "no-mirror"
    assert aggregate["eval_library"]["additional_details"]["condition"] == "no-mirror"
    assert {s["metadata"]["condition"] for s in samples} == {"no-mirror"}


def test_the_validator_refuses_what_the_schema_forbids(validation, exported, tmp_path):
    """The validation above is not vacuous: the same files, broken, are refused."""
    out = tmp_path / "broken"
    for path in exported.rglob("*.*"):
        target = out / path.relative_to(exported)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    aggregate_path, samples_path = next(out.rglob("*.json")), next(out.rglob("*.jsonl"))
    aggregate = json.loads(aggregate_path.read_text())
    del aggregate["evaluation_results"][0]["metric_config"]["max_score"]
    aggregate_path.write_text(json.dumps(aggregate))
    lines = samples_path.read_text().splitlines()
    record = json.loads(lines[0])
    record["metadata"]["level"] = 2  # metadata values must be strings
    samples_path.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    reports = validate(validation, out)
    assert not reports[aggregate_path.relative_to(out).as_posix()].valid
    assert schema_errors(out) == [
        f"{aggregate_path.name}: 'max_score' is a required property",
        f"{samples_path.name}: 2 is not of type 'string'",
    ]


def test_a_model_episode_keeps_its_tokens_its_error_and_a_sites_frame_urls(validation, tmp_path):
    header = model_header()
    errored = errored_episode(finished="2026-12-01T10:00:09+00:00")
    extras = [EpisodeExtras(url="https://x/episodes/3/", frame_urls=["https://x/frames/ab.png"])]
    export = eee_export(
        header=header,
        scores={},
        source=Source(kind="evaluated", relationship="third_party", url="https://x/"),
        model=ModelIdentity(
            name="GPT-4o",
            developer="openai",
            model="gpt-4o",
            deployment="externally_managed",
            availability="closed_weights",
            platform="openai",
        ),
        retrieved=bundle_time(header, [errored]),
        details=details(header, [errored], extras=extras),
    )
    write_eee(export, tmp_path)
    assert_valid(validation, tmp_path)
    (record,) = [json.loads(line) for line in (export.instances or b"").splitlines()]
    assert record["token_usage"] == {
        "input_tokens": 1200,
        "output_tokens": 30,
        "total_tokens": 1230,
    }
    assert record["performance"] == {"latency_ms": 1500.0}
    assert record["error"] == "[rate_limited HTTP 429] slow down"
    assert record["evaluation"] == {"score": 0.0, "is_correct": False, "num_turns": 2}
    assert record["answer_attribution"] == []  # the answer named no option
    assert record["metadata"]["counted"].startswith("no")
    assert json.loads(record["metadata"]["frame_urls"]) == ["https://x/frames/ab.png"]
    assert record["metadata"]["episode_url"] == "https://x/episodes/3/"
    assert export.aggregate["retrieved_timestamp"] == "1796119209"
    assert export.aggregate["model_info"]["inference_platform"] == "openai"


def test_a_bundle_that_does_not_verify_is_not_exported(repeated_bundle, tmp_path, capsys):
    lines = repeated_bundle.read_text().splitlines()
    record = json.loads(lines[1])
    record["metrics"]["avg"] = 0.5
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps(record), *lines[2:]]) + "\n")
    out = tmp_path / "out"
    assert main(["export-eee", str(bad), "--out", str(out)]) == 1
    assert "does not verify" in capsys.readouterr().err
    assert not out.exists()


def test_a_model_id_is_given_as_developer_slash_model(repeated_bundle, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["export-eee", str(repeated_bundle), "--out", str(out), "--model-id", "x"]) == 2
    assert "--model-id: model id must be DEVELOPER/MODEL, got 'x'" in capsys.readouterr().err
    assert not out.exists()
    argv = ["export-eee", str(repeated_bundle), "--out", str(out), "--model-id", "acme/Bot 1"]
    assert main(argv) == 0
    aggregate, *_ = _files(out)
    assert aggregate["model_info"]["id"] == "acme/Bot-1"


@pytest.mark.parametrize(
    ("text", "component"),
    [
        ("gpt-4o", "gpt-4o"),
        ("a b/c", "a-b-c"),
        ("data", "mirrorbench-data"),
        ("", "mirrorbench-model"),
    ],
)
def test_a_path_component_is_portable(text, component):
    assert path_component(text) == component


def test_scores_from_results_are_the_sites_cells(repeated_bundle):
    results = episode_results(read_bundle(repeated_bundle).episodes)
    cells = scores_from_results(results, n_resamples=50)
    assert cells["overall", OVERALL].episodes == 144
    assert cells["0", "robot"].episodes == 36
    assert cells["overall", OVERALL].spread is not None and cells["0", "robot"].spread is None
