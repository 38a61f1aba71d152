"""``mirrorbench verify`` refuses crafted bundles with a message naming the line and the field.

Every string and number of a bundle is bounded by the schema, and a line is read only when it
is UTF-8, short enough and shallow enough; nothing crafted ends in a traceback.
"""

import json
import tracemalloc

import pytest

from benchmarks import verify_limits as costly
from evaluation.agents import RandomAgent
from evaluation.bundle import (
    MAX_DEPTH,
    MAX_LINE_BYTES,
    MAX_VALUES,
    BundleError,
    read_bundle,
    schema_errors,
)
from evaluation.cli import main
from evaluation.config import RunConfig
from evaluation.runner import run
from evaluation.verify import MAX_ERRORS_PER_RECORD, MAX_PROBLEMS, verify_bundle
from simulation.catalogue import select_scenes

SCENES = select_scenes("female_1-mano_white-bread,nova_carter-allegro-logo_0")


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundles") / "clean.jsonl"
    run(
        lambda: RandomAgent(4),
        RunConfig(agent="random", levels=(0, 1), scenes=",".join(s.id for s in SCENES), seed=4),
        out,
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


def test_a_record_wrong_all_over_reports_a_few_errors_and_says_there_are_more(clean, write):
    records = copy(clean)
    for step in records[2]["steps"]:
        step["input_tokens"] = -1
    assert len(records[2]["steps"]) > MAX_ERRORS_PER_RECORD
    found = [p for p in verify_bundle(read_bundle(write(records))) if p.startswith("line 3")]
    assert len(found) == MAX_ERRORS_PER_RECORD + 1
    assert found[0] == "line 3: steps/0/input_tokens: -1 is less than the minimum of 0"
    assert found[-1] == (
        f"line 3: more schema errors; the first {MAX_ERRORS_PER_RECORD} are listed"
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
    from evaluation.public import ErrorSummary, error_summary

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


# Crafted to be costly: reading and verifying take time and memory bounded by the size, and the
# problems come back few and short, whatever the records hold (benchmarks/verify_limits.py).


def traced(function, *args):
    """Return what ``function`` returns and the peak of memory it allocated (tracemalloc)."""
    tracemalloc.start()
    try:
        result = function(*args)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def check(path):
    return verify_bundle(read_bundle(path))


def crafted(tmp_path, kind, size):
    path = tmp_path / f"{kind.replace(' ', '-')}.jsonl"
    path.write_bytes(costly.CRAFTED[kind](size))
    return path


MIB = 2**20


def test_one_episode_of_100000_empty_steps_is_one_short_problem(tmp_path):
    path = crafted(tmp_path, "empty steps", 300_000)
    steps = len(json.loads(path.read_bytes().splitlines()[1])["steps"])
    assert steps > 99_000
    problems, peak = traced(check, path)
    assert problems[0] == f"line 2: steps: an array of {steps} items has more than 1000 items"
    assert [p for p in problems if not p.startswith("missing episode")] == problems[:1]
    assert peak < 40 * MIB, peak  # was 1.8 GB and 27 s


def test_many_episodes_breaking_many_rules_give_ten_problems_each(tmp_path):
    path = crafted(tmp_path, "many violations", 2_000_000)
    lines = len(path.read_bytes().splitlines())
    problems, peak = traced(check, path)
    assert problems[:3] == [
        'line 2: track: "Alien" is not one of "Human" or "Robot"',
        "line 2: level: 9 is not one of 0, 1 or 2 other candidates",
        "line 2: steps/0/index: -1 is less than the minimum of 0",
    ]
    assert 'line 2: steps/0/hand_cell: [0.5,"x",null,4] has more than 3 items' in problems
    for line in range(2, lines + 1):
        mine = [p for p in problems if p.startswith(f"line {line}: ")]
        assert len(mine) == MAX_ERRORS_PER_RECORD + 1
        assert mine[-1].endswith(
            f"more schema errors; the first {MAX_ERRORS_PER_RECORD} are listed"
        )
    assert peak < 60 * MIB, peak


def test_violating_fields_holding_huge_strings_and_deep_arrays_are_described(tmp_path):
    path = crafted(tmp_path, "huge strings", 2_000_000)
    problems, peak = traced(check, path)
    assert problems[0].startswith("line 2: scene_id: a string of ")
    assert problems[0].endswith(
        ' characters ("xxxxxxxxxxxxxxxxxxxx...) is longer than 100 characters'
    )
    assert 'line 2: track: an array of 1 item is not one of "Human" or "Robot"' in problems
    assert "line 5: metrics: an object of 60 properties has more than 16 properties" in problems
    assert all(len(p) < 200 for p in problems)
    assert peak < 10 * path.stat().st_size, peak


def test_a_header_with_a_huge_array_is_one_problem(tmp_path):
    path = crafted(tmp_path, "header array", 2_000_000)
    scenes = len(json.loads(path.read_bytes().splitlines()[0])["selection"]["scenes"])
    problems, peak = traced(check, path)
    assert problems == [
        f"header (line 1): selection/scenes: an array of {scenes} items has more than 1000 items"
    ]
    assert peak < 40 * MIB, peak


@pytest.mark.parametrize("kind", costly.CRAFTED)
def test_a_crafted_bundle_takes_little_memory_and_time_in_a_process_of_its_own(kind, tmp_path):
    """What the validator allocates outside Python counts too: the child's peak resident set."""
    path = crafted(tmp_path, kind, 2_000_000)
    report = costly.measure(path, cap_mb=1024, timeout_s=60)  # before: over 4 GiB for empty steps
    assert "failed" not in report, report
    assert report["extra_kib"] < 100 * 1024, report
    assert report["s"] < 20, report
    assert 1 <= report["problems"] <= 100 and report["longest"] < 300, report
    assert all("line" in p for p in report["first"]), report


def test_the_most_values_a_bundle_may_hold_take_a_bounded_memory(tmp_path):
    path = tmp_path / "limit.jsonl"
    path.write_bytes(costly.at_the_value_limit())
    report = costly.measure(path, cap_mb=1024, timeout_s=60)
    assert "failed" not in report, report
    assert report["first"][0] == "line 2: steps: an array of 499500 items has more than 1000 items"
    assert report["extra_kib"] < 200 * 1024, report


def test_a_bundle_of_too_many_values_is_refused_before_its_line_is_parsed(clean, write, tmp_path):
    records = copy(clean)
    records[2]["steps"] = "STEPS"
    line = json.dumps(records[2]).replace('"STEPS"', "[" + ",".join(["{}"] * MAX_VALUES) + "]")
    path = write([*clean[:2], line.encode(), *clean[3:]])
    message, peak = traced(refusal, path)
    assert f"line 3: the bundle holds more than {MAX_VALUES} JSON values" in message
    assert peak < 4 * path.stat().st_size, peak  # the line and its structure, never its records
    # Values add up over the lines: many lines under the limit are refused all the same.
    record = {**clean[2], "x": [0] * 255}
    lines = [clean[0], *[record] * (MAX_VALUES // 255)]
    total, over = 0, None
    for number, entry in enumerate(lines, start=1):
        total += values(entry)
        if total > MAX_VALUES:
            over = number
            break
    message = refusal(write(lines))
    assert f"line {over}: the bundle holds more than {MAX_VALUES} JSON values" in message


def values(value):
    """Count as the reader does: every value, and an empty array or object once more."""
    if isinstance(value, dict | list):
        items = value.values() if isinstance(value, dict) else value
        return 1 + (sum(values(item) for item in items) if items else 1)
    return 1


def test_commas_and_brackets_in_strings_are_not_values(clean, write):
    records = copy(clean)
    records[2]["steps"][0]["response"] = "[{,}]" * (MAX_VALUES // 2) + " Choice: [1]"
    read_bundle(write(records))  # not refused


def test_commas_in_strings_do_not_use_up_the_values_of_later_lines(clean, write):
    # Three lines of 330,000 commas in a string each, then a line of 20,000 real values: a bundle
    # of about 21,000 values, which an estimate counting the commas in strings would refuse.
    talkative = costly.episode(error="a," * 330_000)
    many = costly.episode(distances=list(range(20_000)))
    read_bundle(write([clean[0], talkative, talkative, talkative, many]))  # not refused


def test_past_the_bundles_problem_limit_checking_stops_and_says_so(clean, write, capsys):
    bad = costly.episode(level=9, track="Alien", steps=[costly.BAD_STEP])
    lines = MAX_PROBLEMS // (MAX_ERRORS_PER_RECORD + 1) + 10
    path = write([clean[0], *[bad] * lines])
    problems = check(path)
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1] == (
        f"checking stopped after {MAX_PROBLEMS} problems: the bundle is wrong all over"
    )
    assert main(["verify", str(path)]) == 1
    captured = capsys.readouterr()
    printed = captured.out.splitlines()
    assert len(printed) == MAX_PROBLEMS + 1 and max(map(len, printed)) < 300
    assert f"FAILED: at least {MAX_PROBLEMS} discrepancies" in captured.err


def test_the_schema_check_costs_in_the_size_not_the_number_of_violations():
    """Records built in memory, not read: the schema check holds on its own."""
    record = costly.episode(steps=[{}] * 300_000)
    (errors, peak) = traced(schema_errors, record, "episode", MAX_ERRORS_PER_RECORD + 1)
    assert errors == ["steps: an array of 300000 items has more than 1000 items"]
    assert peak < 10 * MIB, peak  # a stand-in of 300,000 nulls
    record = costly.episode(
        steps=[{}] * 1000, error="e" * 10**7, extra={f"k{i}": [1e301] * 256 for i in range(64)}
    )
    errors, peak = traced(schema_errors, record, "episode", MAX_ERRORS_PER_RECORD + 1)
    assert errors[0] == (
        'error: a string of 10000000 characters ("eeeeeeeeeeeeeeeeeeee...) is longer than 20000 '
        "characters"
    )
    assert errors[1] == 'steps/0: "index" is a required property'
    assert len(errors) == MAX_ERRORS_PER_RECORD + 1
    assert peak < 60 * MIB, peak


def test_a_long_property_name_is_cut_in_the_message(clean, write):
    records = copy(clean)
    records[0]["tool"]["n" * 200_000] = 1
    (problem,) = check(write(records))
    assert problem.startswith('header (line 1): tool: "nnnnnnn')
    assert problem.endswith("characters)") and len(problem) < 200


def test_every_schema_node_is_taken_apart_and_bounded():
    """``schema_errors`` is bounded only for the keywords it takes apart, and sizes it checks."""
    from evaluation.bundle import _ANNOTATIONS, _WALKED, schema

    def nodes(node, at):
        if isinstance(node, dict):
            yield at, node
            for key, child in node.items():
                if key in ("properties", "$defs"):
                    for name, grandchild in child.items():
                        yield from nodes(grandchild, f"{at}/{key}/{name}")
                elif key in ("items", "additionalProperties", "propertyNames"):
                    yield from nodes(child, f"{at}/{key}")

    for at, node in nodes(schema(), ""):
        if at == "" or set(node) == {"$ref"}:
            continue
        assert set(node) <= _WALKED | _ANNOTATIONS, (at, set(node) - _WALKED - _ANNOTATIONS)
        types = node.get("type", [])
        if "array" in types:
            assert "maxItems" in node, at
        if "object" in types:
            assert "maxProperties" in node, at
