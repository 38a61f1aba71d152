"""The response cache: re-runs at temperature 0 cost nothing, and interrupted episodes replay.

A reply is stored under the step it answered: a hash of (scope, provider, model, base URL,
generation parameters, the episode's scene and level, the step's index, the full message
content with each image replaced by its SHA-256). The cache is a SQLite file under the data
directory, shared safely by the runner's threads.

**Why the step is in the key.** After an answer that cannot be read, the episode's next prompt
is the same as the last one, by design (as in the reference, the bad answer stays out of the
history and the view it was given is not kept). Keyed by the request alone, the next step would
be served the same unreadable answer, and the one after it, until the step budget ran out,
where the reference asks the model again at every step. Keyed by the step as well, every step
of an episode is a real request, unless the run is playing that very step again: a re-run, or a
resumed episode, that reaches step k of the same (scene, level) with the same messages reuses
step k's stored answer, and nothing else does.

**Who holds it.** The model agent, not a wrapper around its client: ``ModelAgent.act`` knows the
step (its observation has the scene, level and step index), and the ``ModelClient`` protocol
has no room for it. A wrapping client would also sit behind whatever else wraps the client
(the site's rate limiter does), and an answer found here should not take a rate-limit slot.
``make_agent_factory`` (``evaluation.registry``) gives each model agent a :class:`StepCache`.

The scope says whose answers may be reused: the site gives each user's hosted runs their own
(``user:<id>``), so a run never completes from answers someone else paid for, with a key that
may not even work. The CLI uses one scope, the empty one: the machine's owner is the only user.

An answer served from here is marked ``cached`` in its step record; it keeps the tokens and
latency of the request that first got it, which totals of what a run spent leave out.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass
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

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StepKey:
    """Which step of which episode a request asks for: part of its cache key."""

    scene_id: str
    level: int
    index: int
    """0-based index of the step (``Observation.step``)."""


def request_key(
    provider: str,
    model: str,
    base_url: str | None,
    params: GenerationParams,
    messages: list[Message],
    *,
    step: StepKey,
    scope: str = "",
) -> str:
    """Return the cache key of the request for ``step``, made on behalf of ``scope``."""
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
        "step": {"scene_id": step.scene_id, "level": step.level, "index": step.index},
        "messages": content,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


_OPEN_WAITS_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2)
"""The waits between tries to prepare the cache's file when another process holds it."""


class ResponseCache:
    """Replies stored by request key in a SQLite file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        for wait in (*_OPEN_WAITS_S, None):
            try:
                self._prepare()
                break
            except sqlite3.OperationalError as exc:
                if wait is None or "locked" not in str(exc):
                    self._db.close()
                    raise
                time.sleep(wait)

    def _prepare(self) -> None:
        # Switching to WAL takes the file's exclusive lock, and SQLite answers "database is
        # locked" at once, without waiting, when another process opening the same new file
        # holds its shared lock for the same switch (a worker's episodes start together):
        # the switch is asked for only when the file is not in WAL yet, and tried again.
        if str(self._db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
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


class StepCache:
    """The response cache as a model agent uses it: one stored answer per step of an episode.

    One per run (or per hosted episode), shared by its agents: the store, the scope whose
    answers may be reused and the base URL the client calls. Only usable answers are stored
    (refusals too: they are the model's answer); transport errors raise before anything is.
    """

    def __init__(
        self, cache: ResponseCache, *, base_url: str | None = None, scope: str = ""
    ) -> None:
        self.cache = cache
        self.base_url = base_url
        self.scope = scope

    def complete(self, client: ModelClient, messages: list[Message], step: StepKey) -> ModelReply:
        """Return the answer stored for ``step`` asked ``messages``, else ask ``client`` and
        store its answer. A stored answer comes back with ``request["cached"]`` set."""
        key = request_key(
            client.provider,
            client.model,
            self.base_url,
            client.params,
            messages,
            step=step,
            scope=self.scope,
        )
        cached = self.cache.get(key)
        if cached is not None:
            cached.request = {**cached.request, "cached": True}
            return cached
        reply = client.complete(messages)
        try:
            self.cache.put(key, reply)
        except sqlite3.Error as exc:
            # The answer is the model's all the same: a cache that cannot be written (a full
            # disk) costs a request next time, never the answer or the episode.
            logger.warning("Cannot store an answer in the response cache: %s", exc)
        return reply
