"""Builds the shipped scenarios in bench/scenarios/*.json, seeded (`python -m bench.scenario_gen`).

Each file holds the cluster (a simulator scenario), the plan, the limits every strategy gets, the
daemon's cycle interval and any broker failures. The files are committed so a run never depends on this
code's random draws; regenerating with the same seeds gives the same files.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from bench.strategies import SCENARIOS

MB = 1_000_000
GB = 1_000 * MB
RATE = 20 * MB
LIMITS: dict[str, Any] = {
    "reassignment.parallel.replica.count": 1,
    "reassignment.max.incoming.replica.movements.per.broker": 5,
    "reassignment.max.outgoing.replica.movements.per.broker": 5,
    "leader.reassignment.throttled.rate": RATE,
    "follower.reassignment.throttled.rate": RATE,
}
RACKS = ("/dc1/a", "/dc1/b", "/dc2/c")


def _brokers(ids: range, racks: tuple[str, ...] = RACKS) -> list[dict[str, Any]]:
    return [{"id": b, "rack": racks[(b - ids.start) % len(racks)]} for b in ids]


def _rack_of(brokers: list[dict[str, Any]]) -> dict[int, str]:
    return {b["id"]: b["rack"] for b in brokers}


def _striped(
    rng: random.Random, ids: list[int], rack: dict[int, str], count: int, rf: int
) -> list[list[int]]:
    """Rack-aware round robin: replica k of partition p on a different rack, leaders spread."""
    by_rack: dict[str, list[int]] = {}
    for b in ids:
        by_rack.setdefault(rack[b], []).append(b)
    racks = sorted(by_rack)
    offset = rng.randrange(len(ids))
    out = []
    for p in range(count):
        replicas: list[int] = []
        for k in range(rf):
            members = by_rack[racks[(p + k) % len(racks)]]
            replicas.append(members[(p // len(racks) + offset + k) % len(members)])
        out.append(replicas)
    return out


def _topic(
    name: str, assignment: list[list[int]], sizes: list[int], produce: list[float] | float
) -> dict[str, Any]:
    return {
        "name": name,
        "partitions": len(assignment),
        "replication_factor": len(assignment[0]),
        "partition_bytes": sizes,
        "produce_bytes_per_sec": produce,
        "configs": {"min.insync.replicas": "2"},
        "assignment": assignment,
    }


def _plan(targets: dict[tuple[str, int], list[int]]) -> dict[str, Any]:
    return {
        "version": 1,
        "partitions": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(targets.items())],
    }


def _least_loaded(load: dict[int, float], candidates: list[int]) -> int:
    return min(candidates, key=lambda b: (load[b], b))


def _replace(
    topics: list[dict[str, Any]],
    rack: dict[int, str],
    *,
    leaving: set[int],
    receivers: list[int],
    share: float,
    rng: random.Random,
) -> dict[tuple[str, int], list[int]]:
    """Move replicas off `leaving` (all) and a `share` of the others onto `receivers`, rack for rack."""
    load = dict.fromkeys(receivers, 0.0)
    targets: dict[tuple[str, int], list[int]] = {}
    for topic in topics:
        for index, replicas in enumerate(topic["assignment"]):
            size = topic["partition_bytes"][index]
            new = list(replicas)
            for k, b in enumerate(replicas):
                if b not in leaving and rng.random() >= share:
                    continue
                same_rack = [r for r in receivers if rack[r] == rack[b] and r not in new]
                if not same_rack:
                    continue
                chosen = _least_loaded(load, same_rack)
                load[chosen] += size
                new[k] = chosen
            if new != replicas:
                targets[(topic["name"], index)] = new
    return targets


def _sizes(rng: random.Random, count: int, low: int, high: int) -> list[int]:
    return [rng.randrange(low, high) for _ in range(count)]


def drain_broker(seed: int = 11) -> dict[str, Any]:
    rng = random.Random(seed)
    brokers = _brokers(range(1, 13))
    rack = _rack_of(brokers)
    ids = sorted(rack)
    topics = [
        _topic(f"events-{t}", _striped(rng, ids, rack, 40, 3), _sizes(rng, 40, GB // 5, 2 * GB), 50_000.0)
        for t in range(4)
    ]
    targets = _replace(topics, rack, leaving={12}, receivers=[b for b in ids if b != 12], share=0.0, rng=rng)
    return _case(
        "drain-broker",
        "Drain broker 12 (every replica moves to its rack's other brokers).",
        seed=seed,
        brokers=brokers,
        topics=topics,
        targets=targets,
    )


def add_brokers(seed: int = 12) -> dict[str, Any]:
    rng = random.Random(seed)
    brokers = _brokers(range(1, 13))
    rack = _rack_of(brokers)
    old = [b for b in sorted(rack) if b <= 9]
    topics = [
        _topic(f"logs-{t}", _striped(rng, old, rack, 48, 3), _sizes(rng, 48, GB // 5, 2 * GB), 50_000.0)
        for t in range(3)
    ]
    targets = _replace(topics, rack, leaving=set(), receivers=[10, 11, 12], share=0.25, rng=rng)
    return _case(
        "add-three-brokers",
        "Add brokers 10-12 (one per rack) and move a quarter of the replicas onto them.",
        seed=seed,
        brokers=brokers,
        topics=topics,
        targets=targets,
    )


def move_topic_racks(seed: int = 13) -> dict[str, Any]:
    rng = random.Random(seed)
    brokers = _brokers(range(1, 10)) + _brokers(range(10, 16), ("/dc3/d", "/dc3/e", "/dc3/f"))
    rack = _rack_of(brokers)
    old = list(range(1, 10))
    new = list(range(10, 16))
    moving = _topic(
        "payments", _striped(rng, old, rack, 30, 3), _sizes(rng, 30, GB // 2, 3 * GB // 2), 100_000.0
    )
    staying = _topic("audit", _striped(rng, old, rack, 30, 3), _sizes(rng, 30, GB // 5, GB), 20_000.0)
    fresh = _striped(rng, new, rack, 30, 3)
    targets = {("payments", i): fresh[i] for i in range(30)}
    return _case(
        "move-topic-to-new-racks",
        "Move topic payments (RF 3) from racks a-c to the new racks d-f: "
        "every replica moves, three steps per partition at R = 1.",
        seed=seed,
        brokers=brokers,
        topics=[moving, staying],
        targets=targets,
    )


def increase_rf(seed: int = 14) -> dict[str, Any]:
    rng = random.Random(seed)
    brokers = _brokers(range(1, 10))
    rack = _rack_of(brokers)
    ids = sorted(rack)
    assignment = _striped(rng, ids, rack, 60, 2)
    topic = _topic("clicks", assignment, _sizes(rng, 60, GB // 5, 2 * GB), 50_000.0)
    topic["configs"] = {"min.insync.replicas": "1"}
    load = dict.fromkeys(ids, 0.0)
    targets = {}
    for index, replicas in enumerate(assignment):
        used = {rack[b] for b in replicas}
        candidates = [b for b in ids if rack[b] not in used]
        chosen = _least_loaded(load, candidates)
        load[chosen] += topic["partition_bytes"][index]
        targets[("clicks", index)] = [*replicas, chosen]
    return _case(
        "replication-factor-2-to-3",
        "Raise topic clicks from RF 2 to RF 3 (third replica on the third rack).",
        seed=seed,
        brokers=brokers,
        topics=[topic],
        targets=targets,
    )


def skewed(seed: int = 15) -> dict[str, Any]:
    rng = random.Random(seed)
    brokers = _brokers(range(1, 13))
    rack = _rack_of(brokers)
    ids = sorted(rack)
    count = 120
    sizes = sorted((int(min(20 * GB, 20 * MB * rng.paretovariate(1.1))) for _ in range(count)), reverse=True)
    rng.shuffle(sizes)
    produce = [2 * MB if s > 2 * GB else 10_000.0 for s in sizes]
    topic = _topic("metrics", _striped(rng, ids, rack, count, 3), sizes, produce)
    targets = _replace([topic], rack, leaving=set(), receivers=ids, share=0.2, rng=rng)
    return _case(
        "skewed-sizes",
        "Rebalance 20% of replicas of a topic whose few largest partitions hold most "
        "bytes (Pareto sizes, 2 MB/s produce on the large ones).",
        seed=seed,
        brokers=brokers,
        topics=[topic],
        targets=targets,
    )


def broker_failure(seed: int = 16) -> dict[str, Any]:
    case = drain_broker(seed)
    case["name"] = "broker-failure"
    case["description"] = (
        "Drain broker 12 while broker 5 fails at t = 300 s and returns at t = 900 s "
        "(moves to or from it stall; leaders fail over)."
    )
    case["events"] = [{"at": 300, "action": "stop", "broker": 5}, {"at": 900, "action": "start", "broker": 5}]
    return case


def receiver_failure(seed: int = 16) -> dict[str, Any]:
    case = drain_broker(seed)
    case["name"] = "receiver-failure"
    case["description"] = (
        "Drain broker 12 while broker 3, which receives a third of the replicas, fails at t = 300 s and "
        "returns at t = 900 s (its copies stop and restart from its log end)."
    )
    case["events"] = [{"at": 300, "action": "stop", "broker": 3}, {"at": 900, "action": "start", "broker": 3}]
    return case


def broker_lost(seed: int = 16) -> dict[str, Any]:
    case = drain_broker(seed)
    case["name"] = "broker-lost"
    case["description"] = (
        "Drain broker 12 while broker 5 fails at t = 300 s for good: the partitions whose targets keep it "
        "cannot finish until the operator re-targets them; every other partition must."
    )
    case["events"] = [{"at": 300, "action": "stop", "broker": 5}]
    return case


def _case(
    name: str,
    description: str,
    *,
    seed: int,
    brokers: list[dict[str, Any]],
    topics: list[dict[str, Any]],
    targets: dict[tuple[str, int], list[int]],
) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "seed": seed,
        "cycle_interval": 5.0,
        "limits": LIMITS,
        "events": [],
        "cluster": {"seed": seed, "brokers": brokers, "topics": topics},
        "plan": _plan(targets),
    }


BUILDERS = (
    drain_broker,
    add_brokers,
    move_topic_racks,
    increase_rf,
    skewed,
    broker_failure,
    receiver_failure,
    broker_lost,
)


def write_all(directory: Path = SCENARIOS) -> list[Path]:
    directory.mkdir(exist_ok=True)
    paths = []
    for build in BUILDERS:
        case = build()
        path = directory / f"{case['name']}.json"
        path.write_text(json.dumps(case, indent=1) + "\n")
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in write_all():
        print(written)
