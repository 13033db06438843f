"""Engine decision cost: a 100,000-partition plan with 1,000 steps in flight.

Figures: the full decision (changed=None: reconcile the whole plan, as after a restart), and the
incremental decision as a function of how many partitions changed since the last one (the daemon's
steady state). On a shared 2-core machine the figures are noisy; medians of several runs are printed.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from reassignd.engine.decide import changed_partitions, decide
from reassignd.engine.dryrun import apply_starts, complete
from reassignd.engine.limits import Limits
from reassignd.engine.state import ExecutionState, Status
from reassignd.model import Broker, ClusterSnapshot, PartitionState, ReassignmentPlan, TopicPartition


def _build(partitions: int, brokers: int, seed: int = 7) -> tuple[ClusterSnapshot, ReassignmentPlan]:
    rng = random.Random(seed)
    states = []
    targets = {}
    for i in range(partitions):
        tp = TopicPartition(f"topic-{i % 200}", i // 200)
        replicas = tuple(rng.sample(range(brokers), 3))
        size = rng.randint(1, 1000) * 1_000_000
        states.append(
            PartitionState(tp, replicas, replicas, leader=replicas[0], size_bytes=size, replica_sizes={})
        )
        outside = [b for b in rng.sample(range(brokers), 6) if b not in replicas]
        targets[tp] = (
            (replicas[0], replicas[1], outside[0]) if i % 2 else (outside[0], replicas[1], outside[1])
        )
    snapshot = ClusterSnapshot.build([Broker(b) for b in range(brokers)], states)
    return snapshot, ReassignmentPlan(targets)


def _median_ms(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times = []
    result = None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def run(quick: bool) -> dict[str, Any]:
    partitions = 5_000 if quick else 100_000
    in_flight = 100 if quick else 1_000
    brokers = 50 if quick else 200
    runs = 3 if quick else 7
    limits = Limits(
        parallel_partition_count=in_flight,
        max_incoming_per_broker=in_flight,
        max_outgoing_per_broker=in_flight,
    )
    snapshot, plan = _build(partitions, brokers)
    t0 = time.perf_counter()
    state = ExecutionState.initial(plan, snapshot, tuple(limits.ordering))
    initial_ms = (time.perf_counter() - t0) * 1000

    first_ms, first = _median_ms(lambda: decide(snapshot, plan, state, limits, None), 1)
    if len(first.start) != in_flight:
        raise AssertionError(f"expected {in_flight} steps started, got {len(first.start)}")
    running = apply_starts(snapshot, first.start)
    state = first.state
    pending = state.counts[Status.PENDING]
    print(f"   plan {partitions} partitions, {brokers} brokers; initial state {initial_ms:.0f} ms")
    print(f"   first decision (full reconcile, starts {in_flight}): {first_ms:.0f} ms")

    full_ms, again = _median_ms(lambda: decide(running, plan, state, limits, None), runs)
    if again.start:
        raise AssertionError("a full reconcile with every slot taken must start nothing")
    print(f"   full decision, {pending} pending + {in_flight} in flight: median {full_ms:.1f} ms")

    diff_ms, diff = _median_ms(lambda: changed_partitions(snapshot, running), runs)
    if len(diff) != in_flight:
        raise AssertionError(f"changed_partitions found {len(diff)}, expected {in_flight}")
    print(
        f"   changed_partitions over {partitions} partitions ({in_flight} changed): median {diff_ms:.1f} ms"
    )

    in_flight_tps = [s.tp for s in first.start]
    incremental: dict[str, float] = {}
    for changed_count in (0, 1, 10, 100, 1000):
        if changed_count > in_flight:
            break
        changed = set(in_flight_tps[:changed_count])
        after = complete(running, changed)

        def incremental_decision(
            after: ClusterSnapshot = after, changed: set[TopicPartition] = changed
        ) -> Any:
            return decide(after, plan, state, limits, changed)

        ms, decision = _median_ms(incremental_decision, runs)
        if len(decision.completed) != changed_count:
            raise AssertionError(f"{changed_count} completions expected, saw {len(decision.completed)}")
        if decision.state.load.partitions > limits.parallel_partition_count:
            raise AssertionError("partition limit exceeded")
        incremental[str(changed_count)] = round(ms, 2)
        print(
            f"   incremental decision, {changed_count:>4} changed: median {ms:7.2f} ms "
            f"(started {len(decision.start)}, examined {decision.examined})"
        )
    return {
        "partitions": partitions,
        "in_flight": in_flight,
        "initial_state_ms": round(initial_ms, 1),
        "first_decision_ms": round(first_ms, 1),
        "full_decision_median_ms": round(full_ms, 1),
        "changed_partitions_median_ms": round(diff_ms, 1),
        "incremental_median_ms_by_changed": incremental,
        "target_ms": 200,
        "note": "shared 2-core machine; noisy",
    }


if __name__ == "__main__":
    run(quick=False)
