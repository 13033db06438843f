"""Kafka's AdminUtils assignment, checked against the examples in its own javadoc."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from reassignd.model import Broker, ClusterSnapshot, InvalidInputError, PartitionState, TopicPartition
from reassignd.placement.base import ClusterView, PlacementSpec
from reassignd.placement.kafka import (
    KafkaDefaultPlacer,
    KafkaRackAwarePlacer,
    assign_rack_aware,
    assign_rack_unaware,
    assign_replicas_to_brokers,
    kafka_generate,
    rack_alternated_brokers,
)

JAVADOC_RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_rack_unaware_matches_the_javadoc_table() -> None:
    got = assign_rack_unaware(10, 3, [0, 1, 2, 3, 4], random.Random(), fixed_start_index=0)
    assert got[0] == [0, 1, 2]
    assert got[4] == [4, 0, 1]
    assert got[5] == [0, 2, 3]  # second round: followers shifted by one more
    assert got[9] == [4, 1, 2]


def test_rack_alternated_list_matches_the_javadoc() -> None:
    assert rack_alternated_brokers(JAVADOC_RACKS) == [0, 3, 1, 5, 4, 2]


def test_rack_aware_matches_the_javadoc() -> None:
    got = assign_rack_aware(7, 3, JAVADOC_RACKS, random.Random(), fixed_start_index=0)
    assert got == [[0, 3, 1], [3, 1, 5], [1, 5, 4], [5, 4, 2], [4, 2, 0], [2, 0, 3], [0, 4, 2]]


def test_rack_aware_puts_each_replica_in_a_different_rack() -> None:
    brokers = [Broker(i, f"r{i % 4}") for i in range(12)]
    for replicas in assign_replicas_to_brokers(brokers, 50, 3, random.Random(7)):
        assert len({i % 4 for i in replicas}) == 3


def test_partial_rack_information_is_an_error_like_kafka() -> None:
    with pytest.raises(InvalidInputError, match=r"not all brokers have rack information: \[1\]"):
        assign_replicas_to_brokers([Broker(0, "r0"), Broker(1, None)], 2, 2, random.Random())


@pytest.mark.parametrize(
    ("partitions", "rf", "field"), [(0, 1, "num_partitions"), (3, 4, "replication_factor")]
)
def test_bad_specs_name_the_field(partitions: int, rf: int, field: str) -> None:
    view = ClusterView(tuple(Broker(i) for i in range(3)))
    with pytest.raises(InvalidInputError, match=field):
        KafkaDefaultPlacer(seed=1).place(PlacementSpec(partitions, rf), view)


def test_placers_spread_evenly_and_are_seeded() -> None:
    view = ClusterView(tuple(Broker(i, f"r{i % 3}") for i in range(9)))
    for placer in (KafkaDefaultPlacer(seed=3), KafkaRackAwarePlacer(seed=3)):
        first = placer.place(PlacementSpec(90, 3), view)
        assert first == placer.place(PlacementSpec(90, 3), view)
        assert first is not None
        counts = Counter(b for replicas in first for b in replicas)
        assert set(counts.values()) == {30}


def test_generate_reassigns_nearly_everything() -> None:
    brokers = [Broker(i, f"r{i % 3}") for i in range(6)]
    parts = [
        PartitionState(TopicPartition("t", p), (p % 6, (p + 1) % 6), (p % 6, (p + 1) % 6), p % 6)
        for p in range(60)
    ]
    snapshot = ClusterSnapshot.build([*brokers, Broker(6, "r0"), Broker(7, "r1")], parts)
    target = kafka_generate(snapshot, seed=1)
    assert set(target) == set(snapshot.partitions)
    moved = sum(len(set(target[tp]) - set(p.replicas)) for tp, p in snapshot.partitions.items())
    assert moved > 60  # the two new brokers would need only 30 replicas; --generate moves far more
    assert all(len(r) == 2 for r in target.values())
