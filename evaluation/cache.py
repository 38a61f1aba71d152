"""A response cache: re-runs at temperature 0 cost nothing, and interrupted episodes replay.

Replies are keyed by a hash of (scope, provider, model, base URL, generation parameters, the
full message content with each image replaced by its SHA-256). The cache is a SQLite file under
the data directory, shared safely by the runner's threads.

The scope says whose answers may be reused: the site gives each user's hosted runs their own
(``user:<id>``), so a run never completes from answers someone else paid for, with a key that
may not even work. The CLI uses one scope, the empty one: the machine's owner is the only user.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evaluation.messages import (
    GenerationParams,
    ImagePart,
    Message,
    ModelClient,
    ModelReply,
    TextPart,
)


def request_key(
    provider: str,
    model: str,
    base_url: str | None,
    params: GenerationParams,
    messages: list[Message],
    scope: str = "",
) -> str:
    """Return the cache key of a request made on behalf of ``scope``."""
    content: list[Any] = []
    for message in messages:
        parts: list[Any] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                parts.append({"text": part.text})
            elif isinstance(part, ImagePart):
                parts.append({"image_sha256": hashlib.sha256(part.png).hexdigest()})
        content.append({"role": message.role, "parts": parts})
    payload = {
        "scope": scope,
        "provider": provider,
        "model": model,
        "base_url": base_url or "",
        "params": params.as_dict(),
        "messages": content,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


class ResponseCache:
    """Replies stored by request key in a SQLite file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, reply TEXT NOT NULL)"
        )

    def get(self, key: str) -> ModelReply | None:
        with self._lock:
            row = self._db.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        return ModelReply(**json.loads(row[0])) if row else None

    def put(self, key: str, reply: ModelReply) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies (key, reply) VALUES (?, ?)",
                (key, json.dumps(asdict(reply))),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedClient:
    """A ModelClient that answers from the cache when it can, and fills it when it cannot.

    Only usable answers are cached (refusals too: they are the model's answer); transport
    errors raise before anything is stored.
    """

    def __init__(
        self,
        client: ModelClient,
        cache: ResponseCache,
        base_url: str | None = None,
        *,
        scope: str = "",
    ) -> None:
        self.client = client
        self.scope = scope
        self.cache = cache
        self.base_url = base_url
        self.provider = client.provider
        self.model = client.model
        self.params = client.params

    def complete(self, messages: list[Message]) -> ModelReply:
        key = request_key(
            self.provider, self.model, self.base_url, self.params, messages, scope=self.scope
        )
        cached = self.cache.get(key)
        if cached is not None:
            cached.request = {**cached.request, "cached": True}
            return cached
        reply = self.client.complete(messages)
        self.cache.put(key, reply)
        return reply
