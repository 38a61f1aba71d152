"""A loopback fake OpenAI-compatible model server for the throughput benchmark.

Run as ``python -m benchmarks.fake_model_server --latency 0.5``: it binds ``127.0.0.1`` on a
free port, prints ``PORT <n>`` on a line of its own and serves until killed (or until
``POST /shutdown``).

* ``POST /v1/chat/completions`` answers a ``chat.completion`` ``--latency`` seconds after the
  request body has arrived. The answer is a function of the request's ``messages`` alone (the
  SHA-256 of their JSON picks the option 1-6), so an episode plays the same way whatever the
  concurrency: every configuration of the benchmark plays the same episodes and steps.
* ``GET /stats`` returns the requests answered so far and the process's own CPU seconds
  (``getrusage(RUSAGE_SELF)``: all its threads) and peak memory.

One thread per connection (``ThreadingHTTPServer``, HTTP/1.1 keep-alive) and a deep listen
queue, so that hundreds of requests can wait at once.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_ID = "fake-vlm-bench"
FINGERPRINT = "fp_bench0001"
PATH = "/v1/chat/completions"


def answer_for(messages: Any) -> tuple[int, str]:
    """Return (option, answer text) for a request's ``messages``: a function of them alone."""
    blob = json.dumps(messages, sort_keys=True, separators=(",", ":")).encode()
    digest = hashlib.sha256(blob).digest()
    option = digest[0] % 6 + 1
    return option, f"I move the hand.\nChoice: [{option}]"


def completion(content: str, prompt_tokens: int, completion_tokens: int = 12) -> dict[str, Any]:
    """A ``chat.completion`` response body (the shape real OpenAI-compatible servers send)."""
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL_ID,
        "system_fingerprint": FINGERPRINT,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def cpu_seconds() -> float:
    """User plus system CPU seconds of this process so far (every thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024

    def __init__(self, latency_s: float, port: int = 0) -> None:
        self.latency_s = latency_s
        self.requests = 0
        self.bad_requests = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", port), Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client hangs up."""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # An answer leaves at once: with Nagle's algorithm on, the body, written after the headers,
    # waited for the client's delayed ACK (about 40 ms on Linux) on every request.
    disable_nagle_algorithm = True
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        """No request log."""

    def do_GET(self) -> None:
        if self.path != "/stats":
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        usage = resource.getrusage(resource.RUSAGE_SELF)
        with self.server.lock:
            stats = {
                "requests": self.server.requests,
                "bad_requests": self.server.bad_requests,
                "cpu_s": usage.ru_utime + usage.ru_stime,
                "maxrss_kb": usage.ru_maxrss,
                "threads": threading.active_count(),
            }
        self._send(200, stats)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        arrived = time.monotonic()
        if self.path == "/shutdown":
            self._send(200, {})
            threading.Thread(target=self.server.shutdown, daemon=True).start()
            return
        if self.path != PATH:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            messages = json.loads(raw)["messages"]
        except (ValueError, KeyError, TypeError):
            with self.server.lock:
                self.server.bad_requests += 1
            self._send(400, {"error": {"message": "bad body", "type": "invalid_request_error"}})
            return
        _, text = answer_for(messages)
        with self.server.lock:
            self.server.requests += 1
        # Roughly what a vision model is charged: a few hundred tokens of text, and the images.
        prompt_tokens = 300 + 765 * raw.count(b"data:image/png;base64,")
        body = completion(text, prompt_tokens)
        remaining = self.server.latency_s - (time.monotonic() - arrived)
        if remaining > 0:
            time.sleep(remaining)
        self._send(200, body)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per answer")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    args = parser.parse_args(argv)
    server = Server(args.latency, args.port)
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
