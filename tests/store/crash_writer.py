"""A process that commits to a SqliteStore in a loop and prints each acknowledged write: kill -9 fodder.

    python -m tests.store.crash_writer DB FIRST

Write i journals step i as started, updates the partition state of t-(i % 50), and records an original
config; it prints `i` only after commit() returned. When step i is already journaled (a write that was
committed but not acknowledged before the previous kill), it prints `replay i` and goes on.
"""

from __future__ import annotations

import sys

from reassignd.model import TopicPartition
from reassignd.store import (
    ConfigResource,
    Event,
    EventKind,
    PlanStatus,
    SqliteStore,
    StepReplayError,
    WriteBatch,
)

PLAN_ID = "crash"
PARTITIONS = 50


def batch_for(i: int) -> WriteBatch:
    tp = TopicPartition("t", i % PARTITIONS)
    return (
        WriteBatch()
        .append(Event(EventKind.STEP_STARTED, PLAN_ID, tp, i, {"i": i}))
        .put_partition_state(PLAN_ID, tp, {"i": i})
        .record_original(ConfigResource("broker", str(i % 7)), f"key.{i}", None if i % 2 else str(i))
    )


def main(db: str, first: int) -> None:
    store = SqliteStore(db)
    if store.get_plan(PLAN_ID) is None:
        store.commit(
            WriteBatch()
            .submit_plan(PLAN_ID, {"version": 1, "partitions": []}, {})
            .set_status(PLAN_ID, PlanStatus.RUNNING)
        )
    print("ready", flush=True)
    i = first
    while True:
        try:
            store.commit(batch_for(i))
        except StepReplayError:
            print(f"replay {i}", flush=True)
        print(i, flush=True)
        i += 1


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
