"""Scenario files: loading, validation with every problem reported, default placement, snapshot round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassignd.model import InvalidInputError, snapshot_to_dict
from reassignd.sim import SimCluster, load_scenario
from reassignd.sim.placement_default import assign_replicas

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name", ["small.json", "multi-dc.json", "medium.json"])
def test_shipped_examples_load_and_run(name: str) -> None:
    scenario = load_scenario(EXAMPLES / name)
    sim = SimCluster.from_scenario(scenario)
    assert sim.brokers and sim.topics
    sim.advance(60)
    for topic in sim.topics.values():
        for p in topic.partitions:
            assert p.isr == [r for r in p.replicas if r in p.isr] or set(p.isr) <= set(p.replicas)
            assert p.leader == p.replicas[0]


def test_multi_dc_example_is_rack_aware_across_dcs() -> None:
    sim = SimCluster.from_scenario(load_scenario(EXAMPLES / "multi-dc.json"))
    racks = {b.id: b.rack for b in sim.brokers.values()}
    assert set(racks.values()) == {"/dc1/rack1", "/dc1/rack2", "/dc2/rack1", "/dc2/rack2"}
    for topic in sim.topics.values():
        for p in topic.partitions:
            used = [racks[r] for r in p.replicas]
            assert len(set(used)) == min(len(used), 4), (topic.name, p.index, used)
    assert sim.brokers[8].network_in == 62_500_000


def test_scenario_from_text_path_and_dict_agree(tmp_path: Path) -> None:
    data = json.loads((EXAMPLES / "small.json").read_text())
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    a = load_scenario(data)
    assert load_scenario(path) == a == load_scenario(str(path)) == load_scenario(json.dumps(data))


def test_bad_scenario_lists_every_problem() -> None:
    bad: dict[str, Any] = {
        "brokers": [{"id": 1}, {"id": 1}, {"id": -2}, {"id": 3, "rack": 5, "network_in_bytes_per_sec": 0}],
        "topics": [
            {"name": "a", "partitions": 0, "replication_factor": 1},
            {"name": "b", "partitions": 2, "replication_factor": 2, "assignment": [[1, 9], [1, 1]]},
            {"name": "c", "partitions": 2, "partition_bytes": [1], "produce_bytes_per_sec": -1},
            {
                "name": "d",
                "partitions": 1,
                "replication_factor": 1,
                "configs": {"nope": "1", "min.insync.replicas": "x"},
            },
            {"partitions": 1},
        ],
        "broker_configs": {"7": {"leader.replication.throttled.rate": "1"}, "1": {"broker.rack": "r"}},
        "cluster_broker_configs": {"follower.replication.throttled.rate": "-5"},
        "surprise": True,
    }
    with pytest.raises(InvalidInputError) as info:
        load_scenario(bad)
    text = str(info.value)
    fields = {(p.where, p.field) for p in info.value.problems}
    assert ("brokers[1]", "id") in fields  # duplicate
    assert ("brokers[2]", "id") in fields
    assert ("brokers[3]", "rack") in fields and ("brokers[3]", "network_in_bytes_per_sec") in fields
    assert ("topics[0] (a)", "partitions") in fields
    assert ("topics[1] (b)", "assignment[0]") in fields and ("topics[1] (b)", "assignment[1]") in fields
    assert ("topics[2] (c)", "partition_bytes") in fields and (
        "topics[2] (c)",
        "produce_bytes_per_sec",
    ) in fields
    assert ("topics[3] (d) configs", "nope") in fields and (
        "topics[3] (d) configs",
        "min.insync.replicas",
    ) in fields
    assert ("topics[4]", "name") in fields
    assert ("broker_configs", "7") in fields and ("broker_configs.1", "broker.rack") in fields
    assert ("cluster_broker_configs", "follower.replication.throttled.rate") in fields
    assert ("scenario", "surprise") in fields
    assert "unknown broker id(s) [9] in [1, 9]" in text
    assert "Invalid value x for configuration min.insync.replicas: Not a number of type INT" in text


@pytest.mark.parametrize(
    ("source", "field"),
    [
        ("{not json", "line 1 column 2"),
        ("[]", "(document)"),
        ({"topics": []}, "brokers"),
    ],
)
def test_unreadable_scenarios(source: Any, field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        load_scenario(source)
    assert any(p.field == field for p in info.value.problems)


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="cannot read"):
        load_scenario(tmp_path / "missing.json")


def test_snapshot_round_trip_keeps_an_ongoing_move() -> None:
    sim = SimCluster.from_scenario(load_scenario(EXAMPLES / "small.json"))
    sim.incremental_alter_configs(4, "", [("follower.replication.throttled.rate", 0, "1000000")], False)
    sim.incremental_alter_configs(2, "orders", [("follower.replication.throttled.replicas", 0, "0:4")], False)
    sim.alter_partition_reassignment("orders", 0, [4, 2, 3])
    sim.advance(30)
    snapshot = sim.to_snapshot()
    moving = snapshot.partitions[
        next(tp for tp in snapshot.partitions if tp.topic == "orders" and tp.partition == 0)
    ]
    assert moving.adding == (4,) and abs(moving.replica_sizes[4] - 30_000_000) <= 1024 * 1024  # fetches
    again = SimCluster.from_scenario(load_scenario(snapshot_to_dict(snapshot)))
    copy = again.topics["orders"].partitions[0]
    assert (copy.replicas, copy.isr, copy.leader, copy.adding, copy.removing) == (
        [4, 2, 3, 1],
        [1, 2, 3],
        1,
        [4],
        [1],
    )
    assert copy.position(4) == moving.replica_sizes[4] and copy.log_end == moving.size_bytes
    assert again.topics["orders"].topic_id == sim.topics["orders"].topic_id
    assert again.cluster_configs == {"follower.replication.throttled.rate": "1000000"}
    again.advance(380)  # 185 MB behind, closing at 1 - 0.5 MB/s
    assert copy.replicas == [4, 2, 3] and sim.to_snapshot().cluster_id == again.cluster_id


def test_snapshot_with_offline_broker_starts_with_it_stopped() -> None:
    sim = SimCluster.from_scenario(load_scenario(EXAMPLES / "small.json"))
    sim.stop_broker(1)
    again = SimCluster.from_scenario(load_scenario(snapshot_to_dict(sim.to_snapshot())))
    assert not again.brokers[1].online
    assert all(1 not in p.isr for p in again.topics["orders"].partitions)
    assert again.controller_id != 1


def test_default_placement_is_deterministic_by_seed() -> None:
    data = {
        "brokers": [{"id": i, "rack": f"r{i % 3}"} for i in range(6)],
        "topics": [{"name": "t", "partitions": 12, "replication_factor": 3}],
    }
    one = SimCluster.from_scenario(load_scenario(data), seed=5)
    two = SimCluster.from_scenario(load_scenario(data), seed=5)
    other = SimCluster.from_scenario(load_scenario(data), seed=6)
    layout = [p.replicas for p in one.topics["t"].partitions]
    assert layout == [p.replicas for p in two.topics["t"].partitions]
    assert one.topics["t"].topic_id == two.topics["t"].topic_id and one.cluster_id == two.cluster_id
    assert layout != [p.replicas for p in other.topics["t"].partitions] or one.cluster_id != other.cluster_id


def test_striped_placement_pattern_with_three_racks_of_three() -> None:
    """StripedReplicaPlacer's own example: replicas stripe over racks A, B, C, one rack further each time."""
    import random

    racks = {b: "ABC"[b // 3] for b in range(9)}
    layout = assign_replicas(racks, 3, 3, random.Random(1))
    rack_orders = ["".join(racks[r] for r in replicas) for replicas in layout]
    first = rack_orders[0]
    assert rack_orders == [first, first[1:] + first[0], first[2:] + first[:2]]
    assert sorted(r for replicas in layout for r in replicas) == list(range(9))


def test_stopped_brokers_are_never_leaders_and_only_followers_when_needed() -> None:
    import random

    layout = assign_replicas({1: None, 2: None, 3: None}, 20, 3, random.Random(4), fenced=frozenset({3}))
    assert all(replicas[0] != 3 and sorted(replicas) == [1, 2, 3] for replicas in layout)
    spare = assign_replicas(
        {1: None, 2: None, 3: None, 4: None}, 20, 2, random.Random(4), fenced=frozenset({4})
    )
    assert all(4 not in replicas for replicas in spare)


@settings(max_examples=100, deadline=None)
@given(
    brokers=st.integers(min_value=1, max_value=12),
    racks=st.integers(min_value=1, max_value=4),
    partitions=st.integers(min_value=1, max_value=40),
    rf=st.integers(min_value=1, max_value=4),
    seed=st.integers(min_value=0, max_value=1000),
    use_racks=st.booleans(),
)
def test_default_placement_properties(  # noqa: PLR0917 - hypothesis passes every drawn value
    brokers: int, racks: int, partitions: int, rf: int, seed: int, use_racks: bool
) -> None:
    import random

    rf = min(rf, brokers)
    layout = {b: (f"r{b % racks}" if use_racks else None) for b in range(brokers)}
    result = assign_replicas(layout, partitions, rf, random.Random(seed))
    assert len(result) == partitions
    for replicas in result:
        assert len(replicas) == rf == len(set(replicas))
        if use_racks:
            distinct = len({layout[r] for r in replicas})
            assert distinct == min(rf, len(set(layout.values())))
    # Striping does not promise every broker a replica: with one rack, consecutive partitions overlap a lot.


def test_topic_ids_use_kafka_text_form_and_accept_uuids() -> None:
    data = json.loads((EXAMPLES / "small.json").read_text())
    data["topics"][0]["topic_id"] = "b0f9a3c2-1f0e-4d7c-9a55-0123456789ab"
    data["topics"][1]["topic_id"] = "AAAAAAAAAAAAAAAAAAAAAQ"
    sim = SimCluster.from_scenario(load_scenario(data))
    assert str(sim.topics["orders"].topic_id) == "b0f9a3c2-1f0e-4d7c-9a55-0123456789ab"
    assert sim.topics["clicks"].topic_id.int == 1
    snapshot = sim.to_snapshot()
    assert snapshot.topics["clicks"].topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert sim.state_dict()["topics"][0] == {
        "name": "clicks",
        "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ",
        "configs": {},
    }
    data["topics"][1]["topic_id"] = "not-an-id"
    with pytest.raises(InvalidInputError, match="not-an-id"):
        load_scenario(data)


def test_snapshot_without_brokers_is_rejected() -> None:
    snapshot = {
        "version": 1,
        "brokers": [],
        "partitions": [{"topic": "t", "partition": 0, "replicas": [1], "isr": [1], "leader": 1}],
    }
    with pytest.raises(InvalidInputError, match="at least one broker"):
        load_scenario(snapshot)
