"""The daemon process's garbage-collector policy.

A big plan keeps millions of long-lived objects (a snapshot and a plan of 100,000 partitions each), and
every cycle replaces a snapshot's worth of them. Under CPython's default thresholds (700, 10, 10) that
triggers a full collection every few hundred thousand allocations, each walking every live object: on a
100,000-partition plan, 11 s of a run of four cycles went to the collector (bench/bench_daemon.py).
Almost nothing the daemon builds is cyclic (frozen dataclasses, tuples, dicts), so reference counting
frees it; the collector only has to find rare cycles, and may look for them far less often.

Even at 50,000 the young collections walked each cycle's 1.5 million new objects once or twice (0.15-0.35 s
of a 0.8-1.0 s cycle at 100,000 partitions): `paced` keeps the collector out of the cycle itself, moves what
survives it out of the collector's sight (gc.freeze), and looks for cycles among everything every
`FULL_COLLECTION_SECONDS`, between two cycles. Objects freed by reference counting are freed at once, frozen
or not; only cyclic garbage waits for that pass. Then the C heap's free pages go back to the system
(allocator.py).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from reassignd.daemon.allocator import release_free_memory

YOUNG_THRESHOLD = 50_000
"""Allocations less deallocations between young collections (CPython's default: 700)."""
MIDDLE_THRESHOLD = 20
OLD_THRESHOLD = 100
FULL_COLLECTION_SECONDS = 300.0
"""How often `paced` cycles look for cyclic garbage among every object, frozen ones included."""

T = TypeVar("T")


def tune_collector() -> None:
    """Collect young objects every 50,000 net allocations and the whole heap rarely (process-wide)."""
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)


class Pacer:
    """The collector's schedule around controller cycles (one per process: the collector is global)."""

    def __init__(
        self,
        every: float = FULL_COLLECTION_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        free_pages: Callable[[], object] = release_free_memory,
    ) -> None:
        self.every = every
        self.clock = clock
        self.free_pages = free_pages
        self.last_full = clock()
        self.full_collections = 0

    def paced(self, cycle: Callable[[], Awaitable[T]]) -> Callable[[], Awaitable[T]]:
        async def run() -> T:
            with self.cycle():
                return await cycle()

        return run

    @contextmanager
    def cycle(self) -> Iterator[None]:
        enabled = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if self.clock() - self.last_full >= self.every:
                gc.unfreeze()
                gc.collect()
                self.last_full = self.clock()
                self.full_collections += 1
            gc.freeze()
            self.free_pages()
            if enabled:
                gc.enable()

    def release(self) -> None:
        """Back to CPython's own schedule for everything (the daemon stops; tests run on)."""
        gc.unfreeze()
        gc.collect()
