"""What bounds each catching-up replica's fetch (`SimCluster.fetch_limits`): the resource the max-min fair
allocation saturates for it, so that diagnostics name the real bottleneck."""

from __future__ import annotations

from typing import Any

import pytest

from reassignd.sim import SimCluster, load_scenario

MB = 1_000_000


def cluster(topics: list[dict[str, Any]], **broker: Any) -> SimCluster:
    brokers = [{"id": b, "rack": f"/dc1/rack{b}", **broker} for b in (1, 2, 3, 4)]
    return SimCluster.from_scenario(load_scenario({"seed": 1, "brokers": brokers, "topics": topics}))


def topic(name: str, partitions: int, produce: float, assignment: list[list[int]]) -> dict[str, Any]:
    return {
        "name": name,
        "partitions": partitions,
        "replication_factor": len(assignment[0]),
        "partition_bytes": 10**9,
        "produce_bytes_per_sec": produce,
        "assignment": assignment,
    }


def test_another_topics_producers_fill_the_receivers_network() -> None:
    """Three partitions of `busy` (40 MB/s each) replicate into broker 3: of its 125 MB/s link, 5 MB/s is
    left for the three copies of `t`. The throttles (none here) are not what holds them back."""
    sim = cluster(
        [
            topic("busy", 3, 40 * MB, [[1, 2, 3], [2, 4, 3], [4, 1, 3]]),
            topic("t", 3, 2 * MB, [[1, 2]] * 3),
        ]
    )
    for p in range(3):
        sim.alter_partition_reassignment("t", p, [1, 3])
    limits = sim.fetch_limits()
    assert [(r["topic"], r["partition"], r["follower"]) for r in limits] == [("t", p, 3) for p in range(3)]
    for row in limits:
        assert row["resource"] == "network_in" and row["broker"] == 3
        assert row["capacity"] == pytest.approx(125 * MB) and row["reserved"] == pytest.approx(120 * MB)
        assert row["shared_by"] == 3 and row["rate"] == pytest.approx(5 * MB / 3)
    assert [r[4] for r in sim.fetch_rates()] == [r["rate"] for r in limits], "the same allocation"


def test_a_follower_throttle_shared_by_two_copies() -> None:
    sim = cluster([topic("t", 2, 1 * MB, [[1, 2]] * 2)])
    sim.incremental_alter_configs(4, "3", [("follower.replication.throttled.rate", 0, str(3 * MB))], False)
    sim.incremental_alter_configs(2, "t", [("follower.replication.throttled.replicas", 0, "0:3,1:3")], False)
    for p in range(2):
        sim.alter_partition_reassignment("t", p, [1, 3])
    for row in sim.fetch_limits():
        assert (row["resource"], row["broker"], row["shared_by"]) == ("follower_throttle", 3, 2)
        assert row["capacity"] == 3 * MB and row["rate"] == pytest.approx(1.5 * MB)


def test_the_leaders_outgoing_link_when_it_serves_many_copies() -> None:
    sim = cluster([topic("t", 4, 0.0, [[1, 2]] * 4)], network_out_bytes_per_sec=8 * MB)
    for p in range(4):
        sim.alter_partition_reassignment("t", p, [1, 3] if p % 2 else [1, 4])
    for row in sim.fetch_limits():
        assert (row["resource"], row["broker"], row["shared_by"]) == ("network_out", 1, 4)
        assert row["rate"] == pytest.approx(2 * MB)
