"""The daemon process's C allocator: at most two glibc malloc arenas, and free pages handed back between
cycles.

glibc gives each thread that allocates an arena of its own, up to eight per core, and memory freed in one
arena is not reused by another. The daemon runs many threads that allocate: librdkafka's (one per broker)
and the pool that decodes the cluster's answers off the event loop. On a 100,000-partition plan its peak
RSS was 631-638 MiB with glibc's default and 557-565 MiB with two arenas (bench/profile_daemon.py, two
runs each), at the same cycle times: the Python interpreter's lock lets one thread allocate at a time
anyway. An operator's `MALLOC_ARENA_MAX` is left as it is; another C library than glibc is left alone.

glibc hands memory back to the system only from the top of its heap. A cycle of a big plan frees a
snapshot's worth of objects among the ones that live on, and the pages between them stayed resident: on a
100,000-partition plan 50-85 MiB after every cycle, freed but counted in the daemon's RSS (and by the
container's memory limit). `release_free_memory` gives them back (malloc_trim), between two cycles: 2-45 ms.
"""

from __future__ import annotations

import ctypes
import os

ARENAS = 2
M_ARENA_MAX = -8
"""mallopt's parameter number for the arena limit (glibc's malloc.h)."""


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Caps glibc's arenas for the threads started from now on; True when the cap was set here."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False  # the operator's, read by glibc at start-up
    try:  # the C library the interpreter runs on (no ldconfig run to find it by name)
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    return bool(mallopt(M_ARENA_MAX, arenas))


def release_free_memory() -> bool:
    """Free pages of the C heap handed back to the system (glibc's malloc_trim): whether any were (never,
    where the C library is not glibc)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    return bool(trim(0))
