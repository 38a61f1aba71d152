"""Reply-limits benchmark: what a hostile model endpoint's reply costs a worker.

Each scenario is one reply from a loopback :class:`~tests.evaluation.fake_providers.BombServer`:
a gzip or deflate body of about 200 KiB that inflates to 200 MiB, as a 200 and as a 500 error
body, a chunked body that goes on (``BENCH_REPLY_ENDLESS_MB``, default 200 MiB) and one whose
``Content-Length`` lies. For each provider's client (``openai``, ``anthropic``) the call runs
in a fresh child process, which reports its peak resident memory above what it held before the
call, the wall time, the requests sent and how the call ended. Run: ``python -m
benchmarks.reply_limits``.

The child runner (:func:`call_in_child`) and the scenarios are shared with
``tests/evaluation/test_reply_limits.py``.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.evaluation.fake_providers import (
    BombServer,
    RawReply,
    deflate_bomb,
    endless,
    gzip_bomb,
    openai_completion,
)

ROOT = Path(os.environ.get("BENCH_REPLY_CODE") or Path(__file__).resolve().parent.parent)
ENDLESS_MB = int(os.environ.get("BENCH_REPLY_ENDLESS_MB", "200"))

CHILD = """
import json, resource, sys, time
from evaluation.adapters import AnthropicClient, OpenAIChatClient, RetryPolicy
from evaluation.messages import Message, TextPart, TransportError

retry = RetryPolicy(max_attempts=3, base_delay_s=0.0, jitter=0.0)
conversation = [Message("user", (TextPart("Where is the mark? Choice: [n]"),))]


def peak_kib():
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from a forking parent through exec.
    for line in open("/proc/self/status").read().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


reports = []
for call in sys.argv[1:]:
    provider, base_url = call.split("=", 1)
    make, path = (OpenAIChatClient, "/v1") if provider == "openai" else (AnthropicClient, "")
    client = make("bomb", base_url=base_url + path, retry=retry, allow_private=True)
    before = peak_kib()
    started = time.perf_counter()
    result = {}
    try:
        reply = client.complete(conversation)
        result.update(text=reply.text, attempts=reply.attempts, error=None)
    except TransportError as exc:
        result.update(text=None, attempts=exc.attempts, error=str(exc), status=exc.status)
    except Exception as exc:
        result.update(text=None, attempts=None, error=f"{type(exc).__name__}: {exc}"[:500])
    result["seconds"] = time.perf_counter() - started
    result["before_kib"] = before
    result["peak_kib"] = peak_kib()
    client.close()
    reports.append(result)
print(json.dumps(reports))
"""


def scenarios() -> dict[str, RawReply]:
    """The hostile replies, by name."""
    gzip_body = gzip_bomb()
    json_type = {"Content-Type": "application/json"}
    gzipped = {**json_type, "Content-Encoding": "gzip"}
    endless_body = endless(total=ENDLESS_MB * 2**20)

    def gzip_then_junk() -> Iterator[bytes]:
        yield gzip.compress(json.dumps(openai_completion()).encode())
        yield from endless_body()

    return {
        "gzip 200": RawReply(200, gzipped, gzip_body),
        "deflate 200": RawReply(200, {**json_type, "Content-Encoding": "deflate"}, deflate_bomb()),
        "gzip 500": RawReply(500, gzipped, gzip_body),
        "chunked endless": RawReply(200, json_type, endless_body, chunked=True),
        # Content-Length says 3 MiB (under the cap), the gzip body inflates to 200 MiB.
        "gzip, length 3M": RawReply(200, gzipped, gzip_body, content_length=3 * 2**20),
        "endless, len 1T": RawReply(200, json_type, endless_body, content_length=2**40),
        # A small gzip member, then junk that decodes to nothing (zlib keeps it aside).
        "gzip then junk": RawReply(200, gzipped, gzip_then_junk, chunked=True),
    }


def call_in_child(
    calls: list[tuple[str, str]], env: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Make each call in turn, a provider's client (``openai`` or ``anthropic``) and the base
    URL of the server it calls, in one fresh Python process; return a report per call.

    A report: ``text`` of a reply or ``error`` (the TransportError's text, or another
    exception's name and text), ``status`` and ``attempts``, ``seconds`` of the call,
    ``before_kib`` and ``peak_kib`` (the child's peak resident memory so far, before the call
    and after it).
    """
    child_env = {**os.environ, **(env or {})}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *(f"{provider}={url}" for provider, url in calls)],
        cwd=ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the child failed ({done.returncode}): {done.stderr[-2000:]}")
    reports: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return reports


def main() -> None:
    print(
        f"{'scenario':<17} {'client':<10} {'requests':>8} {'sent MiB':>8} {'s':>6} {'+MiB':>7}"
        "  ending"
    )
    only = [name for name in os.environ.get("BENCH_REPLY_ONLY", "").split(",") if name]
    for name, reply in scenarios().items():
        if only and name not in only:
            continue
        for provider in ("openai", "anthropic"):
            with BombServer(reply) as server:
                (report,) = call_in_child([(provider, server.base_url)])
                server.wait_answered(server.requests)
                extra_mib = (report["peak_kib"] - report["before_kib"]) / 1024
                sent_mib = sum(server.sent) / 2**20
                ending = report["error"] or f"a reply of {len(report['text'])} characters"
                print(
                    f"{name:<17} {provider:<10} {server.requests:>8} {sent_mib:>8.1f} "
                    f"{report['seconds']:>6.2f} {extra_mib:>7.1f}  {ending[:110]}"
                )


if __name__ == "__main__":
    main()
