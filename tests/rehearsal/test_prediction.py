"""The prediction holds: a plan rehearsed, then executed by `reassignd run` on the time-scaled simulator,
finishes within 10% of the predicted time.

Both are measured in simulated seconds: the rehearsal's duration, and the simulator's own clock (GET /state
`time`) from the submission to the moment the daemon reports the plan completed. The simulator is paused
while the plan is submitted, so the daemon's first cycle and the rehearsal's first cycle see the same
cluster at the same simulated time; the daemon's cycle interval (wall seconds) times the time scale is the
rehearsal's cycle interval.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reassignd.demo import drain_plan
from reassignd.engine import Limits
from reassignd.model import ClusterSnapshot, ReassignmentPlan, snapshot_from_dict
from reassignd.placement.rules import move_violation
from reassignd.placement.topology import Topology
from reassignd.rehearsal import cluster_from_snapshot, rehearse
from tests.daemon.inprocess import InProcessDaemon
from tests.services.daemon import DaemonProcess
from tests.services.simulator import SimProcess

pytestmark = pytest.mark.slow

MB = 1_000_000
CYCLE_WALL_SECONDS = 0.25
TARGET_WALL_SECONDS = 20.0  # longer runs dilute the daemon's per-cycle lag: error ~ lag x rounds / this
LIMITS: dict[str, Any] = {
    "reassignment.parallel.replica.count": 1,
    "reassignment.max.incoming.replica.movements.per.broker": 2,
    "reassignment.max.outgoing.replica.movements.per.broker": 2,
    "leader.reassignment.throttled.rate": 12 * MB,
    "follower.reassignment.throttled.rate": 8 * MB,
}
RACKS = {1: "/dc1/rack1", 2: "/dc1/rack2", 3: "/dc2/rack1", 4: "/dc2/rack2"}


def broker_list(count: int) -> list[dict[str, Any]]:
    return [{"id": b, "rack": RACKS[(b - 1) % 4 + 1]} for b in range(1, count + 1)]


def topic(name: str, partitions: int, rf: int, size: int, produce: float, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "partitions": partitions,
        "replication_factor": rf,
        "partition_bytes": [size + (i % 5) * size // 4 for i in range(partitions)],
        "produce_bytes_per_sec": produce,
        "configs": {"min.insync.replicas": "2"},
        **extra,
    }


def drain_scenario() -> dict[str, Any]:
    return {
        "seed": 3,
        "brokers": broker_list(8),
        "topics": [topic("orders", 24, 3, 150 * MB, 200_000), topic("audit", 8, 3, 400 * MB, 50_000)],
    }


def add_brokers_scenario() -> dict[str, Any]:
    """Brokers 7 and 8 were just added: every replica sits on 1-6."""
    rack_pairs = [(1, 2, 3), (2, 3, 4), (3, 4, 5), (4, 5, 6), (5, 6, 1), (6, 1, 2)]
    assignment = [list(rack_pairs[i % 6]) for i in range(30)]
    return {
        "seed": 5,
        "brokers": broker_list(8),
        "topics": [topic("events", 30, 3, 200 * MB, 100_000, assignment=assignment)],
    }


def rf_scenario() -> dict[str, Any]:
    return {
        "seed": 9,
        "brokers": broker_list(8),
        "topics": [
            topic("payments", 16, 2, 250 * MB, 150_000) | {"configs": {"min.insync.replicas": "1"}},
            topic("other", 8, 3, 100 * MB, 0),
        ],
    }


def _loads(snapshot: ClusterSnapshot) -> dict[int, int]:
    load = dict.fromkeys(snapshot.brokers, 0)
    for p in snapshot.partitions.values():
        for r in p.replicas:
            load[r] += 1
    return load


def rebalance_plan(snapshot: ClusterSnapshot) -> ReassignmentPlan:
    """Fill the empty brokers up to the average, taking from the fullest broker the spread rule allows."""
    topology = Topology.from_brokers(snapshot.brokers.values())
    load = _loads(snapshot)
    average = sum(load.values()) // len(load)
    entries = []
    for tp in sorted(snapshot.partitions):
        replicas = list(snapshot.partitions[tp].replicas)
        hungry = sorted((b for b in load if load[b] < average and b not in replicas), key=lambda b: load[b])
        for dest in hungry:
            sources = [
                s
                for s in replicas
                if load[s] > average and move_violation(replicas, s, dest, topology) is None
            ]
            if sources:
                source = max(sources, key=lambda s: load[s])
                load[source] -= 1
                load[dest] += 1
                entries.append(
                    {
                        "topic": tp.topic,
                        "partition": tp.partition,
                        "replicas": [dest if r == source else r for r in replicas],
                    }
                )
                break
    return ReassignmentPlan.from_dict({"version": 1, "partitions": entries})


def rf_plan(snapshot: ClusterSnapshot) -> ReassignmentPlan:
    """payments from 2 to 3 replicas: the least loaded broker in a data centre with one replica."""
    load = _loads(snapshot)
    entries = []
    for tp in sorted(tp for tp in snapshot.partitions if tp.topic == "payments"):
        replicas = list(snapshot.partitions[tp].replicas)
        racks = {snapshot.brokers[r].rack for r in replicas}
        candidates = [b for b in load if b not in replicas and snapshot.brokers[b].rack not in racks]
        dest = min(candidates, key=lambda b: (load[b], b))
        load[dest] += 1
        entries.append({"topic": tp.topic, "partition": tp.partition, "replicas": [*replicas, dest]})
    return ReassignmentPlan.from_dict({"version": 1, "partitions": entries})


CASES: dict[str, tuple[Callable[[], dict[str, Any]], Callable[[ClusterSnapshot], ReassignmentPlan]]] = {
    "drain-a-broker": (drain_scenario, lambda s: drain_plan(s, [8])),
    "add-brokers-and-rebalance": (add_brokers_scenario, rebalance_plan),
    "increase-replication-factor": (rf_scenario, rf_plan),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_the_daemon_in_process_takes_what_the_rehearsal_predicts(case: str) -> None:
    """Both executors of the plan-run machine on the same model: the daemon's controller (its snapshot
    shaping, size refreshes, effects) and the rehearsal driver end within a cycle of each other."""
    make_scenario, make_plan = CASES[case]
    daemon = InProcessDaemon(make_scenario(), LIMITS)
    plan = make_plan(daemon.sim.to_snapshot())
    predicted = rehearse(cluster_from_snapshot(daemon.sim.to_snapshot()), plan, Limits.from_mapping(LIMITS))
    assert predicted.finished, predicted.ended_because
    plan_id = await daemon.submit(plan, allow_rf_change=True)
    await daemon.run(seconds=4 * predicted.duration_seconds)
    record = await daemon.store.get_plan(plan_id)
    assert record is not None and record.started_at is not None and record.finished_at is not None
    actual = record.finished_at - record.started_at
    assert abs(actual - predicted.duration_seconds) <= 2 * daemon.cycle_seconds, (
        actual,
        predicted.duration_seconds,
    )
    assert all(daemon.replicas(tp.topic, tp.partition) == list(t) for tp, t in plan.targets.items())


@pytest.mark.parametrize("case", ["drain-a-broker"])
def test_executed_duration_is_within_10_percent_of_the_rehearsal(case: str, tmp_path: Path) -> None:
    make_scenario, make_plan = CASES[case]
    limits = Limits.from_mapping(LIMITS)
    with SimProcess(make_scenario(), tmp_path / "sim", time_scale=0) as sim:
        snapshot = snapshot_from_dict(sim.snapshot())
        plan = make_plan(snapshot)
        assert len(plan) >= 8, plan
        estimate = rehearse(cluster_from_snapshot(snapshot), plan, limits, cycle_interval=5.0)
        scale = min(40.0, max(4.0, round(estimate.duration_seconds / TARGET_WALL_SECONDS)))
        predicted = rehearse(
            cluster_from_snapshot(snapshot), plan, limits, cycle_interval=CYCLE_WALL_SECONDS * scale
        )
        assert predicted.finished, predicted.ended_because
        settings = {
            **LIMITS,
            "controller.cycle.interval.seconds": CYCLE_WALL_SECONDS,
            "controller.cycle.min.interval.seconds": 0.05,
            "reassignment.allow.replication.factor.change": True,
        }
        daemon = DaemonProcess(tmp_path / "daemon", sim.bootstrap_servers, settings).start()
        try:
            code, body = daemon.request("POST", "/v1/plans", plan.to_dict())
            assert code == 201, body
            started = float(sim.state()["time"])
            sim.set_time_scale(scale)
            deadline = time.monotonic() + 4 * predicted.duration_seconds / scale + 30
            state = ""
            while time.monotonic() < deadline:
                state = daemon.status(body["plan_id"])["state"]
                if state in ("completed", "failed", "cancelled"):
                    break
                time.sleep(0.05)
            finished = float(sim.state()["time"])
            assert state == "completed", daemon.log_tail()
        finally:
            daemon.stop()
        actual = finished - started
        error = (actual - predicted.duration_seconds) / predicted.duration_seconds
        print(
            f"{case}: {len(plan)} partitions, predicted {predicted.duration_seconds:.1f} s, "
            f"executed {actual:.1f} s at {scale:g}x ({error:+.1%})"
        )
        assert abs(error) <= 0.10, (case, predicted.duration_seconds, actual)
        final = {(p["topic"], p["partition"]): p["replicas"] for p in sim.state()["partitions"]}
        assert all(final[(tp.topic, tp.partition)] == list(t) for tp, t in plan.targets.items())
