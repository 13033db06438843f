"""The daemon caps glibc's malloc arenas (daemon/allocator.py): counted in a real process by malloc_info."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(
    """
    import ctypes, ctypes.util, json, os, sys, tempfile, threading
    from reassignd.daemon.allocator import limit_malloc_arenas

    limited = limit_malloc_arenas() if sys.argv[1] == "limit" else False
    barrier = threading.Barrier(8)
    kept = []

    def allocate():
        barrier.wait()  # all alive at once: a thread's first malloc takes an arena of its own, if allowed
        kept.append(bytearray(64 * 1024))  # under the mmap threshold: from the thread's arena

    threads = [threading.Thread(target=allocate) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.fdopen.restype = ctypes.c_void_p
    with tempfile.TemporaryFile() as f:
        stream = libc.fdopen(os.dup(f.fileno()), b"w")
        libc.malloc_info(0, ctypes.c_void_p(stream))
        libc.fclose(ctypes.c_void_p(stream))
        f.seek(0)
        info = f.read().decode()
    print(json.dumps({"limited": limited, "arenas": info.count("<heap nr=")}))
    """
)


def arenas(mode: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return dict(json.loads(done.stdout))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_info")
def test_threads_share_two_arenas_once_limited() -> None:
    default, limited = arenas("default"), arenas("limit")
    assert limited == {"limited": True, "arenas": 2}, limited
    assert int(str(default["arenas"])) > 2, default  # what the cap saves: an arena per thread


def test_an_operators_malloc_arena_max_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    from reassignd.daemon.allocator import limit_malloc_arenas

    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False


RELEASE = textwrap.dedent(
    """
    import json, sys
    from reassignd.daemon.allocator import release_free_memory

    def rss_mib():
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        return int(status["VmRSS"].split()[0]) / 1024

    # 200 MiB in blocks under glibc's mmap threshold (from its heap), one in 50 kept: what a cycle leaves,
    # freed pages between blocks that live on, which glibc's free() never gives back
    blocks = [bytearray(4000) for _ in range(50_000)]
    kept = blocks[::50]
    del blocks
    before = rss_mib()
    released = release_free_memory() if sys.argv[1] == "release" else False
    print(json.dumps({"released": released, "freed_mib": before - rss_mib(), "kept": len(kept)}))
    """
)


def freed(mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", RELEASE, mode], capture_output=True, text=True, timeout=60, check=True
    )
    return dict(json.loads(done.stdout))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_free_pages_between_live_blocks_go_back_to_the_system() -> None:
    kept = freed("keep")
    assert float(str(kept["freed_mib"])) < 20, kept  # glibc alone keeps them
    released = freed("release")
    assert released["released"] is True and float(str(released["freed_mib"])) > 100, released
