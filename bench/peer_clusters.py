"""The clusters of the peer comparison, how they are loaded into ZooKeeper, and the figures every tool's
plan is measured by (the same code for every tool).

Clusters: three racks (`rack-a`..`rack-c`, as three availability zones), RF 3 with one replica per rack,
topics of a few hundred partitions with lognormal sizes whose scale differs per topic (a few large topics,
many small ones), as production clusters look.

* **fill**: three brokers (one per rack) just added, empty;
* **drain**: a balanced cluster; one broker is to be emptied;
* **rebalance**: replicas and leaders skewed over the brokers (per-broker weights, lognormal).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reassignd.model import Broker, ClusterSnapshot, PartitionState, TopicPartition, snapshot_to_json
from reassignd.placement.balance import Band, balance_quotas, fill_quotas
from reassignd.placement.rules import spread_violations
from reassignd.placement.topology import Topology

RACKS = ("rack-a", "rack-b", "rack-c")
SCENARIOS = ("fill", "drain", "rebalance")


@dataclass(frozen=True)
class Shape:
    partitions: int
    brokers: int
    per_topic: int


SHAPES = {2_000: Shape(2_000, 12, 100), 10_000: Shape(10_000, 30, 250), 50_000: Shape(50_000, 60, 500)}


@dataclass
class Scenario:
    name: str
    partitions: int
    snapshot: ClusterSnapshot
    brokers: tuple[int, ...]  # drained or filled
    threshold: float

    @property
    def key(self) -> str:
        return f"{self.name}-{self.partitions}"


def _rack(broker: int) -> str:
    return RACKS[broker % len(RACKS)]


def build(name: str, partitions: int, seed: int = 7, threshold: float = 0.10) -> Scenario:
    shape = SHAPES.get(partitions) or Shape(partitions, max(6, partitions // 800 // 3 * 3), 100)
    rng = np.random.default_rng(seed + partitions + SCENARIOS.index(name))
    total = shape.brokers
    holders = total - 3 if name == "fill" else total
    weights = np.ones(holders)
    if name == "rebalance":
        weights = rng.lognormal(0.0, 0.45, holders)
    per_rack = [np.arange(r, holders, len(RACKS)) for r in range(len(RACKS))]
    topics = (partitions + shape.per_topic - 1) // shape.per_topic
    scale = rng.lognormal(0.0, 1.2, topics)
    parts = []
    for i in range(partitions):
        topic, number = divmod(i, shape.per_topic)
        replicas = []
        for r in range(len(RACKS)):
            pool = per_rack[(r + i) % len(RACKS)]
            w = weights[pool] / weights[pool].sum()
            replicas.append(int(rng.choice(pool, p=w)))
        size = int(rng.lognormal(20.0, 1.0) * scale[topic])
        parts.append(
            PartitionState(
                TopicPartition(f"topic-{topic:04d}", number),
                tuple(replicas),
                tuple(replicas),
                replicas[0],
                size_bytes=size,
            )
        )
    brokers = [Broker(b, _rack(b)) for b in range(total)]
    snapshot = ClusterSnapshot.build(brokers, parts, cluster_id=f"{name}-{partitions}")
    listed: tuple[int, ...] = ()
    if name == "fill":
        listed = tuple(range(holders, total))
    elif name == "drain":
        listed = (total - 1,)
    return Scenario(name, partitions, snapshot, listed, threshold)


def write_snapshot(scenario: Scenario, directory: Path) -> Path:
    path = directory / f"{scenario.key}.json"
    path.write_text(snapshot_to_json(scenario.snapshot))
    return path


def write_sizes(scenario: Scenario, directory: Path) -> tuple[Path, Path]:
    """Sizes for the peers: (topic, partition, bytes) for kafka-utils' measurer, and per broker host the
    `du -sk` lines kafka-assigner's SSH sizer reads (KiB, one line per replica on the broker)."""
    rows = [(tp.topic, tp.partition, p.size_bytes) for tp, p in scenario.snapshot.partitions.items()]
    sizes = directory / f"{scenario.key}-sizes.json"
    sizes.write_text(json.dumps(rows))
    by_host: dict[str, list[tuple[int, str]]] = {}
    for tp, p in scenario.snapshot.partitions.items():
        for b in p.replicas:
            by_host.setdefault(f"broker-{b}", []).append((p.size_bytes // 1024, f"{tp.topic}-{tp.partition}"))
    hosts = directory / f"{scenario.key}-du.json"
    hosts.write_text(json.dumps(by_host))
    return sizes, hosts


def load_zookeeper(hosts: str, chroot: str, snapshot: ClusterSnapshot) -> None:
    """The classic layout Kafka wrote before KRaft: broker registrations, topic assignments, partition
    states (leader = preferred, ISR = replicas) and topic configs."""
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=30)
    try:
        zk.ensure_path(chroot)
        base = chroot.rstrip("/")
        for path in ("/brokers/ids", "/brokers/topics", "/config/topics", "/admin"):
            zk.ensure_path(base + path)
        pending = []
        for b in snapshot.brokers.values():
            registration = {
                "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
                "endpoints": [f"PLAINTEXT://broker-{b.id}:9092"],
                "rack": b.rack,
                "jmx_port": -1,
                "host": f"broker-{b.id}",
                "timestamp": "1700000000000",
                "port": 9092,
                "version": 4,
            }
            pending.append(zk.create_async(f"{base}/brokers/ids/{b.id}", json.dumps(registration).encode()))
        topics: dict[str, dict[str, list[int]]] = {}
        for tp, p in snapshot.partitions.items():
            topics.setdefault(tp.topic, {})[str(tp.partition)] = list(p.replicas)
        for topic, assignment in sorted(topics.items()):
            doc = {"version": 1, "partitions": assignment}
            zk.create(f"{base}/brokers/topics/{topic}", json.dumps(doc).encode())
            zk.create(f"{base}/config/topics/{topic}", json.dumps({"version": 1, "config": {}}).encode())
            zk.create(f"{base}/brokers/topics/{topic}/partitions")
            for number, replicas in assignment.items():
                state = {
                    "controller_epoch": 1,
                    "leader": replicas[0],
                    "version": 1,
                    "leader_epoch": 0,
                    "isr": replicas,
                }
                pending.append(
                    zk.create_async(
                        f"{base}/brokers/topics/{topic}/partitions/{number}/state",
                        json.dumps(state).encode(),
                        makepath=True,
                    )
                )
                if len(pending) > 2000:
                    for result in pending:
                        result.get(timeout=60)
                    pending.clear()
        for result in pending:
            result.get(timeout=60)
    finally:
        zk.stop()
        zk.close()


def lower_bound(scenario: Scenario) -> int:
    """reassignd's bound on replica moves for the scenario's goal at its threshold (docs/planner.md)."""
    snapshot = scenario.snapshot
    counts = dict.fromkeys(snapshot.brokers, 0)
    for p in snapshot.partitions.values():
        for b in p.replicas:
            counts[b] += 1
    if scenario.name == "drain":
        return sum(counts[b] for b in scenario.brokers)
    # one replica per rack: no replica can leave its rack, so the bound is per rack
    bound = 0
    for rack in RACKS:
        inside = {b: v for b, v in counts.items() if _rack(b) == rack}
        if scenario.name == "fill":
            bound += fill_quotas(inside, set(scenario.brokers) & set(inside), scenario.threshold).lower_bound
        else:
            whole = Band.around(sum(counts.values()), len(counts), scenario.threshold)
            own = Band.around(sum(inside.values()), len(inside), scenario.threshold)
            band = whole if whole.contains(round(own.average)) else own
            bound += balance_quotas(inside, scenario.threshold, band).lower_bound
    return bound


def measure(scenario: Scenario, after: dict[tuple[str, int], list[int]]) -> dict[str, Any]:
    """Moves, bytes moved, balance and rack spread of the assignment a tool proposes."""
    snapshot = scenario.snapshot
    members = [
        b for b in sorted(snapshot.brokers) if not (scenario.name == "drain" and b in scenario.brokers)
    ]
    topology = Topology.from_racks({b: snapshot.brokers[b].rack for b in members})
    replicas = dict.fromkeys(snapshot.brokers, 0)
    leaders = dict.fromkeys(snapshot.brokers, 0)
    size = dict.fromkeys(snapshot.brokers, 0)
    moves = moved_bytes = leader_changes = violations = 0
    changed = 0
    for tp, p in snapshot.partitions.items():
        new = after.get((tp.topic, tp.partition), list(p.replicas))
        if len(new) != len(p.replicas) or len(set(new)) != len(new):
            raise AssertionError(f"{tp}: invalid replica list {new}")
        added = len(set(new) - set(p.replicas))
        moves += added
        moved_bytes += added * p.size_bytes
        leader_changes += new[0] != p.replicas[0]
        changed += list(new) != list(p.replicas)
        for b in new:
            replicas[b] += 1
            size[b] += p.size_bytes
        leaders[new[0]] += 1
        if spread_violations([b for b in new if b in topology], topology):
            violations += 1
    if scenario.name == "drain":
        left = sum(replicas[b] for b in scenario.brokers)
        if left:
            raise AssertionError(f"{left} replicas left on the drained broker(s)")

    def spread(loads: dict[int, int]) -> dict[str, float]:
        values = [loads[b] for b in members]
        avg = sum(values) / len(values)
        return {"min": min(values), "max": max(values), "max_over_avg": round(max(values) / avg, 4)}

    return {
        "replicas_moved": moves,
        "bytes_moved": moved_bytes,
        "partitions_changed": changed,
        "preferred_leader_changes": leader_changes,
        "replicas": spread(replicas),
        "leaders": spread(leaders),
        "bytes": spread(size),
        "rack_violations": violations,
    }
