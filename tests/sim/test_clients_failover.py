"""Stopping and starting brokers under real clients: closed ports, failover, preferred leader election."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import ElectionType as CkElectionType
from confluent_kafka import KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient

from tests.services.simulator import ControlRequestError, SimProcess

SCENARIO: dict[str, Any] = {
    "brokers": [{"id": 1}, {"id": 2}, {"id": 3}],
    "topics": [
        {
            "name": "ha",
            "partitions": 2,
            "replication_factor": 3,
            "partition_bytes": 10_000,
            "assignment": [[1, 2, 3], [2, 3, 1]],
        }
    ],
}


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    with SimProcess(SCENARIO, tmp_path_factory.mktemp("sim-failover"), time_scale=0) as process:
        yield process


def _refused(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _admin(sim: SimProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": sim.bootstrap_servers, "socket.timeout.ms": 10000})


def test_stopped_broker_refuses_connections_and_clients_use_the_others(sim: SimProcess) -> None:
    ports = sim.broker_ports
    sim.stop_broker(1)
    sim.advance(1)  # the brokers' Metadata trails the controller (docs/simulator.md)
    try:
        assert _refused(ports[1])
        assert not _refused(ports[2])
        admin = _admin(sim)  # keep a reference: a destroyed handle fails its pending futures
        metadata = admin.list_topics(timeout=15)
        assert sorted(metadata.brokers) == [2, 3]
        partition = metadata.topics["ha"].partitions[0]
        assert partition.leader == 2  # first live ISR replica in replica order
        assert sorted(partition.isrs) == [2, 3]
        assert partition.replicas == [1, 2, 3]
        # kafka-python 3.0.12 leaks (unclosed) the socket of a refused bootstrap connection, which surfaces
        # as a ResourceWarning in whichever test collects it: bootstrap it from the live brokers only.
        live = ",".join(f"127.0.0.1:{ports[b]}" for b in (2, 3))
        kp = KafkaAdminClient(bootstrap_servers=live, request_timeout_ms=10000)
        try:
            # kafka-python asks DescribeCluster v2 with include_fenced_brokers: the stopped one is fenced.
            brokers = kp.describe_cluster()["brokers"]
            assert {b["broker_id"]: b["is_fenced"] for b in brokers} == {1: True, 2: False, 3: False}
        finally:
            kp.close()
        # The preferred leader is down: the election cannot move leadership back yet.
        result = admin.elect_leaders(CkElectionType.PREFERRED, [TopicPartition("ha", 0)]).result(timeout=20)
        (error,) = result.values()
        assert isinstance(error, KafkaError)  # per-partition results are KafkaError, not KafkaException
        assert error.code() == KafkaError.PREFERRED_LEADER_NOT_AVAILABLE
    finally:
        sim.start_broker(1)
    assert not _refused(ports[1])  # same port again


def test_preferred_election_after_restart(sim: SimProcess) -> None:
    sim.advance(5)  # the restarted replica catches up and rejoins the ISR
    admin = _admin(sim)
    assert sorted(admin.list_topics(timeout=15).topics["ha"].partitions[0].isrs) == [1, 2, 3]
    # No partitions named: all of them; those whose leader is already preferred are left out of the result.
    result = admin.elect_leaders(CkElectionType.PREFERRED, None).result(timeout=20)
    assert {(tp.topic, tp.partition): error for tp, error in result.items()} == {("ha", 0): None}
    sim.advance(1)  # the brokers' Metadata trails the controller
    assert admin.list_topics(timeout=15).topics["ha"].partitions[0].leader == 1
    again = admin.elect_leaders(CkElectionType.PREFERRED, [TopicPartition("ha", 0)]).result(timeout=20)
    (error,) = again.values()
    assert error is not None and error.code() == KafkaError.ELECTION_NOT_NEEDED


def test_simulator_exits_zero_on_sigterm(sim: SimProcess, tmp_path: Any) -> None:
    with SimProcess(SCENARIO, tmp_path, time_scale=1) as other:
        assert other.proc is not None
    assert other.proc.returncode == 0


def test_control_helpers_produce_and_time(sim: SimProcess) -> None:
    def size(partition: int) -> int:
        entry = next(
            p for p in sim.state()["partitions"] if (p["topic"], p["partition"]) == ("ha", partition)
        )
        return int(entry["size_bytes"])

    before = size(1)
    sim.produce("ha", 1000, partition=1)
    sim.advance(10)
    assert size(1) == before + 10_000
    sim.set_time_scale(50)
    with pytest.raises(ControlRequestError) as info:
        sim.advance(1)  # only while paused
    assert info.value.status == 409
    sim.set_time_scale(0)
    with pytest.raises(ControlRequestError) as info:
        sim.produce("no-such-topic", 1)
    assert (info.value.status, info.value.body["field"], info.value.body["value"]) == (
        404,
        "topic",
        "no-such-topic",
    )
