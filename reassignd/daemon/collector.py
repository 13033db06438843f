"""The daemon process's garbage-collector policy.

A big plan keeps millions of long-lived objects (a snapshot and a plan of 100,000 partitions each), and
every cycle replaces a snapshot's worth of them. Under CPython's default thresholds (700, 10, 10) that
triggers a full collection every few hundred thousand allocations, each walking every live object: on a
100,000-partition plan, 11 s of a run of four cycles went to the collector (bench/bench_daemon.py).
Almost nothing the daemon builds is cyclic (frozen dataclasses, tuples, dicts), so reference counting
frees it; the collector only has to find rare cycles, and may look for them far less often.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 50_000
"""Allocations less deallocations between young collections (CPython's default: 700)."""
MIDDLE_THRESHOLD = 20
OLD_THRESHOLD = 100


def tune_collector() -> None:
    """Collect young objects every 50,000 net allocations and the whole heap rarely (process-wide)."""
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)
