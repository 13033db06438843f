"""Kafka's own assignment: AdminUtils.assignReplicasToBrokers, rack-unaware and rack-aware (KIP-36).

Followed line by line from apache/kafka server-common/src/main/java/org/apache/kafka/admin/AdminUtils.java
(assignReplicasToBrokersRackUnaware, assignReplicasToBrokersRackAware, getRackAlternatedBrokerList,
replicaIndex). Kafka draws the start index and the replica shift from java.util.Random; here they come
from a seeded random.Random so the result is reproducible. `kafka_generate` is what
`kafka-reassign-partitions.sh --generate` computes: every topic reassigned from scratch over the broker
list, which is why it moves nearly every replica.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from reassignd.model import Broker, ClusterSnapshot, InvalidInputError, Problem, TopicPartition
from reassignd.placement.base import Assignment, ClusterView, PlacementSpec


def _replica_index(first_replica_index: int, second_replica_shift: int, replica_index: int, n: int) -> int:
    shift = 1 + (second_replica_shift + replica_index) % (n - 1) if n > 1 else 0
    return (first_replica_index + shift) % n


def _start(rng: random.Random, n: int, fixed_start_index: int) -> tuple[int, int]:
    if fixed_start_index >= 0:
        return fixed_start_index, fixed_start_index
    return rng.randrange(n), rng.randrange(n)


def assign_rack_unaware(
    num_partitions: int,
    replication_factor: int,
    broker_ids: Sequence[int],
    rng: random.Random,
    *,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
) -> Assignment:
    brokers = list(broker_ids)
    n = len(brokers)
    start_index, next_replica_shift = _start(rng, n, fixed_start_index)
    current = max(0, start_partition_id)
    out: Assignment = []
    for _ in range(num_partitions):
        if current > 0 and current % n == 0:
            next_replica_shift += 1
        first = (current + start_index) % n
        replicas = [brokers[first]]
        replicas.extend(
            brokers[_replica_index(first, next_replica_shift, j, n)] for j in range(replication_factor - 1)
        )
        out.append(replicas)
        current += 1
    return out


def rack_alternated_brokers(racks: Mapping[int, str]) -> list[int]:
    """0->r1, 1->r3, 2->r3, 3->r2, 4->r2, 5->r1 gives 0, 3, 1, 5, 4, 2 (AdminUtils' javadoc example)."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in racks.items():
        by_rack.setdefault(rack, []).append(broker)
    iterators = {rack: iter(sorted(ids)) for rack, ids in by_rack.items()}
    order = sorted(iterators)
    result: list[int] = []
    rack_index = 0
    while len(result) < len(racks):
        nxt = next(iterators[order[rack_index]], None)
        if nxt is not None:
            result.append(nxt)
        rack_index = (rack_index + 1) % len(order)
    return result


def assign_rack_aware(
    num_partitions: int,
    replication_factor: int,
    racks: Mapping[int, str],
    rng: random.Random,
    *,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
) -> Assignment:
    num_racks = len(set(racks.values()))
    arranged = rack_alternated_brokers(racks)
    n = len(arranged)
    start_index, next_replica_shift = _start(rng, n, fixed_start_index)
    current = max(0, start_partition_id)
    out: Assignment = []
    for _ in range(num_partitions):
        if current > 0 and current % n == 0:
            next_replica_shift += 1
        first = (current + start_index) % n
        leader = arranged[first]
        replicas = [leader]
        racks_with, brokers_with = {racks[leader]}, {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first, next_replica_shift * num_racks, k, n)]
                rack = racks[broker]
                k += 1
                if (rack not in racks_with or len(racks_with) == num_racks) and (
                    broker not in brokers_with or len(brokers_with) == n
                ):
                    replicas.append(broker)
                    racks_with.add(rack)
                    brokers_with.add(broker)
                    break
        out.append(replicas)
        current += 1
    return out


def assign_replicas_to_brokers(
    brokers: Sequence[Broker],
    num_partitions: int,
    replication_factor: int,
    rng: random.Random,
    *,
    fixed_start_index: int = -1,
) -> Assignment:
    """AdminUtils.assignReplicasToBrokers: rack-aware when every broker has a rack, an error when some do."""
    PlacementSpec(num_partitions, replication_factor).check(len(brokers))
    with_rack = [b for b in brokers if b.rack]
    if not with_rack:
        return assign_rack_unaware(
            num_partitions,
            replication_factor,
            [b.id for b in brokers],
            rng,
            fixed_start_index=fixed_start_index,
        )
    if len(with_rack) != len(brokers):
        missing = sorted(b.id for b in brokers if not b.rack)
        raise InvalidInputError(
            "replica placement",
            [Problem("brokers", "rack", f"not all brokers have rack information: {missing} have none")],
        )
    racks = {b.id: b.rack for b in brokers if b.rack}
    return assign_rack_aware(
        num_partitions, replication_factor, racks, rng, fixed_start_index=fixed_start_index
    )


class KafkaDefaultPlacer:
    """Kafka's rack-unaware assignment (what forceSimplePlacement / --disable-rack-awareness select)."""

    name = "kafka-default"

    def __init__(self, *, seed: int | None = None) -> None:
        self.seed = seed

    def place(
        self, spec: PlacementSpec, view: ClusterView, broker_ids: Sequence[int] | None = None
    ) -> Assignment | None:
        brokers = view.usable(broker_ids)
        spec.check(len(brokers))
        rng = random.Random(self.seed)
        return assign_rack_unaware(spec.num_partitions, spec.replication_factor, [b.id for b in brokers], rng)


class KafkaRackAwarePlacer:
    """Kafka's KIP-36 rack-aware assignment: each full rack string is one flat rack."""

    name = "kafka-rack-aware"

    def __init__(self, *, seed: int | None = None) -> None:
        self.seed = seed

    def place(
        self, spec: PlacementSpec, view: ClusterView, broker_ids: Sequence[int] | None = None
    ) -> Assignment | None:
        brokers = view.usable(broker_ids)
        return assign_replicas_to_brokers(
            brokers, spec.num_partitions, spec.replication_factor, random.Random(self.seed)
        )


def kafka_generate(
    snapshot: ClusterSnapshot,
    broker_ids: Sequence[int] | None = None,
    *,
    seed: int | None = 0,
    rack_aware: bool = True,
) -> dict[TopicPartition, tuple[int, ...]]:
    """`kafka-reassign-partitions.sh --generate`: each topic assigned afresh over the broker list.

    As ReassignPartitionsCommand.calculateAssignment: one assignReplicasToBrokers call per topic with that
    topic's partition count and the replication factor of its partition 0, a fresh random start each time.
    """
    ids = sorted(snapshot.brokers) if broker_ids is None else list(broker_ids)
    brokers = [
        snapshot.brokers[b] if rack_aware else Broker(b, None, snapshot.brokers[b].online) for b in ids
    ]
    rng = random.Random(seed)
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in snapshot.partitions:
        by_topic.setdefault(tp.topic, []).append(tp)
    out: dict[TopicPartition, tuple[int, ...]] = {}
    for topic in sorted(by_topic):
        tps = sorted(by_topic[topic])
        first = snapshot.partitions.get(TopicPartition(topic, 0)) or snapshot.partitions[tps[0]]
        assignment = assign_replicas_to_brokers(brokers, len(tps), len(first.replicas), rng)
        for index, tp in enumerate(tps):
            out[tp] = tuple(assignment[index])
    return out
