"""The malloc arena cap that runs with many threads set."""

import os
import platform

import pytest

from evaluation.memory import limit_malloc_arenas, release_free_memory


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="a glibc setting")
def test_the_arenas_are_capped_on_glibc(monkeypatch):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert limit_malloc_arenas() is True


def test_the_environment_wins(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc_trim")
def test_freed_heap_pages_go_back_to_the_system():
    # 160 MB in blocks malloc keeps on its heap, pinned by one block after them, so that
    # freeing them leaves the pages with malloc (as a scene compile's scratch does).
    blocks = [bytearray(64 * 1024) for _ in range(2560)]
    pin = bytearray(64 * 1024)
    before = resident_bytes()
    del blocks
    held = resident_bytes()
    assert release_free_memory() is True
    after = resident_bytes()
    assert held - after > 100 * 2**20, (before, held, after)
    del pin
