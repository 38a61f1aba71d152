"""``manage.py import_bundle`` refuses crafted bundles in one clear message and writes nothing.

Each crafted input is refused with a CommandError naming the line and the field; the model
entry it names is not created (the entry and the run are written in one transaction), and no
run, episode or step appears.
"""

import json

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError

from evaluation.bundle import MAX_LINE_BYTES
from leaderboard.models import Episode, ModelEntry, Run, Step
from leaderboard.runs import imports
from tests.leaderboard.factories import import_run, make_bundle

pytestmark = pytest.mark.django_db
SCENES = "female_1-mano_white-bread,nova_carter-allegro-logo_0"


@pytest.fixture(scope="module")
def clean_bundle(tmp_path_factory):
    return make_bundle(tmp_path_factory.mktemp("bundles") / "clean.jsonl", scenes=SCENES)


@pytest.fixture
def clean(clean_bundle):
    return [json.loads(line) for line in clean_bundle.read_text().splitlines()]


@pytest.fixture
def existing(clean_bundle):
    """A model already on the leaderboard, with a run, its episodes and steps."""
    return import_run(clean_bundle, "Existing model")


@pytest.fixture
def refused(tmp_path, existing):
    """Import crafted lines (records or raw bytes) as a new model; return the refusal."""

    def refused(lines, model="Newcomer"):
        path = tmp_path / "crafted.jsonl"
        raw = [line if isinstance(line, bytes) else json.dumps(line).encode() for line in lines]
        path.write_bytes(b"\n".join(raw) + b"\n")
        before = counts()
        with pytest.raises(CommandError) as caught:
            call_command("import_bundle", str(path), "--model", model)
        assert counts() == before
        assert not ModelEntry.objects.filter(name="Newcomer").exists()
        message = str(caught.value)
        assert "nothing was imported" in message and "Traceback" not in message
        return message

    return refused


def counts():
    return tuple(m.objects.count() for m in (ModelEntry, Run, Episode, Step))


def with_step(record, **fields):
    return {**record, "steps": [{**record["steps"][0], **fields}, *record["steps"][1:]]}


def test_a_clean_bundle_is_imported_as_a_new_model(clean_bundle, existing, capsys):
    call_command("import_bundle", str(clean_bundle), "--model", "Newcomer")
    entry = ModelEntry.objects.get(name="Newcomer")
    assert Run.objects.get(model_entry=entry).episodes.count() == 8
    assert "8 episodes" in capsys.readouterr().out


def test_non_utf8_bytes_are_refused(clean, refused):
    line = json.dumps(clean[2]).encode()
    message = refused([*clean[:2], line[:40] + b"\xff" + line[40:], *clean[3:]])
    assert "line 3: byte 41: not UTF-8 (0xff)" in message


def test_deep_nesting_is_refused(clean, refused):
    message = refused([*clean[:2], b"[" * 100_000, *clean[3:]])
    assert "line 3: byte 33: arrays and objects nest deeper than the limit of 32" in message


def test_integers_too_large_for_the_database_are_refused(clean, refused):
    message = refused([*clean[:2], with_step(clean[2], input_tokens=10**30), *clean[3:]])
    assert (
        "line 3: steps/0/input_tokens: 1000000000000000000000000000000 is greater than the "
        "maximum of 2147483647"
    ) in message


def test_integers_beyond_a_64_bit_column_are_refused_in_the_header(clean, refused):
    message = refused([{**clean[0], "seed": 2**64}, *clean[1:]])
    assert "header (line 1): seed: 18446744073709551616 is greater than the maximum" in message


def test_negative_counts_are_refused(clean, refused):
    message = refused([*clean[:2], with_step(clean[2], output_tokens=-3), *clean[3:]])
    assert "line 3: steps/0/output_tokens: -3 is less than the minimum of 0" in message


def test_over_long_strings_are_refused(clean, refused):
    message = refused([*clean[:2], with_step(clean[2], frame_key="k" * 65), *clean[3:]])
    assert "line 3: steps/0/frame_key: " in message
    assert "is longer than 64 characters" in message
    agent = {**clean[0]["agent"], "name": "a" * 301}
    message = refused([{**clean[0], "agent": agent}, *clean[1:]])
    assert "header (line 1): agent/name: a string of 301 characters" in message


def test_an_over_long_line_is_refused(clean, refused):
    long_line = b'{"type": "episode", "error": "' + b"x" * MAX_LINE_BYTES + b'"}'
    message = refused([*clean[:2], long_line, *clean[3:]])
    assert f"line 3: longer than the limit of {MAX_LINE_BYTES} bytes" in message


def test_truncated_json_is_refused(clean, refused):
    message = refused([*clean[:2], json.dumps(clean[2])[:100].encode(), *clean[3:]])
    assert "line 3: not JSON: " in message and "(column " in message


def test_a_truncated_last_line_is_refused(clean, refused):
    message = refused([*clean[:-1], json.dumps(clean[-1])[:100].encode()])
    assert f"line {len(clean)}: the last line is cut off" in message


def test_a_json_scalar_line_is_refused(clean, refused):
    message = refused([*clean[:2], b"42", *clean[3:]])
    assert "line 3: (record): a JSON number, expected an episode record" in message


def test_a_refused_bundle_leaves_an_existing_model_as_it_was(clean, refused, existing):
    runs = existing.model_entry.runs.count()
    refused([*clean[:2], with_step(clean[2], input_tokens=-1), *clean[3:]], model="Existing model")
    assert existing.model_entry.runs.count() == runs


def test_an_import_failing_after_the_entry_was_written_leaves_no_entry(
    clean_bundle, existing, monkeypatch
):
    def fail(*, run):
        raise DatabaseError("disk full")

    monkeypatch.setattr(imports, "run_scores_refresh", fail)
    before = counts()
    with pytest.raises(CommandError, match="the database refused the import"):
        call_command("import_bundle", str(clean_bundle), "--model", "Newcomer")
    assert counts() == before


def test_the_refusal_quotes_at_most_twenty_problems(clean, refused):
    crafted = [clean[0], *[{**r, "level": 9} for r in clean[1:]] * 4]
    message = refused(crafted)
    assert "... and " in message and "mirrorbench verify" in message
    assert len(message.splitlines()) == 1 + 20 + 1
