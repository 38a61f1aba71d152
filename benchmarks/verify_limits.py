"""Verify-limits benchmark (``make bench``): crafted bundles cost time and memory in their size.

Each crafted bundle is a valid header followed by records built to be as costly as possible
to check (``CRAFTED``): one episode of empty step objects, many episodes each breaking many
rules, violating fields holding huge strings and deep arrays, a header with a huge array. Each
is read and verified (``evaluation.bundle.read_bundle`` and ``evaluation.verify.verify_bundle``,
what ``mirrorbench verify`` and an upload run) in a fresh child process under a memory cap
(``BENCH_VERIFY_CAP_MB``, default 4096 MiB of address space) and a time limit
(``BENCH_VERIFY_TIMEOUT_S``, default 120 s). Printed per bundle: its size, the wall time, the
child's peak resident memory above what it held before reading, and how many problems came
back. Sizes: ``BENCH_VERIFY_SIZES`` (default ``300000,2000000``, bytes; the upload limit is
64 MB). A last row holds as many values as a bundle may (``at_the_value_limit``): the most
memory parsing can take.

The crafting functions are shared with ``tests/evaluation/test_verify_limits.py``.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CAP_MB = int(os.environ.get("BENCH_VERIFY_CAP_MB", "4096"))
TIMEOUT_S = float(os.environ.get("BENCH_VERIFY_TIMEOUT_S", "120"))
SIZES = [int(s) for s in os.environ.get("BENCH_VERIFY_SIZES", "300000,2000000").split(",")]


def header(**selection: Any) -> dict[str, Any]:
    """Return a valid header selecting two scenes at level 0 (or ``selection``)."""
    from evaluation.config import RunConfig, bundle_header
    from simulation.catalogue import scene_set

    scenes = list(scene_set())[:2]
    config = RunConfig(agent="random", levels=(0,), image_size=512)
    header = bundle_header(config, scenes=scenes, created="2026-01-01T00:00:00+00:00")
    header["renderer"]["version"] = "crafted"
    header["selection"] |= selection
    return header


def episode(**fields: Any) -> dict[str, Any]:
    """Return an episode record with plausible fields, replaced by ``fields``."""
    from simulation.catalogue import scene_set

    record = {
        "type": "episode",
        "scene_id": next(iter(scene_set())),
        "track": "Human",
        "level": 0,
        "status": "error",
        "error": "crafted",
        "d0_steps": 12,
        "max_steps": 21,
        "success": False,
        "distances": [12],
        "steps": [],
        "metrics": None,
    }
    return {**record, **fields}


def _line(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _repeat(prefix: bytes, item: bytes, suffix: bytes, size: int) -> bytes:
    """Return ``prefix + item,item,... + suffix`` of about ``size`` bytes (one item at least)."""
    count = max(1, (size - len(prefix) - len(suffix)) // (len(item) + 1))
    return prefix + b",".join([item] * count) + suffix


def empty_steps(size: int) -> bytes:
    """One episode whose steps are ``size / 3`` empty objects (8 missing fields each)."""
    body = _line(episode(steps=[]))
    prefix, suffix = body.split(b'"steps":[]')
    head = _line(header()) + b"\n"
    return head + _repeat(prefix + b'"steps":[', b"{}", b"]" + suffix, size - len(head)) + b"\n"


BAD_STEP = {
    "index": -1,
    "response": 5,
    "option": 9,
    "parse_error": [],
    "executed": "yes",
    "distance_steps": -2,
    "hand_cell": [0.5, "x", None, 4],
    "frame_key": 7,
    "input_tokens": -3,
    "latency_s": "slow",
    "request": {"images": [{"size": 1e301}] * 3},
}


def many_violations(size: int) -> bytes:
    """Episodes of 1000 steps (the schema's most), every step breaking a dozen rules."""
    head = _line(header()) + b"\n"
    line = _line(episode(level=9, track="Alien", steps=[BAD_STEP] * 1000)) + b"\n"
    count = max(1, (size - len(head)) // len(line))
    return head + line * count


def huge_strings(size: int) -> bytes:
    """Violating fields holding long strings and arrays nested 30 deep, in a few episodes."""
    head = _line(header()) + b"\n"
    per_episode = max(1, (size - len(head)) // 4)
    deep: Any = ["y" * 1000]
    for _ in range(29):
        deep = [deep]
    wide = {f"k{i}": deep for i in range(60)}
    lines = []
    for i in range(4):
        # One emoji makes Python keep the whole string at four bytes a character.
        text = "x" * max(1000, (per_episode - 66_000) // 2) + ("\U0001f600" if i % 2 else "")
        record = episode(scene_id=text, track=deep, metrics=wide, steps=[{"response": text}])
        lines.append(_line(record))
    return head + b"\n".join(lines) + b"\n"


def header_array(size: int) -> bytes:
    """A header whose selection holds ``size / 4`` scenes, all the same (too many, not unique)."""
    body = _line(header(scenes=[]))
    prefix, suffix = body.split(b'"scenes":[]')
    return _repeat(prefix + b'"scenes":[', b'"a"', b"]" + suffix, size) + b"\n"


CRAFTED: dict[str, Callable[[int], bytes]] = {
    "empty steps": empty_steps,
    "many violations": many_violations,
    "huge strings": huge_strings,
    "header array": header_array,
}


def at_the_value_limit() -> bytes:
    """One episode of one-member objects, as many as ``MAX_VALUES`` lets a bundle hold.

    Parsed, a one-member object costs more than any other value counted: this is the most
    memory parsing a bundle can take, whatever its size.
    """
    from evaluation.bundle import MAX_VALUES

    head = _line(header()) + b"\n"
    body = _line(episode(steps=[]))
    prefix, suffix = body.split(b'"steps":[]')
    # Each object is two values (itself and its member); the rest of the bundle holds < 1000.
    count = (MAX_VALUES - 1000) // 2
    return head + prefix + b'"steps":[' + b",".join([b'{"a":0}'] * count) + b"]" + suffix + b"\n"


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _rss_kib() -> int:
    return _status_kib("VmRSS")


def _peak_kib() -> int:
    """This process image's peak RSS. Not ``ru_maxrss``: Linux carries that over from the
    forking parent through exec, so a child of a big test process would report its size."""
    return _status_kib("VmHWM")


def child(path: str) -> None:
    """Read and verify ``path``; print one JSON line: seconds, extra peak KiB, problems."""
    from evaluation.bundle import BundleError, read_bundle
    from evaluation.verify import verify_bundle

    before = _rss_kib()
    start = time.perf_counter()
    try:
        problems = verify_bundle(read_bundle(Path(path)))
    except BundleError as exc:
        problems = [str(exc)]
    seconds = time.perf_counter() - start
    peak = _peak_kib()
    longest = max((len(p) for p in problems), default=0)
    report = {"s": seconds, "extra_kib": peak - before, "problems": len(problems)}
    print(json.dumps({**report, "longest": longest, "first": problems[:3]}))


def measure(path: Path, cap_mb: int = CAP_MB, timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
    """Run ``child`` on ``path`` under the cap; return its report, or why it did not finish."""

    def cap() -> None:
        limit = cap_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    command = [sys.executable, "-m", "benchmarks.verify_limits", "--child", str(path)]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s, preexec_fn=cap
        )
    except subprocess.TimeoutExpired:
        return {"failed": f"did not finish within {timeout_s:.0f} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        took = time.perf_counter() - start
        return {"failed": f"failed after {took:.1f} s under the {cap_mb} MiB cap: {last[:100]}"}
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def main() -> None:
    print(
        f"MirrorBench verify-limits benchmark: crafted bundles read and verified in a child "
        f"process (cap {CAP_MB} MiB, {TIMEOUT_S:.0f} s)"
    )
    crafted: list[tuple[str, Callable[[], bytes]]] = [
        (name, functools.partial(craft, size)) for size in SIZES for name, craft in CRAFTED.items()
    ]
    crafted.append(("value limit", at_the_value_limit))
    with tempfile.TemporaryDirectory(prefix="mirrorbench-bench-") as folder:
        for name, craft in crafted:
            path = Path(folder) / "crafted.jsonl"
            path.write_bytes(craft())
            actual = path.stat().st_size
            report = measure(path)
            label = f"  {name:<16} {actual / 1000:>8.0f} kB:"
            if "failed" in report:
                print(f"{label} {report['failed']}")
            else:
                print(
                    f"{label} {report['s']:6.2f} s, peak +{report['extra_kib'] / 1024:6.0f} "
                    f"MiB, {report['problems']} problems (longest {report['longest']} chars)"
                )
            sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
    else:
        main()
