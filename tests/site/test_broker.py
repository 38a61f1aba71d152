"""The embedded broker (``mirrorbench_site.broker``): every message delivered once, whole,
whatever the number of producers and consumers; an unreadable file never stops a consumer.

``stress`` is also how the figures of ``docs/architecture.md`` were taken: run it with
``CELERY_BROKER_URL`` set to another broker, or with ``kombu.transport.TRANSPORT_ALIASES``'s
``filesystem`` pointed back at kombu's own transport, which fails it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import multiprocessing
import os
import random
import threading
import time
import traceback
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from kombu import Connection, Consumer, Exchange, Queue

from mirrorbench_site.celery import app

SMALLEST, LARGEST = 100, 1_000_000
STRESS_TASK = "mirrorbench.tests.broker_stress"  # never run: the consumers read the messages


def blob(message_id: str, size: int) -> str:
    """The payload of ``message_id``: ``size`` characters the consumer can check."""
    return (message_id * (size // len(message_id) + 1))[:size]


def sizes(count: int) -> list[int]:
    """``count`` sizes spaced evenly in log scale from 100 bytes to 1 MB, both included."""
    ratio = LARGEST / SMALLEST
    return [round(SMALLEST * ratio ** (i / (count - 1))) for i in range(count)]


def task_queue(name: str) -> Queue:
    """The queue Celery creates for ``send_task(..., queue=name)``."""
    return Queue(name, Exchange(name), routing_key=name)


def _report(errors: Path) -> None:
    """Write the exception being handled to ``errors``; re-raise it in a child process, so
    that the process dies as a worker would (a thread just ends)."""
    errors.write_text(traceback.format_exc())
    if multiprocessing.parent_process() is not None:
        raise


def produce(queue: str, messages: list[tuple[str, int]], pause: float, errors: Path) -> None:
    """Send each (id, size) through the site's Celery app, as the site queues a task, up to
    ``pause`` seconds apart."""
    pace = random.Random(queue)
    try:
        for message_id, size in messages:
            app.send_task(STRESS_TASK, args=(message_id, blob(message_id, size)), queue=queue)
            time.sleep(pace.uniform(0, pause))
    except BaseException:
        _report(errors)


def consume(queue: str, record: Path, stop: Any, errors: Path) -> None:
    """Drain ``queue`` through the site's Celery connection until ``stop`` is set, appending
    each message id and size to ``record``; a message whose payload is not whole is an error
    (it ends the consumer)."""
    try:
        with app.connection_for_read() as conn, record.open("a") as out:

            def received(body: Any, message: Any) -> None:
                (message_id, payload), _kwargs, _embed = body
                if payload != blob(message_id, len(payload)):
                    raise AssertionError(f"message {message_id} is not whole")
                out.write(f"{message_id} {len(payload)}\n")
                out.flush()
                message.ack()

            with Consumer(conn, [task_queue(queue)], callbacks=[received], accept=["json"]) as c:
                c.qos(prefetch_count=1)
                while not stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        conn.drain_events(timeout=0.2)
    except BaseException:
        _report(errors)


def stress(
    folder: Path,
    *,
    producers: int = 4,
    per_producer: int = 40,
    consumers: int = 2,
    pause: float = 0.0,
    threads: bool = False,
) -> dict[str, Any]:
    """Run ``producers`` processes (or threads) sending ``per_producer`` messages each, 100
    bytes to 1 MB, up to ``pause`` seconds apart, while ``consumers`` processes (threads)
    drain the same queue. Return what each consumer received, which were still alive when
    the last message arrived (or one had died), the errors, and the throughput.
    """
    queue = f"mbstress-{uuid.uuid4().hex[:12]}"
    total = producers * per_producer
    plan = [(f"m{i:05d}", size) for i, size in enumerate(sizes(total))]
    random.Random(1551).shuffle(plan)
    fork = multiprocessing.get_context("fork")
    stop = threading.Event() if threads else fork.Event()

    def start(target: Any, *args: Any) -> Any:
        kind = threading.Thread if threads else fork.Process
        worker = kind(target=target, args=args, daemon=True)
        worker.start()
        return worker

    records = [folder / f"consumer-{c}.txt" for c in range(consumers)]
    errors = [folder / f"consumer-{c}.err" for c in range(consumers)]
    errors += [folder / f"producer-{p}.err" for p in range(producers)]
    readers = [start(consume, queue, records[c], stop, errors[c]) for c in range(consumers)]
    started = time.monotonic()
    writers = [
        start(produce, queue, plan[p::producers], pause, errors[consumers + p])
        for p in range(producers)
    ]

    def count() -> int:
        return sum(len(r.read_text().splitlines()) for r in records if r.exists())

    deadline = started + 60
    while count() < total and time.monotonic() < deadline:
        if not all(reader.is_alive() for reader in readers):
            break
        time.sleep(0.02)
    elapsed = time.monotonic() - started
    alive = [reader.is_alive() for reader in readers]
    for writer in writers:
        writer.join(timeout=30)
    stop.set()
    for reader in readers:
        reader.join(timeout=30)
    received = [r.read_text().split()[0::2] if r.exists() else [] for r in records]
    return {
        "queue": queue,
        "sent": [m for m, _ in plan],
        "received": received,
        "alive": alive,
        "exitcodes": [getattr(w, "exitcode", 0) for w in readers + writers],
        "errors": [e.read_text() for e in errors if e.exists()],
        "seconds": elapsed,
        "per_second": total / elapsed,
        "megabytes": sum(size for _, size in plan) / 1e6,
    }


def assert_delivered_exactly_once(result: dict[str, Any]) -> None:
    assert result["errors"] == [], "\n".join(result["errors"])[-4000:]
    assert all(result["alive"]), f"a consumer died: {result['exitcodes']}"
    assert result["exitcodes"] == [0] * len(result["exitcodes"])
    counts = Counter(itertools.chain.from_iterable(result["received"]))
    assert sorted(set(result["sent"]) - set(counts)) == [], "messages lost"
    assert sorted(m for m, n in counts.items() if n > 1) == [], "messages received twice"
    assert sorted(counts) == sorted(result["sent"])
    assert all(result["received"]), "a consumer received nothing"
    # Nothing left behind for this queue: no message in the queue, staged, claimed or set aside.
    broker = Path(settings.CELERY_BROKER_DIR)
    folders = [broker / sub for sub in ("queue", "incoming", "claimed", "corrupt")]
    left = [p for f in folders if f.is_dir() for p in f.iterdir() if result["queue"] in p.name]
    assert left == []


# Paced, the consumers wait on an empty queue and take each message as soon as it appears: with
# kombu's transport that is when it is caught half-written (it fails nearly every run); flat
# out, they mostly take old, whole messages (it fails about three runs in four).
@pytest.mark.parametrize("pause", [0.0, 0.02], ids=["flat-out", "paced"])
def test_every_message_of_producer_processes_reaches_one_of_two_consumer_processes(tmp_path, pause):
    assert_delivered_exactly_once(stress(tmp_path, pause=pause))


def test_every_message_of_producer_threads_reaches_one_of_two_consumer_threads(tmp_path):
    assert_delivered_exactly_once(stress(tmp_path, threads=True, per_producer=20, pause=0.01))


def test_the_site_app_uses_the_embedded_broker_for_filesystem_urls():
    from mirrorbench_site.broker import Transport

    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        pytest.skip("another broker is configured for this run")
    with app.connection_for_read() as conn:
        assert isinstance(conn.transport, Transport)
    with Connection("filesystem://") as conn:
        assert isinstance(conn.transport, Transport)


def folders(root: Path) -> dict[str, str]:
    """Transport options with every folder under ``root`` (the site's layout)."""
    names = ("queue", "incoming", "claimed", "corrupt", "processed", "control")
    for name in names:
        (root / name).mkdir(parents=True, exist_ok=True)
    options = {f"{name}_folder": str(root / name) for name in names[1:]}
    return {
        **options,
        "data_folder_in": str(root / "queue"),
        "data_folder_out": str(root / "queue"),
    }


def unique(name: str) -> str:
    """``name`` made unique: kombu remembers the bindings it declared in a process, whatever
    the folders, and would not write them again under another test's folder."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


def connection(root: Path, transport: str | None = None) -> Connection:
    if transport:
        return Connection(transport=transport, transport_options=folders(root))
    return Connection("filesystem://", transport_options=folders(root))


def test_an_unreadable_message_file_is_set_aside_and_the_consumer_goes_on(tmp_path, caplog):
    name = unique("jobs")
    with connection(tmp_path) as conn:
        queue = conn.SimpleQueue(name)
        queue.put({"n": 1})
        (whole,) = (tmp_path / "queue").iterdir()
        # Older names than the whole message: each is read first.
        unreadable = {
            "empty": b"",
            "half-written": whole.read_bytes()[: whole.stat().st_size // 2],
            "garbage": b"\xff\xfe\x00 not json",
            "not-an-object": b"[1, 2, 3]",
            "not-a-message": b'{"body": "e30="}',
        }
        for rank, content in enumerate(unreadable.values(), start=1):
            (tmp_path / "queue" / f"{rank:020d}_{uuid.uuid4()}.{name}.msg").write_bytes(content)
        with caplog.at_level(logging.WARNING, logger="mirrorbench_site.broker"):
            message = queue.get(timeout=2)
            assert message.payload == {"n": 1}
            message.ack()
            with pytest.raises(queue.Empty):
                queue.get(timeout=0.2)
        queue.close()
    assert list((tmp_path / "queue").iterdir()) == []
    assert list((tmp_path / "claimed").iterdir()) == []
    aside = sorted((tmp_path / "corrupt").iterdir())
    assert [p.read_bytes() for p in aside] == list(unreadable.values())
    warnings = [r.getMessage() for r in caplog.records if r.name == "mirrorbench_site.broker"]
    assert len(warnings) == len(unreadable)
    assert all("set aside" in w for w in warnings)
    assert all(any(p.name in w for w in warnings) for p in aside)


def test_a_message_is_renamed_into_the_queue_folder_whole(tmp_path, monkeypatch):
    """While a message is written, it is in incoming/ and no consumer sees it."""
    seen = []
    real_rename = os.rename

    def rename(source: Any, target: Any) -> None:
        if Path(source).parent == tmp_path / "incoming":
            seen.append((list((tmp_path / "queue").iterdir()), Path(source).read_bytes()))
        return real_rename(source, target)

    monkeypatch.setattr(os, "rename", rename)
    with connection(tmp_path) as conn:
        queue = conn.SimpleQueue(unique("jobs"))
        queue.put({"blob": "x" * 100_000})
        queue.close()
    ((before, written),) = seen
    assert before == []
    ((path,),) = [list((tmp_path / "queue").iterdir())]
    assert path.read_bytes() == written
    assert json.loads(written)["properties"]["delivery_tag"]
    assert list((tmp_path / "incoming").iterdir()) == []


def test_messages_left_by_kombus_transport_are_still_read(tmp_path):
    name = unique("jobs")
    with connection(tmp_path, "kombu.transport.filesystem:Transport") as old:
        queue = old.SimpleQueue(name)
        queue.put({"n": 1})
        queue.close()
    with connection(tmp_path) as conn:
        queue = conn.SimpleQueue(name)
        message = queue.get(timeout=2)
        assert message.payload == {"n": 1}
        message.ack()
        queue.close()


def test_fanout_reaches_every_bound_queue_and_purge_empties_a_queue(tmp_path):
    broadcast = Exchange(unique("broadcast"), type="fanout")
    with connection(tmp_path) as conn:
        channel = conn.channel()
        queues = [Queue(unique(name), broadcast)(channel) for name in ("a", "b")]
        for queue in queues:
            queue.declare()
        producer = conn.Producer(channel)
        for n in range(3):
            producer.publish({"n": n}, exchange=broadcast, declare=[broadcast])
        assert [q.queue_declare(passive=True).message_count for q in queues] == [3, 3]
        message = queues[0].get(no_ack=True)
        assert message is not None and message.payload == {"n": 0}
        assert queues[1].purge() == 3
        assert [q.queue_declare(passive=True).message_count for q in queues] == [2, 0]
        channel.close()


def _bind(root: str, exchanges: list[str], name: str, barrier: Any) -> None:
    with connection(Path(root)) as conn:
        channel = conn.channel()
        for exchange in exchanges:
            barrier.wait(timeout=10)
            Queue(name, Exchange(exchange, type="fanout"))(channel).declare()
        channel.close()


def test_processes_binding_queues_to_one_exchange_at_once_keep_every_binding(tmp_path):
    fork = multiprocessing.get_context("fork")
    exchanges = [unique("shared") for _ in range(20)]
    names = sorted(unique(f"q{n}") for n in range(8))
    barrier = fork.Barrier(len(names))
    binders = [
        fork.Process(target=_bind, args=(str(tmp_path), exchanges, name, barrier)) for name in names
    ]
    for binder in binders:
        binder.start()
    for binder in binders:
        binder.join(timeout=30)
    assert [b.exitcode for b in binders] == [0] * len(names)
    with connection(tmp_path) as conn:
        channel = conn.channel()
        for exchange in exchanges:
            assert sorted(b.queue for b in channel.get_table(exchange)) == names
        channel.close()


def test_an_exchange_table_just_created_and_still_empty_has_no_bindings(tmp_path):
    """A process that created a table file but has not written it yet (kombu's reader would
    fail to decode it, its writer would too)."""
    exchange = unique("fresh")
    (tmp_path / "control").mkdir()
    (tmp_path / "control" / f"{exchange}.exchange").write_bytes(b"")
    with connection(tmp_path) as conn:
        channel = conn.channel()
        assert channel.get_table(exchange) == []
        queue = Queue(unique("q"), Exchange(exchange, type="fanout"))(channel)
        queue.declare()
        assert [b.queue for b in channel.get_table(exchange)] == [queue.name]
        channel.close()
