"""Small deterministic clusters for the pipeline's golden and property tests."""

from __future__ import annotations

import random

from reassignd.model import Broker, ClusterSnapshot, PartitionState, TopicPartition
from reassignd.placement.base import ClusterView, PlacementSpec
from reassignd.placement.multilevel import MultiLevelRackAwarePlacer


def _partition(topic: str, number: int, replicas: list[int], size: int) -> PartitionState:
    return PartitionState(
        TopicPartition(topic, number), tuple(replicas), tuple(replicas), replicas[0], size_bytes=size
    )


def expansion(name: str = "expansion") -> ClusterSnapshot:
    """9 brokers over 3 DCs x 2 racks hold 60 partitions RF 3; 3 new brokers (one per DC) are empty."""
    old = [Broker(i, f"/dc{i % 3}/r{(i // 3) % 2}") for i in range(9)]
    new = [Broker(i, f"/dc{i % 3}/r{(i // 3) % 2}") for i in range(9, 12)]
    placed = MultiLevelRackAwarePlacer(seed=1).place(PlacementSpec(60, 3), ClusterView(tuple(old)))
    assert placed is not None
    parts = [_partition(f"t{p % 3}", p // 3, r, 100 * (p % 7 + 1)) for p, r in enumerate(placed)]
    return ClusterSnapshot.build(old + new, parts, cluster_id=name)


def rackless(name: str = "rackless") -> ClusterSnapshot:
    """5 brokers without racks; broker 0 leads and holds every partition."""
    parts = [_partition("orders", p, [0, p % 4 + 1], 1000) for p in range(20)]
    return ClusterSnapshot.build([Broker(i) for i in range(5)], parts, cluster_id=name)


def random_cluster(seed: int) -> ClusterSnapshot:
    """A random rack tree; old brokers hold a multi-level placement, some new brokers are empty."""
    rng = random.Random(seed)
    dcs = rng.randint(1, 4)
    racks = rng.randint(1, 3)
    per_rack = rng.randint(1, 3)
    brokers = []
    for d in range(dcs):
        for r in range(racks):
            for _ in range(per_rack):
                brokers.append(Broker(len(brokers), f"/dc{d}/r{r}" if dcs > 1 or racks > 1 else None))
    extra = rng.randint(1, max(1, len(brokers) // 3))
    new = [Broker(len(brokers) + i, brokers[rng.randrange(len(brokers))].rack) for i in range(extra)]
    rf = rng.randint(1, min(3, len(brokers)))
    count = rng.randint(20, 120)
    placed = MultiLevelRackAwarePlacer(seed=seed).place(PlacementSpec(count, rf), ClusterView(tuple(brokers)))
    assert placed is not None
    parts = [_partition(f"t{p % 4}", p // 4, r, rng.randint(1, 10_000)) for p, r in enumerate(placed)]
    return ClusterSnapshot.build(brokers + new, parts, cluster_id=f"random-{seed}")
