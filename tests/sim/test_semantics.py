"""Replication and reassignment semantics of the simulated cluster, checked in virtual time."""

from __future__ import annotations

import pytest

from reassignd.sim import SimCluster, load_scenario

MB = 1_000_000


def _cluster(
    *,
    brokers: int = 6,
    size: int = 100 * MB,
    produce: float = 0.0,
    assignment: list[list[int]] | None = None,
    topic_configs: dict[str, str] | None = None,
    cluster_configs: dict[str, str] | None = None,
) -> SimCluster:
    assignment = assignment or [[1, 2, 3]]
    scenario = load_scenario(
        {
            "brokers": [{"id": i} for i in range(1, brokers + 1)],
            "topics": [
                {
                    "name": "t",
                    "partitions": len(assignment),
                    "replication_factor": len(assignment[0]),
                    "partition_bytes": size,
                    "produce_bytes_per_sec": produce,
                    "assignment": assignment,
                    "configs": topic_configs or {},
                }
            ],
            "cluster_broker_configs": cluster_configs or {},
        }
    )
    return SimCluster.from_scenario(scenario)


def _run_until_done(sim: SimCluster, step: float = 0.01, limit: float = 10_000.0) -> float:
    while sim.list_partition_reassignments(None):
        sim.advance(step)
        assert sim.now < limit, "reassignment never finished"
    return sim.now


@pytest.mark.parametrize(
    ("size", "throttle", "produce"),
    [
        (100 * MB, 10 * MB, 0.0),
        (100 * MB, 10 * MB, 2 * MB),
        (50 * MB, 3 * MB, 2.5 * MB),
        (1 * MB, 1 * MB, 0.1),
    ],
)
def test_one_move_finishes_at_size_over_throttle_minus_produce(
    size: int, throttle: float, produce: float
) -> None:
    sim = _cluster(
        size=size,
        produce=produce,
        topic_configs={"follower.replication.throttled.replicas": "*"},
        cluster_configs={"follower.replication.throttled.rate": str(int(throttle))},
    )
    sim.alter_partition_reassignment("t", 0, [4, 2, 3])
    expected = size / (throttle - produce)
    finished = _run_until_done(sim, step=expected / 1000)
    assert finished == pytest.approx(expected, rel=0.02)
    p = sim.topics["t"].partitions[0]
    assert p.replicas == [4, 2, 3]
    assert p.leader == 4  # the old leader 1 left; first of the target in the ISR (PartitionChangeBuilder)
