"""What Linux's /proc says of the processes running now: the tests' view of the processes they
start (a process group's members, a process's descendants)."""

from __future__ import annotations

from pathlib import Path


def processes() -> dict[int, list[str]]:
    """Return the fields of ``/proc/PID/stat`` after the command name, by pid, for every
    process there now: ``[state, ppid, pgrp, session, ...]``. A process that ends while it is
    read is left out."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            found[int(stat.parent.name)] = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
    return found


def group_alive(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that have not exited (zombies have: their files and
    sockets are closed)."""
    return [
        pid
        for pid, fields in processes().items()
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X")
    ]


def descendants(root: int) -> set[int]:
    """The pids of every process below ``root``: its children, theirs, and so on."""
    children: dict[int, list[int]] = {}
    for pid, fields in processes().items():
        children.setdefault(int(fields[1]), []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found
