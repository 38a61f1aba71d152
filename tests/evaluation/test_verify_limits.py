"""``mirrorbench verify`` refuses crafted bundles with a message naming the line and the field.

Every string and number of a bundle is bounded by the schema, and a line is read only when it
is UTF-8, short enough and shallow enough; nothing crafted ends in a traceback.
"""

import json

import pytest

from evaluation.agents import RandomAgent
from evaluation.bundle import MAX_DEPTH, MAX_LINE_BYTES, BundleError, read_bundle
from evaluation.cli import main
from evaluation.runner import run
from evaluation.verify import MAX_ERRORS_PER_RECORD, verify_bundle
from simulation.catalogue import select_scenes

SCENES = select_scenes("female_1-mano_white-bread,nova_carter-allegro-logo_0")


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundles") / "clean.jsonl"
    run(
        lambda: RandomAgent(4),
        SCENES,
        [0, 1],
        out,
        header_extra={"model": None, "generation": None},
        seed=4,
        progress_stream=None,
    )
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.fixture
def write(tmp_path):
    """Write records (dicts) or raw lines (bytes) as a bundle; return its path."""

    def write(lines):
        path = tmp_path / "crafted.jsonl"
        raw = [line if isinstance(line, bytes) else json.dumps(line).encode() for line in lines]
        path.write_bytes(b"\n".join(raw) + b"\n")
        return path

    return write


def copy(records):
    return json.loads(json.dumps(records))


def refusal(path):
    """Return the one BundleError message reading ``path`` gives."""
    with pytest.raises(BundleError) as caught:
        read_bundle(path)
    return str(caught.value)


def test_a_clean_bundle_still_verifies(clean, write):
    assert verify_bundle(read_bundle(write(clean))) == []


def test_non_utf8_bytes_are_refused_naming_the_line_and_the_byte(clean, write):
    line = json.dumps(clean[2]).encode()
    crafted = [*clean[:2], line[:40] + b"\xff\xfe" + line[40:], *clean[3:]]
    message = refusal(write(crafted))
    assert "line 3: byte 41: not UTF-8 (0xff)" in message


def test_deep_nesting_is_refused_before_it_is_parsed(clean, write):
    message = refusal(write([*clean[:2], b"[" * 100_000, *clean[3:]]))
    assert f"line 3: byte {MAX_DEPTH + 1}: arrays and objects nest deeper than" in message
    balanced = b"[" * 50_000 + b"]" * 50_000
    assert "line 3: byte" in refusal(write([*clean[:2], balanced, *clean[3:]]))


def test_brackets_inside_strings_do_not_count_as_nesting(clean, write):
    records = copy(clean)
    records[1]["steps"][0]["parse_error"] = "[{" * 1000 + '"\\' + "[" * 100
    found = verify_bundle(read_bundle(write(records)))
    assert all("nest" not in p for p in found)


def test_too_large_integers_are_refused_naming_the_field(clean, write):
    records = copy(clean)
    records[2]["steps"][0]["input_tokens"] = 10**30
    found = verify_bundle(read_bundle(write(records)))
    assert (
        "line 3: steps/0/input_tokens: 1000000000000000000000000000000 is greater than the "
        "maximum of 2147483647"
    ) in found
    records = copy(clean)
    records[0]["seed"] = 2**63
    assert verify_bundle(read_bundle(write(records))) == [
        "header (line 1): seed: 9223372036854775808 is greater than the maximum of "
        "9223372036854775807"
    ]


def test_negative_counts_are_refused_naming_the_field(clean, write):
    records = copy(clean)
    records[2]["steps"][1]["output_tokens"] = -5
    records[3]["steps"][0]["latency_s"] = -0.5
    records[4]["steps"][0]["distance_steps"] = -1
    found = verify_bundle(read_bundle(write(records)))
    assert "line 3: steps/1/output_tokens: -5 is less than the minimum of 0" in found
    assert "line 4: steps/0/latency_s: -0.5 is less than the minimum of 0" in found
    assert "line 5: steps/0/distance_steps: -1 is less than the minimum of 0" in found


def test_over_long_strings_are_refused_without_being_quoted(clean, write):
    records = copy(clean)
    records[2]["steps"][1]["response"] = "x" * 300_000
    records[0]["agent"]["name"] = "y" * 301
    found = verify_bundle(read_bundle(write(records)))
    assert found == [
        'header (line 1): agent/name: a string of 301 characters ("yyyyyyyyyyyyyyyyyyyy...) '
        "is longer than 300 characters"
    ]
    records[0] = clean[0]
    found = verify_bundle(read_bundle(write(records)))
    assert (
        'line 3: steps/1/response: a string of 300000 characters ("xxxxxxxxxxxxxxxxxxxx...) '
        "is longer than 262144 characters"
    ) in found


def test_an_over_long_line_is_refused_before_it_is_parsed(clean, write):
    long_line = b'{"type": "episode", "error": "' + b"x" * MAX_LINE_BYTES + b'"}'
    message = refusal(write([*clean[:2], long_line, *clean[3:]]))
    assert f"line 3: longer than the limit of {MAX_LINE_BYTES} bytes" in message


def test_truncated_json_is_refused_with_its_column(clean, write):
    line = json.dumps(clean[2]).encode()
    with pytest.raises(json.JSONDecodeError) as cut:
        json.loads(line[:100])  # what the parser says depends on where the cut falls
    message = refusal(write([*clean[:2], line[:100], *clean[3:]]))
    expected = f"line 3: not JSON: {cut.value.msg} (column {cut.value.colno})"
    assert message.endswith(expected) and cut.value.colno == 101


def test_a_truncated_last_line_is_reported_with_its_number(clean, write):
    line = json.dumps(clean[-1]).encode()
    found = verify_bundle(read_bundle(write([*clean[:-1], line[:100]])))
    assert f"line {len(clean)}: the last line is cut off" in found[-1]


def test_a_json_scalar_line_is_refused(clean, write):
    message = refusal(write([*clean[:2], b"42", *clean[3:]]))
    assert "line 3: (record): a JSON number, expected an episode record (a JSON object)" in message
    assert "line 3: (record): a JSON array" in refusal(write([*clean[:2], b"[]", *clean[3:]]))


def test_nan_infinity_and_huge_floats_are_refused_naming_the_field(clean, write):
    line = json.dumps(clean[2]).replace('"success": false', '"success": false, "x": [NaN]')
    assert "line 3: x/0: NaN is not a JSON number" in refusal(
        write([*clean[:2], line.encode(), *clean[3:]])
    )
    records = copy(clean)
    records[3]["steps"][0]["latency_s"] = 1.0
    line = json.dumps(records[3]).replace('"latency_s": 1.0', '"latency_s": 1e999')
    records[3] = line.encode()
    message = refusal(write(records))
    assert "line 4: steps/0/latency_s: 1e999 is beyond the range of a float" in message


def test_integers_too_long_to_convert_are_refused_naming_the_field(clean, write):
    line = json.dumps(clean[2]).replace('"success": false', '"success": false, "x": {"y": 1}')
    line = line.replace('"y": 1', '"y": ' + "9" * 5000)
    message = refusal(write([*clean[:2], line.encode(), *clean[3:]]))
    assert "line 3: x/y: 99999999999999999999... (5000 digits) is too long for any field" in message


def test_strings_the_database_cannot_store_are_refused_naming_the_field(clean, write):
    records = copy(clean)
    records[2]["steps"][0]["response"] = "half an emoji \ud83d"
    assert "line 3: steps/0/response: the string holds an unpaired surrogate" in refusal(
        write(records)
    )
    records = copy(clean)
    records[0]["tool"]["note"] = "a\x00b"
    assert "line 1: tool/note: the string holds a NUL character" in refusal(write(records))
    records = copy(clean)
    records[2]["steps"][0]["response"] = "a whole emoji \U0001f600, Choice: [1]"
    assert all("surrogate" not in p for p in verify_bundle(read_bundle(write(records))))


def test_free_form_fields_are_bounded_too(clean, write):
    records = copy(clean)
    records[2]["steps"][0]["request"] = {"images": [{"size": 1}] * 300}
    records[0]["tool"]["note"] = "z" * 10_001
    found = verify_bundle(read_bundle(write(records)))
    assert found == [
        'header (line 1): tool/note: a string of 10001 characters ("zzzzzzzzzzzzzzzzzzzz...) '
        "is longer than 10000 characters"
    ]
    records[0] = clean[0]
    found = verify_bundle(read_bundle(write(records)))
    assert "line 3: steps/0/request/images: an array of 300 items has more than 256 items" in found


def test_a_record_wrong_all_over_reports_a_few_errors_and_a_count(clean, write):
    records = copy(clean)
    for step in records[2]["steps"]:
        step["input_tokens"] = -1
    found = [p for p in verify_bundle(read_bundle(write(records))) if p.startswith("line 3")]
    assert len(found) == MAX_ERRORS_PER_RECORD + 1
    assert found[-1] == (
        f"line 3: {len(records[2]['steps']) - MAX_ERRORS_PER_RECORD} more schema errors"
    )


CRAFTED = {
    "non-UTF-8": lambda clean: [*clean[:2], b'{"type": "episode\xff"}', *clean[3:]],
    "deep nesting": lambda clean: [*clean[:2], b"[" * 100_000, *clean[3:]],
    "too-large integer": lambda clean: [
        *clean[:2],
        {**clean[2], "steps": [{**clean[2]["steps"][0], "input_tokens": 10**30}]},
        *clean[3:],
    ],
    "negative count": lambda clean: [
        *clean[:2],
        {**clean[2], "steps": [{**clean[2]["steps"][0], "output_tokens": -1}]},
        *clean[3:],
    ],
    "over-long string": lambda clean: [*clean[:2], {**clean[2], "scene_id": "s" * 101}, *clean[3:]],
    "over-long line": lambda clean: [*clean[:2], b'"' + b"x" * MAX_LINE_BYTES + b'"', *clean[3:]],
    "truncated JSON": lambda clean: [*clean[:2], json.dumps(clean[2])[:50].encode(), *clean[3:]],
    "JSON scalar": lambda clean: [*clean[:2], b"null", *clean[3:]],
}


@pytest.mark.parametrize("kind", CRAFTED)
def test_the_cli_prints_the_refusal_naming_line_3_and_exits_non_zero(kind, clean, write, capsys):
    path = write(CRAFTED[kind](copy(clean)))
    assert main(["verify", str(path)]) != 0
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert f"{path}: line 3" in printed
    assert "Traceback" not in printed and len(printed) < 2000


def test_the_codecs_limits_are_the_schemas() -> None:
    from evaluation.bundle import ERROR_MAX_CHARS, RESPONSE_MAX_CHARS, schema

    definitions = json.dumps(schema())
    assert f'"response": {{"type": "string", "maxLength": {RESPONSE_MAX_CHARS}}}' in definitions
    assert f'"maxLength": {ERROR_MAX_CHARS}' in definitions


def test_an_over_long_error_text_is_cut_keeping_its_summary() -> None:
    from evaluation.bundle import ERROR_MAX_CHARS, episode_record
    from evaluation.outbound import ErrorSummary, error_summary

    text = "[server_error HTTP 503] " + "provider page " * 10_000
    record = episode_record(
        scene_id="s",
        track="Human",
        level=0,
        status="error",
        error=text,
        d0_steps=12,
        max_steps=21,
        success=False,
        distances=[12],
        steps=[],
        metrics=None,
    )
    assert len(record["error"]) == ERROR_MAX_CHARS
    assert error_summary(record["error"]) == ErrorSummary(503, "server_error")
