"""Kafka's default replica placement for topics created without an explicit assignment.

Follows the classic rack-aware algorithm of core/src/main/scala/kafka/admin/AdminUtils.scala
(`assignReplicasToBrokers`, `getRackAlternatedBrokerList`, `replicaIndex`); KRaft's StripedReplicaPlacer
(metadata/.../placement/StripedReplicaPlacer.java) pursues the same goals: leaders spread round-robin from
a random start, followers shifted so replicas of consecutive partitions land on different brokers, and no
two replicas in one rack while some rack has none. Randomness comes from a seeded `random.Random`, so a
scenario places the same way every run (Java's Random is not reproduced: ids differ from a real cluster's).
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from reassignd.sim import errors
from reassignd.sim.errors import KafkaError


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def rack_alternated(brokers: Mapping[int, str]) -> list[int]:
    """Brokers ordered rack by rack (racks sorted), one broker of each rack in turn."""
    by_rack: dict[str, list[int]] = {}
    for broker_id in sorted(brokers):
        by_rack.setdefault(brokers[broker_id], []).append(broker_id)
    racks = sorted(by_rack)
    result: list[int] = []
    depth = 0
    while len(result) < len(brokers):
        for rack in racks:
            members = by_rack[rack]
            if depth < len(members):
                result.append(members[depth])
        depth += 1
    return result


def assign_replicas(
    brokers: Mapping[int, str | None],
    partitions: int,
    replication_factor: int,
    rng: random.Random,
    start_partition: int = 0,
) -> list[list[int]]:
    """Replica lists for `partitions` partitions over `brokers` (id -> rack or None)."""
    if partitions <= 0:
        raise KafkaError(errors.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise KafkaError(errors.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise KafkaError(
            errors.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication_factor} time(s): The target replication factor "
            f"of {replication_factor} cannot be reached because only {len(brokers)} broker(s) are "
            "registered.",
        )
    racks = {b: r for b, r in brokers.items() if r}
    rack_aware = len(racks) == len(brokers)
    ordered = rack_alternated(racks) if rack_aware else sorted(brokers)
    n = len(ordered)
    num_racks = len(set(racks.values())) if rack_aware else 0
    start_index = rng.randrange(n)
    shift = rng.randrange(n)
    result: list[list[int]] = []
    for pid in range(start_partition, start_partition + partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start_index) % n
        replicas = [ordered[first]]
        if not rack_aware:
            replicas += [ordered[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)]
            result.append(replicas)
            continue
        used_racks = {racks[ordered[first]]}
        used = {ordered[first]}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                broker = ordered[_replica_index(first, shift * num_racks, k, n)]
                k += 1
                rack = racks[broker]
                if (rack not in used_racks or len(used_racks) == num_racks) and (
                    broker not in used or len(used) == n
                ):
                    replicas.append(broker)
                    used_racks.add(rack)
                    used.add(broker)
                    break
        result.append(replicas)
    return result
