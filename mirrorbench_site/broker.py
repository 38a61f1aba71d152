"""The embedded broker: kombu's filesystem transport, with messages that appear whole and are
taken once.

kombu's own transport (``kombu.transport.filesystem``) creates a message file in the queue
folder and then writes it, and a consumer moves a file out of that folder without taking the
writer's lock: a consumer can take a file its producer has created but not yet written, fail to
decode the empty payload, and the message is gone and the error kills the Celery worker (kombu
issue 1551). This transport never lets a partial file into the queue folder, and never lets an
unreadable file stop a consumer (``docs/architecture.md``, "The embedded broker"):

* a producer writes the message under ``incoming/`` (a name no consumer looks at), then renames
  it into the queue folder: the rename is atomic, so a message file there is always whole;
* a consumer claims a message by renaming it out of the queue folder into ``claimed/`` before
  reading it: exactly one consumer's rename succeeds, the others skip to the next file;
* a claimed file that cannot be read or decoded is moved aside to ``corrupt/`` and logged, and
  the consumer goes on with the next message;
* the exchange tables under ``control/`` are created without truncation and read and written
  under one lock, so two processes declaring the same exchange at once keep both bindings.

Message names, the folder layout and the transport options are kombu's, so messages left by
kombu's transport are read as any other, and fanout, purge and queue sizes work as before.
``mirrorbench_site.celery`` registers this class under the ``filesystem`` URL scheme.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections import deque
from pathlib import Path
from queue import Empty
from typing import IO, Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, virtual
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

#: The import path that the ``filesystem`` URL scheme names in this site's processes.
TRANSPORT_PATH = "mirrorbench_site.broker:Transport"


def register(alias: str = "filesystem") -> None:
    """Make ``alias://`` URLs use this transport in this process (``mirrorbench_site.celery``)."""
    from kombu import transport

    transport.TRANSPORT_ALIASES[alias] = TRANSPORT_PATH
    transport._transport_cache.pop(alias, None)


def _message_suffix(queue: str) -> str:
    # kombu's names: "<time>_<uuid>.<queue>.msg"; neither part before the first dot has a dot.
    return f"{queue}.msg"


class Channel(filesystem.Channel):
    """A filesystem channel whose messages are renamed in whole and claimed by a rename."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Names of each queue's messages from the last listing, oldest first: a consumer lists
        # the folder once for a batch of messages instead of once per message.
        self._listed: dict[str, deque[str]] = {}

    # Folders. kombu's options name the queue, processed and control folders; the three new
    # ones default to siblings of the queue folder, on the same file system (renames between
    # them are atomic only there).

    def _folder(self, option: str, name: str) -> Path:
        default = Path(self.data_folder_in).parent / name
        folder = Path(self.transport_options.get(option) or default)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    @property
    def incoming_folder(self) -> Path:
        """Where a producer writes a message before renaming it into the queue folder."""
        return self._folder("incoming_folder", "incoming")

    @property
    def claimed_folder(self) -> Path:
        """Where a consumer moves a message it has claimed, while it reads it."""
        return self._folder("claimed_folder", "claimed")

    @property
    def corrupt_folder(self) -> Path:
        """Where a message that cannot be read or decoded is set aside."""
        return self._folder("corrupt_folder", "corrupt")

    # Messages.

    # kombu names the message "message" in the abstract channel, "payload" in the filesystem one.
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Write the message under ``incoming/``, then rename it whole into the queue folder."""
        # Wall-clock nanoseconds, zero-padded: names sort in the order they were put, across
        # processes and reboots (kombu's monotonic milliseconds restart at each boot).
        name = f"{time.time_ns():020d}_{uuid.uuid4()}.{queue}.msg"
        data = str_to_bytes(dumps(payload))
        staged = self.incoming_folder / name
        try:
            with open(staged, "xb") as file:
                file.write(data)
            os.rename(staged, Path(self.data_folder_out) / name)
        except OSError as exc:
            staged.unlink(missing_ok=True)
            raise ChannelError(f"Cannot add message {name!r} to the queue folder") from exc

    def _get(self, queue: str, timeout: float | None = None) -> dict[str, Any]:
        """Claim and return the oldest readable message of ``queue``; raise ``Empty`` if none.

        A name listed earlier that another consumer has taken since is skipped; once the
        listing runs out, the folder is listed again, once, before saying it is empty.
        """
        listed_now = False
        while True:
            pending = self._listed.get(queue)
            if not pending:
                if listed_now:
                    raise Empty()
                pending = self._listed[queue] = self._list(queue)
                listed_now = True
                if not pending:
                    raise Empty()
            message = self._claim(pending.popleft())
            if message is not None:
                return message

    def _list(self, queue: str) -> deque[str]:
        suffix = _message_suffix(queue)
        try:
            names = os.listdir(self.data_folder_in)
        except FileNotFoundError:
            return deque()
        return deque(sorted(n for n in names if n.partition(".")[2] == suffix))

    def _claim(self, name: str) -> dict[str, Any] | None:
        """Take the message ``name`` and return it, or None if it is gone or unreadable."""
        claimed = self.claimed_folder / name
        try:
            os.rename(Path(self.data_folder_in) / name, claimed)
        except FileNotFoundError:
            return None  # another consumer took it first
        except OSError as exc:
            logger.error("Cannot claim message %s of the embedded broker: %s", name, exc)
            return None
        try:
            message = loads(bytes_to_str(claimed.read_bytes()))
            properties = message.get("properties") if isinstance(message, dict) else None
            if not isinstance(properties, dict) or "delivery_tag" not in properties:
                raise ValueError("not a kombu message (no properties with a delivery tag)")
        except (OSError, ValueError, TypeError) as exc:
            self._set_aside(claimed, exc)
            return None
        try:
            if self.store_processed:
                os.replace(claimed, Path(self.processed_folder) / name)
            else:
                claimed.unlink()
        except OSError as exc:
            logger.warning("Cannot remove the claimed message %s: %s", claimed, exc)
        return message

    def _set_aside(self, claimed: Path, exc: BaseException) -> None:
        target = self.corrupt_folder / claimed.name
        try:
            os.replace(claimed, target)
        except OSError as move_exc:
            logger.error(
                "Unreadable message %s of the embedded broker (%s) left in place: %s",
                claimed,
                exc,
                move_exc,
            )
            return
        logger.warning(
            "Unreadable message of the embedded broker set aside as %s: %s: %s",
            target,
            type(exc).__name__,
            exc,
        )

    # Exchange tables. kombu truncates a table file on creating it before taking its lock, and
    # reads it under a shared lock that the creator may not hold yet: a reader then decodes an
    # empty file (an error), and of two processes creating the same table one binding is lost.
    # Here a table is opened without truncation and only read or written under its lock; an
    # empty table is one with no bindings yet.

    def _read_table(self, file: IO[bytes], path: Path) -> list[filesystem.exchange_queue_t]:
        raw = file.read()
        if not raw.strip():
            return []
        try:
            return [filesystem.exchange_queue_t(*q) for q in loads(bytes_to_str(raw))]
        except (ValueError, TypeError) as exc:
            logger.error("Unreadable exchange table %s, taken as empty: %s", path, exc)
            return []

    def get_table(self, exchange: str) -> list[filesystem.exchange_queue_t]:
        path = self._exchange_file(exchange)
        try:
            with path.open("rb") as file:
                filesystem.lock(file, filesystem.LOCK_SH)
                try:
                    return self._read_table(file, path)
                finally:
                    filesystem.unlock(file)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ChannelError(f"Cannot open {path}") from exc

    def _update_table(self, exchange: str, update: Any) -> None:
        """Apply ``update`` (a list of bindings to a new one, or None) under the table's lock."""
        path = self._exchange_file(exchange)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
            with os.fdopen(fd, "rb+", buffering=0) as file:
                filesystem.lock(file, filesystem.LOCK_EX)
                try:
                    table = update(self._read_table(file, path))
                    if table is not None:
                        file.seek(0)
                        file.write(str_to_bytes(dumps(table)))
                        file.truncate()
                finally:
                    filesystem.unlock(file)
        except OSError as exc:
            raise ChannelError(f"Cannot open {path}") from exc

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")

        def add(table: list[filesystem.exchange_queue_t]) -> list[Any] | None:
            return None if binding in table else [binding, *table]

        self._update_table(exchange, add)

    def _delete(
        self, queue: str, exchange: str, routing_key: str, pattern: str, *args: Any, **kwargs: Any
    ) -> None:
        virtual.Channel._delete(self, queue, exchange, routing_key, pattern, *args, **kwargs)
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        if not self._exchange_file(exchange).exists():
            return

        def remove(table: list[filesystem.exchange_queue_t]) -> list[Any] | None:
            return [b for b in table if b != binding] if binding in table else None

        self._update_table(exchange, remove)


class Transport(filesystem.Transport):
    """The filesystem transport with :class:`Channel`."""

    Channel = Channel
