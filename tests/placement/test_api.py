"""CreateReplicaPlacement as the CLI and the HTTP API call it; placers loaded by entry-point name."""

from __future__ import annotations

import pytest

from reassignd.model import Broker, ClusterSnapshot, InvalidInputError
from reassignd.placement.api import create_replica_placement, load_placer, placer_names
from reassignd.placement.multilevel import MultiLevelRackAwarePlacer

SNAPSHOT = ClusterSnapshot.build(
    [Broker(i, f"/dc{i % 3}/r{i // 3}") for i in range(9)] + [Broker(9, "/dc0/r9", online=False)], []
)


def test_entry_points_resolve() -> None:
    assert {"kafka-default", "kafka-rack-aware", "multi-level"} <= set(placer_names())
    assert isinstance(load_placer("multi-level", seed=1), MultiLevelRackAwarePlacer)


def test_default_is_multi_level_and_skips_offline_brokers() -> None:
    out = create_replica_placement(SNAPSHOT, {"num_partitions": 6, "replication_factor": 3, "seed": 4})
    assert out["placer"] == "multi-level" and out["deferred"] is False
    assert [e["partition_id"] for e in out["replica_placement"]] == list(range(6))
    for entry in out["replica_placement"]:
        assert sorted(b % 3 for b in entry["replicas"]) == [0, 1, 2]
        assert 9 not in entry["replicas"]


def test_cluster_config_chooses_the_placer() -> None:
    snap = ClusterSnapshot.build(
        SNAPSHOT.brokers.values(), [], cluster_configs={"broker.replica.placer": "kafka-rack-aware"}
    )
    assert create_replica_placement(snap, {"num_partitions": 1, "replication_factor": 2})["placer"] == (
        "kafka-rack-aware"
    )


def test_force_simple_placement_uses_kafka_default() -> None:
    out = create_replica_placement(
        SNAPSHOT,
        {
            "num_partitions": 2,
            "replication_factor": 2,
            "force_simple_placement": True,
            "broker_ids": [0, 1, 2],
        },
    )
    assert out["placer"] == "kafka-default"
    assert {b for e in out["replica_placement"] for b in e["replicas"]} <= {0, 1, 2}


@pytest.mark.parametrize(
    ("request_body", "field"),
    [
        ({"replication_factor": 1}, "num_partitions"),
        ({"num_partitions": "3", "replication_factor": 1}, "num_partitions"),
        ({"num_partitions": 1, "replication_factor": 1, "broker_ids": [0, 77]}, "broker_ids"),
        ({"num_partitions": 1, "replication_factor": 1, "placer": "nope"}, "placer"),
        ({"num_partitions": 1, "replication_factor": 1, "force_simple_placement": "yes"}, "force_simple"),
        ({"num_partitions": 1, "replication_factor": 20}, "replication_factor"),
        ({"num_partitions": 1, "replication_factor": 1, "colour": 1}, "colour"),
    ],
)
def test_bad_requests_name_the_field(request_body: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInputError, match=field):
        create_replica_placement(SNAPSHOT, request_body)
