"""Cluster snapshot JSON: the format the simulator, the planner and `reassignd snapshot` share."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.model import (
    Broker,
    ClusterSnapshot,
    InvalidInputError,
    PartitionState,
    TopicInfo,
    TopicPartition,
    parse_rack_path,
    snapshot_from_dict,
    snapshot_from_json,
    snapshot_to_dict,
    snapshot_to_json,
)

GOOD: dict[str, Any] = {
    "version": 1,
    "cluster_id": "c1",
    "controller_id": 1,
    "brokers": [
        {"id": 1, "rack": "/dc1/rack1", "online": True},
        {"id": 2, "rack": "/dc1/rack2", "online": True},
        {"id": 3, "rack": "/dc2/rack1", "online": False},
    ],
    "topics": [
        {
            "name": "orders",
            "topic_id": "6d1c5a5e-0000-4000-8000-000000000001",
            "configs": {"min.insync.replicas": "2"},
        }
    ],
    "partitions": [
        {
            "topic": "orders",
            "partition": 0,
            "replicas": [1, 2, 3],
            "isr": [1, 2],
            "leader": 1,
            "size_bytes": 1000,
            "replica_sizes": {"1": 1000, "2": 1000, "3": 10},
            "produce_bytes_per_sec": 512.5,
        },
        {
            "topic": "orders",
            "partition": 1,
            "replicas": [2, 3, 1],
            "isr": [2, 3, 1],
            "leader": 2,
            "adding": [2],
            "removing": [1],
            "size_bytes": 0,
        },
    ],
    "broker_configs": {"1": {"leader.replication.throttled.rate": "1000000"}},
    "cluster_configs": {"min.insync.replicas": "1"},
}


def test_parses_and_derives() -> None:
    snap = snapshot_from_dict(GOOD)
    assert snap.brokers[3] == Broker(3, "/dc2/rack1", online=False)
    assert snap.online_broker_ids() == {1, 2}
    p0 = snap.partitions[TopicPartition("orders", 0)]
    assert p0.size_on(3) == 10 and p0.size_on(9) is None
    assert p0.produce_bytes_per_sec == 512.5
    p1 = snap.partitions[TopicPartition("orders", 1)]
    assert p1.is_reassigning
    assert p1.target_replicas == (2, 3)  # the list without the removing replicas
    assert p1.original_replicas == (3, 1)  # the list without the adding replicas
    assert snap.min_insync_replicas("orders") == 2
    assert snap.min_insync_replicas("unknown") == 1
    assert snap.broker_config(1, "leader.replication.throttled.rate") == "1000000"
    assert snap.topics["orders"].topic_id is not None


def test_round_trip_is_exact() -> None:
    snap = snapshot_from_dict(GOOD)
    assert snapshot_from_json(snapshot_to_json(snap)) == snap
    assert snapshot_to_dict(snapshot_from_dict(snapshot_to_dict(snap))) == snapshot_to_dict(snap)


def test_snapshot_is_immutable() -> None:
    snap = snapshot_from_dict(GOOD)
    with pytest.raises(TypeError):
        snap.partitions[TopicPartition("x", 0)] = snap.partitions[TopicPartition("orders", 0)]  # type: ignore[index]
    with pytest.raises(AttributeError):
        snap.cluster_id = "other"  # type: ignore[misc]
    updated = snap.with_brokers([Broker(3, "/dc2/rack1", online=True)])
    assert updated.online_broker_ids() == {1, 2, 3} and snap.online_broker_ids() == {1, 2}


def _mutated(path: list[Any], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(GOOD)
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


BAD = [
    ("isr outside replicas", ["partitions", 0, "isr"], [1, 4], "partitions[0] (orders-0)", "isr"),
    ("leader outside replicas", ["partitions", 0, "leader"], 7, "partitions[0] (orders-0)", "leader"),
    ("unknown broker", ["partitions", 0, "replicas"], [1, 2, 9], "partitions[0] (orders-0)", "replicas"),
    ("duplicate replicas", ["partitions", 0, "replicas"], [1, 1], "partitions[0] (orders-0)", "replicas"),
    ("negative size", ["partitions", 0, "size_bytes"], -1, "partitions[0] (orders-0)", "size_bytes"),
    ("string size", ["partitions", 0, "size_bytes"], "10", "partitions[0] (orders-0)", "size_bytes"),
    (
        "negative produce",
        ["partitions", 0, "produce_bytes_per_sec"],
        -2,
        "partitions[0] (orders-0)",
        "produce_bytes_per_sec",
    ),
    ("removing outside", ["partitions", 1, "removing"], [5], "partitions[1] (orders-1)", "removing"),
    (
        "bad replica size",
        ["partitions", 0, "replica_sizes"],
        {"1": -5},
        "partitions[0] (orders-0)",
        "replica_sizes.1",
    ),
    ("empty replicas", ["partitions", 1, "replicas"], [], "partitions[1] (orders-1)", "replicas"),
    ("missing isr", ["partitions", 0, "isr"], KeyError, "partitions[0] (orders-0)", "isr"),
    ("broker id negative", ["brokers", 0, "id"], -1, "brokers[0]", "id"),
    ("broker online not bool", ["brokers", 1, "online"], "yes", "brokers[1]", "online"),
    ("broker rack not string", ["brokers", 1, "rack"], 5, "brokers[1]", "rack"),
    ("topic configs not strings", ["topics", 0, "configs"], {"a": [1]}, "topics[0] (orders)", "configs.a"),
    ("topic without name", ["topics", 0, "name"], "", "topics[0]", "name"),
    ("version", ["version"], 3, "snapshot", "version"),
    ("brokers missing", ["brokers"], KeyError, "snapshot", "brokers"),
    ("controller not int", ["controller_id"], "1", "snapshot", "controller_id"),
    ("broker config key", ["broker_configs"], {"x": {}}, "broker_configs", "x"),
    ("read_at negative", ["read_at"], -1, "snapshot", "read_at"),
    ("read_at a string", ["read_at"], "yesterday", "snapshot", "read_at"),
    ("read_at a boolean", ["read_at"], True, "snapshot", "read_at"),
]


@pytest.mark.parametrize(("case", "path", "value", "where", "field"), BAD, ids=[c[0] for c in BAD])
def test_bad_snapshot_names_location_and_field(
    case: str, path: list[Any], value: Any, where: str, field: str
) -> None:
    with pytest.raises(InvalidInputError) as info:
        snapshot_from_dict(_mutated(path, value))
    assert any(p.where == where and p.field == field for p in info.value.problems), info.value.problems


def test_duplicates_and_all_problems_at_once() -> None:
    doc = copy.deepcopy(GOOD)
    doc["brokers"].append({"id": 1, "rack": None})
    doc["partitions"].append(dict(doc["partitions"][0]))
    doc["partitions"][1]["isr"] = [9]
    with pytest.raises(InvalidInputError) as info:
        snapshot_from_dict(doc)
    fields = {(p.where, p.field) for p in info.value.problems}
    assert ("brokers[3]", "id") in fields
    assert ("partitions[2] (orders-0)", "partition") in fields
    assert ("partitions[1] (orders-1)", "isr") in fields


@pytest.mark.parametrize(
    ("rack", "levels"),
    [
        ("/dc1/rack2/host3", ("dc1", "rack2", "host3")),
        ("rack-a", ("rack-a",)),
        (None, ()),
        ("", ()),
        ("/dc1//r1/", ("dc1", "r1")),
    ],
)
def test_rack_paths(rack: str | None, levels: tuple[str, ...]) -> None:
    assert parse_rack_path(rack) == levels
    assert Broker(1, rack).rack_levels == levels


@st.composite
def snapshots(draw: st.DrawFn) -> ClusterSnapshot:
    broker_ids = draw(st.lists(st.integers(0, 30), min_size=1, max_size=8, unique=True))
    racks = st.sampled_from([None, "/dc1/r1", "/dc1/r2", "/dc2/r1", "rack-a"])
    brokers = [Broker(b, draw(racks), draw(st.booleans())) for b in broker_ids]
    partitions = []
    for topic in draw(st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3)):
        for index in range(draw(st.integers(1, 4))):
            replicas = tuple(draw(st.permutations(broker_ids))[: draw(st.integers(1, len(broker_ids)))])
            isr = tuple(r for r in replicas if draw(st.booleans()))
            leader = isr[0] if isr else -1
            sizes = {r: draw(st.integers(0, 10**12)) for r in replicas}
            partitions.append(
                PartitionState(
                    TopicPartition(topic, index),
                    replicas,
                    isr,
                    leader,
                    size_bytes=max(sizes.values()),
                    replica_sizes=sizes,
                )
            )
    topics = [TopicInfo(t, None, {"min.insync.replicas": "2"}) for t in {p.tp.topic for p in partitions}]
    return ClusterSnapshot.build(brokers, partitions, topics, cluster_id="x", controller_id=broker_ids[0])


@given(snapshots())
def test_any_valid_snapshot_round_trips(snap: ClusterSnapshot) -> None:
    assert snapshot_from_json(snapshot_to_json(snap)) == snap


def test_when_the_cluster_was_read_round_trips_and_is_optional() -> None:
    """`read_at` (Unix seconds): how old a snapshot's sizes are, for the planner's and the rehearsal's
    figures (issue 27: "each figure says its moment"); a document without it still reads."""
    assert snapshot_from_dict(GOOD).read_at is None and "read_at" not in snapshot_to_dict(
        snapshot_from_dict(GOOD)
    )
    stamped = snapshot_from_dict({**GOOD, "read_at": 1_795_786_000.5})
    assert stamped.read_at == 1_795_786_000.5
    assert snapshot_from_dict(snapshot_to_dict(stamped)) == stamped


def test_replicas_per_broker_counts_each_replica_and_leaves_out_a_broker_holding_none() -> None:
    snapshot = ClusterSnapshot.build(
        brokers=[Broker(1), Broker(2), Broker(3), Broker(4)],
        partitions=[
            PartitionState(TopicPartition("t", 0), replicas=(1, 2), isr=(1, 2), leader=1),
            PartitionState(TopicPartition("t", 1), replicas=(2, 3), isr=(2,), leader=2),
            PartitionState(TopicPartition("u", 0), replicas=(2,), isr=(), leader=-1),
        ],
    )
    assert snapshot.replicas_per_broker() == {1: 1, 2: 3, 3: 1}
