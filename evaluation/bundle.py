"""Results bundles: the versioned JSON Lines file a run writes and ``verify`` checks.

Line 1 is the header; every further line is one finished episode. Episodes are appended and
flushed as they finish, so a crash loses at most the episodes in flight. The format is
documented in ``docs/bundle-format.md`` and ``evaluation/schemas/bundle-v1.schema.json``.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any, BinaryIO

import jsonschema_rs

from evaluation.metrics import EpisodeResult
from evaluation.prompts import PROMPT_VERSION
from evaluation.vocabulary import METRICS
from simulation.catalogue import SCENE_SET_VERSION
from simulation.dynamics import DYNAMICS_VERSION
from simulation.versions import BENCHMARK_VERSION

BUNDLE_VERSION = 1
# The name pyproject.toml installs the project under (the tool itself is called mirrorbench).
DISTRIBUTION = "mirrorbench-msr"
RESPONSE_MAX_CHARS = 262_144
"""The longest model response a bundle holds (the schema's ``response`` limit): 64k tokens of
output at four characters a token. ``verify`` parses responses again, so they are never cut: a
longer answer ends its episode as an error (``evaluation.agents.ModelAgent``)."""
ERROR_MAX_CHARS = 20_000
"""The longest error text a bundle holds (the schema's limit); longer texts keep their start,
where the public summary tag is."""


def benchmark_version() -> dict[str, str]:
    """Return the benchmark version and its parts: scene set, prompt and dynamics versions."""
    return {
        "version": BENCHMARK_VERSION,
        "scene_set": SCENE_SET_VERSION,
        "prompt_version": PROMPT_VERSION,
        "dynamics_version": DYNAMICS_VERSION,
    }


def header_benchmark_version(header: dict[str, Any]) -> str:
    """Return the benchmark version a bundle header names (v1 bundles name only the parts)."""
    benchmark = header.get("benchmark")
    if not isinstance(benchmark, dict):
        return "unknown"
    version = benchmark.get("version")
    if version is None:
        return "v1" if benchmark.get("prompt_version") == "v1" else "unknown"
    return str(version)


def tool_version() -> str:
    """Return the version of the installed distribution (DISTRIBUTION) that writes bundles."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def now_iso() -> str:
    """Return the current UTC time as ISO 8601, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@cache
def schema() -> dict[str, Any]:
    """Return the bundle's JSON Schema (header and episode definitions)."""
    text = resources.files("evaluation").joinpath("schemas/bundle-v1.schema.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


_MASK = "\x00value\x00"
"""What the validator writes in place of the offending value (a read string never holds a NUL):
the value is quoted by ``_quote``, which bounds it, never by the validator, which would not."""
_ANNOTATIONS = frozenset({"$comment", "$schema", "$id", "title", "description", "default"})
_WALKED = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "additionalProperties",
        "required",
        "maxProperties",
        "minProperties",
        "propertyNames",
        "items",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxLength",
        "minLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "pattern",
    }
)
"""The keywords ``_walk`` takes apart; a node with any other (or a ``$ref`` beside others) would
only be reported as not matching: ``test_every_schema_node_is_taken_apart_and_bounded``."""
_CHILDREN = ("properties", "additionalProperties", "items")


@cache
def _node(pointer: str) -> tuple[str, Any]:
    """Return the schema node at a JSON pointer into ``schema()``, following a lone ``$ref``."""
    node: Any = schema()
    for part in pointer.split("/")[1:]:
        node = node[part.replace("~1", "/").replace("~0", "~")]
    if isinstance(node, dict) and "$ref" in node and set(node) - _ANNOTATIONS == {"$ref"}:
        return _node(node["$ref"].removeprefix("#"))
    return pointer, node


@cache
def _validator(pointer: str, shallow: bool = False) -> jsonschema_rs.Draft202012Validator:
    """Return a validator of the schema node at ``pointer`` (its own keywords only if shallow).

    A shallow node keeps everything but what applies to the items and property values: those
    are checked one by one by ``_walk``.
    """
    node = whole = _node(pointer)[1]
    if shallow:
        # ``additionalProperties: false`` (or ``items: false``) stays: it is about the keys.
        node = {k: v for k, v in whole.items() if k not in _CHILDREN or isinstance(v, bool)}
        if "properties" in whole:
            node["properties"] = dict.fromkeys(whole["properties"], True)
    return jsonschema_rs.Draft202012Validator({"$defs": schema()["$defs"], **node}, mask=_MASK)


def schema_errors(record: dict[str, Any], kind: str, limit: int | None = None) -> list[str]:
    """Return a readable message per schema violation of a header or an episode record.

    Each names the field as a JSON path (``steps/0/input_tokens``) and what was expected; a
    long value is described rather than quoted. At most ``limit`` messages are returned, and
    finding them costs time in proportion to the record's size and ``limit``, never to the
    number of violations: the record is taken apart along the schema (``_walk``), an array or
    object over its schema's size is reported without looking at its items, and the validator
    only ever sees one value with its items and properties stubbed out.
    """
    found = _walk(f"/$defs/{kind}", record, ())
    return [
        f"{'/'.join(path) or '(record)'}: {message}"
        for path, message in itertools.islice(found, limit)
    ]


def _walk(pointer: str, value: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    """Yield (path, message) per schema violation of ``value``, lazily, in document order."""
    pointer, node = _node(pointer)
    if _validator(pointer).is_valid(value):
        return
    if not isinstance(node, dict) or set(node) - _ANNOTATIONS - _WALKED:
        # Not taken apart (no such node in the schema: a test sees to it), and not handed to
        # the validator's iter_errors either, which would list every violation at once.
        yield path, "does not match the schema"
        return
    if isinstance(value, dict | list):
        most, what = (
            (node.get("maxProperties"), "properties")
            if isinstance(value, dict)
            else (node.get("maxItems"), "items")
        )
        if most is not None and len(value) > most:
            # Its items are not looked at: there may be any number of them.
            yield path, f"{_quote(value)} has more than {most} {what}"
            return
    stand_in: Any = value
    if isinstance(value, dict):
        stand_in = dict.fromkeys(value)
    elif isinstance(value, list):
        if {"uniqueItems", "enum", "const"} & set(node):
            # Each container item stands for itself only: no two are alike, nor like a string.
            stand_in = [
                f"\x00{i}" if isinstance(v, dict | list) else v for i, v in enumerate(value)
            ]
        else:
            stand_in = [None] * len(value)  # only the length counts
    reported = False
    for error in _validator(pointer, shallow=True).iter_errors(stand_in):
        reported = True
        yield path, _message(error, value)
    if isinstance(value, dict):
        properties, others = node.get("properties", {}), node.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                child = f"{pointer}/properties/{key.replace('~', '~0').replace('/', '~1')}"
            elif isinstance(others, dict):
                child = f"{pointer}/additionalProperties"
            else:
                continue
            for found in _walk(child, item, (*path, key)):
                reported = True
                yield found
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for index, item in enumerate(value):
            for found in _walk(f"{pointer}/items", item, (*path, str(index))):
                reported = True
                yield found
    if not reported:
        yield path, "does not match the schema"


_QUOTED_LIMIT = 80


def _message(error: jsonschema_rs.ValidationError, value: Any) -> str:
    """Return the validator's message with ``value`` quoted within bounds in place of the mask."""
    message: str = error.message
    if _MASK in message:
        message = message.replace(_MASK, _quote(value), 1)
    if len(message) > 2 * _QUOTED_LIMIT:
        # A long property name or schema constant: the start says which rule.
        return message[:_QUOTED_LIMIT] + f"... ({len(message)} characters)"
    return message


def _quote(value: Any) -> str:
    """Return ``value`` as compact JSON when that is short, else a description of it."""
    if isinstance(value, str):
        if len(value) > _QUOTED_LIMIT:
            return f"a string of {len(value)} characters ({json.dumps(value[:20])[:-1]}...)"
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return json.dumps(value)
    if isinstance(value, int):
        digits = str(value)
        if len(digits) > _QUOTED_LIMIT:
            return f"{digits[:20]}... ({len(digits.lstrip('-'))} digits)"
        return digits
    # Encoded piece by piece, and given up as soon as it is too long to quote.
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
    quoted = ""
    for piece in encoder.iterencode(value):
        quoted += piece
        if len(quoted) > _QUOTED_LIMIT:
            break
    else:
        return quoted
    if isinstance(value, list):
        return f"an array of {len(value)} item{'s' if len(value) != 1 else ''}"
    return f"an object of {len(value)} propert{'ies' if len(value) != 1 else 'y'}"


class BundleError(ValueError):
    """A bundle that cannot be read at all (missing, empty, not JSON Lines, wrong version)."""


MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line read, newline excluded: a full episode of long answers fits many times."""
MAX_DEPTH = 32
"""The deepest nesting of arrays and objects in a line; a real record nests 6 deep."""
MAX_EPISODE_LINES = 10_000
"""The most episode lines read (the schema allows 1000 scenes x 4 levels in a selection)."""
MAX_VALUES = 1_000_000
"""The most JSON values a bundle holds, header included, counted outside strings before each
line is parsed: each array and object, and each of their items and members (an empty one counts
once more). A full bundle of 264 model episodes holds about 200,000. Parsed, a value costs from
8 bytes (a small number in an array) to about 100 (a one-member object): this bounds what a
crafted file of small values takes once parsed, which its size alone would let grow to 35 times
the file."""


@dataclass
class Bundle:
    """A parsed bundle: the header and its episode records, in file order."""

    header: dict[str, Any]
    episodes: list[dict[str, Any]] = field(default_factory=list)
    line_numbers: list[int] = field(default_factory=list)
    """File line of each episode record (1-based), for error messages."""
    truncated_tail: bool = False
    """The last line was cut off (an interrupted write); it was ignored."""
    truncated_line: int | None = None
    """The file line of the ignored last line, when ``truncated_tail``."""


def read_bundle(path: Path) -> Bundle:
    """Read a bundle; an unparsable last line (interrupted write) is ignored and flagged.

    Raise BundleError, naming the line, for anything that is not a bundle: a file that is not
    UTF-8, a line over ``MAX_LINE_BYTES`` or nested deeper than ``MAX_DEPTH``, a line that is
    not JSON or not a JSON object, a string the database cannot store (NUL, an unpaired
    surrogate), a missing or unsupported header. What the records hold is left to ``verify``.
    """
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise BundleError(f"{path}: cannot read: {exc.strerror}") from None
    with handle:
        lines = _lines(handle, path)
        first = next(lines, None)
        if first is None:
            raise BundleError(f"{path}: empty file, expected a header line")
        _, line, _ = first
        values = _Budget(MAX_VALUES)
        try:
            header = _parse(line, values)
        except _NotJSON as exc:
            raise BundleError(f"{path}: line 1: header is not JSON: {exc}") from None
        except BundleError as exc:
            raise BundleError(f"{path}: line 1: {exc}") from None
        if not isinstance(header, dict) or header.get("type") != "header":
            raise BundleError(
                f'{path}: line 1: the first line must be the header ("type": "header")'
            )
        if header.get("bundle_version") != BUNDLE_VERSION:
            raise BundleError(
                f"{path}: line 1: bundle_version {header.get('bundle_version')!r} is not "
                f"supported (expected {BUNDLE_VERSION})"
            )
        bundle = Bundle(header)
        for number, line, last in lines:
            if not line.strip():
                continue
            if len(bundle.episodes) == MAX_EPISODE_LINES:
                raise BundleError(
                    f"{path}: line {number}: more than {MAX_EPISODE_LINES} episode lines"
                )
            try:
                record = _parse(line, values)
            except _NotJSON as exc:
                if last:
                    bundle.truncated_tail = True
                    bundle.truncated_line = number
                    break
                raise BundleError(f"{path}: line {number}: not JSON: {exc}") from None
            except BundleError as exc:
                raise BundleError(f"{path}: line {number}: {exc}") from None
            if not isinstance(record, dict):
                raise BundleError(
                    f"{path}: line {number}: (record): {_json_kind(record)}, expected an "
                    "episode record (a JSON object)"
                )
            bundle.episodes.append(record)
            bundle.line_numbers.append(number)
    return bundle


def _lines(handle: BinaryIO, path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """Yield (line number, line, is the last line), refusing a line over the limit."""
    number = 0
    pending = handle.readline(MAX_LINE_BYTES + 1)
    while pending:
        number += 1
        line = pending.removesuffix(b"\n")
        if len(line) > MAX_LINE_BYTES:
            raise BundleError(
                f"{path}: line {number}: longer than the limit of {MAX_LINE_BYTES} bytes"
            )
        pending = handle.readline(MAX_LINE_BYTES + 1)
        yield number, line, not pending


class _NotJSON(ValueError):
    """A line that the JSON parser refuses; the message says where and why."""


_ESCAPE = re.compile(rb"\\.")
_NOT_STRUCTURE = bytes(range(256)).translate(None, b'[]{}",')
_EMPTY_PAIR = re.compile(rb"\[\]|\{\}")
_UNSTORABLE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


class _Budget:
    """What is left of a bundle's ``MAX_VALUES``."""

    def __init__(self, left: int) -> None:
        self.left = left


def _parse(line: bytes, values: _Budget) -> Any:
    """Return the JSON value of one line; raise _NotJSON, or BundleError for a refused line.

    The nesting is measured before parsing, since the parser recurses (and so would the schema
    validator), and so is the number of values, taken from ``values``: the commas and brackets
    outside strings are counted on every line (an upper bound that counted those in strings too
    would use up the budget of a bundle of long answers, and refuse a later line of it); only a
    line with more brackets than ``MAX_DEPTH`` needs its depth measured. NaN, Infinity and
    numbers beyond a float's range are not JSON; NUL characters and unpaired surrogates cannot
    be stored: each is refused, naming its field.
    """
    structure = _structure(line)
    brackets = structure.count(b"[") + structure.count(b"{")
    if brackets > MAX_DEPTH and _depth(structure.translate(None, b",")) > MAX_DEPTH:
        raise BundleError(
            f"byte {_too_deep_at(line) + 1}: arrays and objects nest deeper than the limit "
            f"of {MAX_DEPTH}"
        )
    count = brackets + structure.count(b",") + 1
    if count > values.left:
        raise BundleError(
            f"the bundle holds more than {MAX_VALUES} JSON values (arrays, objects and their "
            f"items) by the end of this line, which holds {count}: a full bundle holds "
            "about 200,000"
        )
    values.left -= count
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError(
            f"byte {exc.start + 1}: not UTF-8 (0x{line[exc.start]:02x}); a bundle is UTF-8 text"
        ) from None
    refused: list[_Refused] = []

    def refuse(literal: str, why: str = "is not a JSON number (only finite ones are)") -> _Refused:
        refused.append(_Refused(f"{literal[:40]} {why}"))
        return refused[-1]

    def number(digits: str) -> float | _Refused:
        value = float(digits)
        return value if math.isfinite(value) else refuse(digits, "is beyond the range of a float")

    def integer(digits: str) -> int | _Refused:
        try:
            return int(digits)
        except ValueError:
            return refuse(f"{digits[:20]}...", f"({len(digits)} digits) is too long for any field")

    try:
        value = json.loads(text, parse_constant=refuse, parse_float=number)
    except json.JSONDecodeError as exc:
        raise _NotJSON(f"{exc.msg} (column {exc.colno})") from None
    except ValueError:
        # An integer too long for int() (sys.get_int_max_str_digits()); parsing every
        # integer through a hook would double the time, so only this line is parsed again.
        value = json.loads(text, parse_constant=refuse, parse_float=number, parse_int=integer)
    except RecursionError:
        raise BundleError(f"arrays and objects nest deeper than the limit of {MAX_DEPTH}") from None
    if refused or _UNSTORABLE.search(line):
        problem = _unstorable(value, "")
        if problem:
            raise BundleError(problem)
    return value


class _Refused:
    """Stands for a number that is not JSON until its field is found."""

    def __init__(self, message: str) -> None:
        self.message = message


def _structure(line: bytes) -> bytes:
    """Return the brackets and commas of ``line`` that are outside strings, in order."""
    if b"\\" in line:
        line = _ESCAPE.sub(b"", line)
    # Quotes alternate between opening and closing once escapes are gone: dropping two
    # adjacent ones keeps that, and what is left between odd and even quotes is in strings.
    quoted = line.translate(None, _NOT_STRUCTURE).replace(b'""', b"").split(b'"')
    return b"".join(quoted[::2])


def _depth(brackets: bytes) -> int:
    """Return a nesting depth of ``brackets`` that is over ``MAX_DEPTH`` if and only if it is.

    ``brackets`` are a line's outside strings (``_structure`` without commas); the innermost
    empty pairs are removed round after round: a balanced line takes as many rounds as it
    nests deep. Brackets that never pair (a line cut off, or not JSON) count as one level each.
    0 means "shallow enough" by a quick bound.
    """
    # A quick bound first: a round of str.replace removes one or two levels (``{[]}`` goes at
    # once), so a line it empties within MAX_DEPTH / 2 rounds is shallow enough.
    quick = brackets
    for _ in range(MAX_DEPTH // 2):
        quick = quick.replace(b"[]", b"").replace(b"{}", b"")
        if not quick:
            return 0
    for rounds in range(MAX_DEPTH + 1):
        paired = _EMPTY_PAIR.sub(b"", brackets)
        if len(paired) == len(brackets):
            return rounds + brackets.count(b"[") + brackets.count(b"{")
        brackets = paired
    return MAX_DEPTH + 1


_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]')


def _too_deep_at(line: bytes) -> int:
    """Return the offset of the bracket that opens one level more than ``MAX_DEPTH``."""
    depth = 0
    for token in _TOKEN.finditer(line):
        first = token.group()[:1]
        if first in b"[{":
            depth += 1
            if depth > MAX_DEPTH:
                return token.start()
        elif first in b"]}":
            depth -= 1
    return 0


def _unstorable(value: Any, at: str) -> str | None:
    """Return the first field holding a refused number, a NUL or a lone surrogate, and why."""
    where = at or "(record)"
    if isinstance(value, _Refused):
        return f"{where}: {value.message}"
    if isinstance(value, str):
        if "\x00" in value:
            return f"{where}: the string holds a NUL character (\\u0000)"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{where}: the string holds an unpaired surrogate, not a Unicode character"
        return None
    items: Any = ()
    if isinstance(value, list):
        items = ((str(i), item) for i, item in enumerate(value))
    elif isinstance(value, dict):
        items = value.items()
    for key, item in items:
        path = f"{at}/{key}" if at else key
        name = f"{at}/" if at else ""
        problem = _unstorable(key, f"{name}{json.dumps(key)[1:41]} (a name)") or _unstorable(
            item, path
        )
        if problem:
            return problem
    return None


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a JSON boolean"
    if isinstance(value, int | float):
        return "a JSON number"
    if isinstance(value, str):
        return "a JSON string"
    if isinstance(value, list):
        return "a JSON array"
    return "JSON null"


def episode_record(
    *,
    scene_id: str,
    track: str,
    level: int,
    status: str,
    error: str | None,
    d0_steps: int,
    max_steps: int,
    success: bool,
    distances: list[int],
    steps: list[dict[str, Any]],
    metrics: dict[str, float] | None,
    started: str | None = None,
    finished: str | None = None,
    repeat: int | None = None,
) -> dict[str, Any]:
    """Return an episode's bundle record: the one place where its fields are put together.

    The runner, the site's exporter and its worker all write episodes through here; ``verify``
    and the importer read what it writes. ``started`` and ``finished`` are left out when unknown,
    and ``repeat`` (which of a run's repeats this episode is, 0 the first) in a run of one
    repeat, whose bundle is then what it always was.
    """
    record: dict[str, Any] = {
        "type": "episode",
        "scene_id": scene_id,
        "track": track,
        "level": level,
        "status": status,
        "error": error[:ERROR_MAX_CHARS] if error else None,
        "d0_steps": d0_steps,
        "max_steps": max_steps,
        "success": success,
        "distances": list(distances),
        "steps": steps,
        "metrics": {m: metrics[m] for m in METRICS} if metrics is not None else None,
    }
    if repeat is not None:
        record["repeat"] = repeat
    if started is not None:
        record["started"] = started
    if finished is not None:
        record["finished"] = finished
    return record


def episode_repeat(record: dict[str, Any]) -> int:
    """Return which repeat an episode record is: its ``repeat``, 0 when it has none."""
    repeat = record.get("repeat", 0)
    return repeat if isinstance(repeat, int) and not isinstance(repeat, bool) else 0


def header_repeats(header: dict[str, Any]) -> int:
    """Return how many repeats of each episode a bundle's header selects (1 without any)."""
    repeats = header.get("selection", {}).get("repeats", 1)
    return repeats if isinstance(repeats, int) and not isinstance(repeats, bool) else 1


def episode_results(episodes: list[dict[str, Any]]) -> list[EpisodeResult]:
    """Return the metrics module's view of episode records."""
    return [
        EpisodeResult(
            scene_id=e["scene_id"],
            track=e["track"],
            level=e["level"],
            distances=tuple(e["distances"]),
            status=e["status"],
            repeat=episode_repeat(e),
        )
        for e in episodes
    ]


class BundleWriter:
    """Appends episode records to a bundle, one flushed and synced line each, thread-safe."""

    def __init__(self, path: Path, header: dict[str, Any], *, keep: list[dict[str, Any]]) -> None:
        """Start ``path`` afresh with ``header`` and the already finished ``keep`` records.

        The file is rewritten through a temporary file and an atomic rename, so an existing
        bundle is never left half-written.
        """
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("w") as handle:
            for record in (header, *keep):
                handle.write(json.dumps(record, separators=(",", ":")) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(path)
        self._handle = path.open("a")

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with self._lock:
            self._handle.write(line)
            self._handle.flush()
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        with self._lock:
            self._handle.close()

    def __enter__(self) -> BundleWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
