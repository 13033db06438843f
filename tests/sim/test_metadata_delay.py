"""Brokers' Metadata trails the controller: a partition change shows `metadata_delay` seconds later.

Measured on a real 4.4 KRaft cluster (tests/realkafka/test_fidelity.py): right after
AlterPartitionReassignments answered, a broker's Metadata could still show the old replica list, while
ListPartitionReassignments (the controller) already listed the move.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from reassignd.model import InvalidInputError, TopicPartition
from reassignd.sim import SimCluster, load_scenario
from reassignd.sim.admin import SimClusterAdmin
from reassignd.sim.core import DEFAULT_METADATA_DELAY
from reassignd.sim.protocol import Endpoint
from reassignd.sim.runner import kafka_protocol

MB = 1_000_000


def _cluster(delay: float | None = 0.5, **topic: Any) -> SimCluster:
    scenario: dict[str, Any] = {
        "brokers": [{"id": i} for i in range(1, 5)],
        "topics": [
            {"name": "t", "partition_bytes": 500 * MB, "assignment": [[1, 2]], **topic},  # 4 s to copy
        ],
    }
    if delay is not None:
        scenario["metadata_delay_seconds"] = delay
    return SimCluster.from_scenario(load_scenario(scenario))


def _metadata(sim: SimCluster, broker: int = 2) -> tuple[list[int], list[int], int, int]:
    request = MetadataRequest(version=12, topics=[MetadataRequest.MetadataRequestTopic(name="t")])
    request.with_header(correlation_id=1, client_id="test")
    endpoints = {b: Endpoint(b, "127.0.0.1", 9000 + b) for b in sim.brokers}
    frame = kafka_protocol().handle(bytes(request.encode(header=True)), sim, broker, endpoints)
    ((partition,),) = [
        t.partitions for t in MetadataResponse.decode(frame[4:], version=12, header=True).topics
    ]
    return (
        list(partition.replica_nodes),
        list(partition.isr_nodes),
        partition.leader_id,
        partition.leader_epoch,
    )


def test_metadata_shows_a_change_once_the_delay_has_passed() -> None:
    sim = _cluster()
    sim.alter_partition_reassignment("t", 0, [3, 4])
    assert sim.list_partition_reassignments(None) == [("t", 0, [3, 4, 1, 2], [3, 4], [1, 2])]
    assert _metadata(sim) == ([1, 2], [1, 2], 1, 0), "the controller answered; no broker replayed it yet"
    sim.advance(0.49)
    assert _metadata(sim)[0] == [1, 2]
    sim.advance(0.02)
    assert _metadata(sim) == ([3, 4, 1, 2], [1, 2], 1, 0)


def test_each_change_shows_its_delay_after_it_happened() -> None:
    sim = _cluster()
    sim.alter_partition_reassignment("t", 0, [3, 4])
    sim.advance(0.3)
    sim.alter_partition_reassignment("t", 0, None)  # cancelled: back to [1, 2]
    sim.advance(0.3)
    assert _metadata(sim)[0] == [3, 4, 1, 2], "the first change is 0.6 s old, the cancel 0.3 s"
    sim.advance(0.3)
    assert _metadata(sim)[0] == [1, 2]
    assert not sim._unpublished and not sim._unpublished_order, "replayed changes are forgotten"


def test_a_delay_of_zero_shows_every_change_at_once() -> None:
    sim = _cluster(delay=0.0)
    sim.alter_partition_reassignment("t", 0, [3, 4])
    assert _metadata(sim)[0] == [3, 4, 1, 2]


def test_the_default_delay_is_the_measured_one() -> None:
    assert _cluster(delay=None).metadata_delay == DEFAULT_METADATA_DELAY > 0


@pytest.mark.parametrize("bad", [-1, "0.1", float("inf")])
def test_the_delay_is_checked(bad: Any) -> None:
    with pytest.raises(InvalidInputError, match="metadata_delay_seconds"):
        _cluster(delay=bad)


def test_the_in_process_admin_reads_metadata_as_a_client_does() -> None:
    """A snapshot's replicas come from the brokers' (late) Metadata, except for a move the controller lists,
    whose replica list wins, as KafkaClusterAdmin assembles it (reassignd/cluster/convert.py)."""
    sim = _cluster()
    admin = SimClusterAdmin(sim)
    tp = TopicPartition("t", 0)

    async def state() -> Any:
        return (await admin.snapshot([tp])).partitions[tp]

    sim.alter_partition_reassignment("t", 0, [3, 4])
    moving = asyncio.run(state())
    assert (moving.replicas, moving.adding, moving.removing) == ((3, 4, 1, 2), (3, 4), (1, 2))
    sim.advance(3.9)
    while sim.topics["t"].partitions[0].is_reassigning:  # read right after the move completed
        sim.advance(0.01)
    torn = asyncio.run(state())
    assert torn.replicas == (3, 4, 1, 2) and not torn.adding and not torn.removing, (
        "Metadata not replayed yet"
    )
    sim.advance(0.5)
    done = asyncio.run(state())
    assert (done.replicas, done.isr, done.leader) == ((3, 4), (3, 4), 3)
