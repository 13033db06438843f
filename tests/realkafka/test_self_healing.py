"""Self-healing on a real KRaft cluster (issue 29): a broker killed for longer than
`self.healing.broker.failure.seconds` is drained end to end by the fix the daemon plans, rehearses and (in
`execute` mode) queues itself. Its partitions end fully replicated on the other brokers, each still over
three racks, and every throttle config is byte-identical to before."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka import TopicPartition

from reassignd.cluster.group import GroupTransport
from reassignd.localkafka.cluster import RACKS, KafkaCluster
from reassignd.localkafka.load import fill
from tests.realkafka.conftest import create_topic, wait_for
from tests.services.daemon import DaemonProcess

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

TOPIC = "healing"
OFFSETS_TOPIC = "__consumer_offsets"
DEAD = 4
ASSIGNMENT = {0: [1, 2, 4], 1: [2, 3, 4], 2: [3, 4, 1], 3: [4, 1, 2]}
SETTINGS = {
    "leader.reassignment.throttled.rate": 5_000_000,
    "follower.reassignment.throttled.rate": 5_000_000,
    "self.healing.mode": "execute",
    "self.healing.broker.failure.seconds": 10,
    "self.healing.check.interval.seconds": 2,
    "self.healing.cooldown.seconds": 0,
    "cluster.request.timeout.seconds": 5,
}


def rack(broker: int) -> str:
    return RACKS[(broker - 1) % len(RACKS)]


def test_a_broker_killed_for_longer_than_the_timeout_is_drained_by_self_healing(
    fresh_kafka_cluster: Any, probe_of: Any, tmp_path: Path
) -> None:
    # the writer group's coordinator partition must outlive the broker, as on any production cluster
    cluster: KafkaCluster = fresh_kafka_cluster(
        brokers=5, broker_properties={"offsets.topic.replication.factor": "3"}
    )
    probe = probe_of(cluster)
    create_topic(probe, TOPIC, ASSIGNMENT)
    fill(cluster.bootstrap_servers, TOPIC, range(len(ASSIGNMENT)), 4 * 1024 * 1024)
    assert all(len({rack(b) for b in r}) == 3 for r in ASSIGNMENT.values())
    # an operator's own throttles, on a broker and the topic, that the fix must leave as they were
    probe.set_broker_config(2, "follower.replication.throttled.rate", "12345678")
    probe.set_topic_config(TOPIC, "leader.replication.throttled.replicas", "0:1")
    throttles_before = probe.throttle_configs([TOPIC])
    assert throttles_before == {
        "broker 2: follower.replication.throttled.rate": "12345678",
        f"topic {TOPIC}: leader.replication.throttled.replicas": "0:1",
    }, throttles_before
    # the dead broker takes the writer group's coordinator with it: the daemon's writer right lapses
    # until Kafka fences the broker and names another coordinator, and the drain goes on with no error
    coordinate_on(probe, f"reassignd.{cluster.cluster_id}", DEAD)

    daemon = DaemonProcess(tmp_path / "daemon", cluster.bootstrap_servers, SETTINGS).start()
    try:
        wait_for(lambda: holds_the_writer_right(daemon), 30, "the daemon holding the writer right")
        took, fix, errors = healed(daemon, lambda: cluster.kill_broker(DEAD))
        lapsed = writer_lapses(daemon)
    finally:
        daemon.stop()
    print(f"\nbroker {DEAD} killed; its drain completed {took:.1f} s later ({fix['name']})")
    assert lapsed, "the writer group's coordinator was not on the killed broker"
    assert fix["name"] == f"self-healing: drain broker {DEAD}", fix
    replicas = probe.replicas(TOPIC)
    assert all(DEAD not in r and len(r) == 3 for r in replicas.values()), replicas
    assert all(len({rack(b) for b in r}) == 3 for r in replicas.values()), replicas
    wait_for(lambda: full_isr(probe, replicas), 30, "every replica in sync")
    assert probe.throttle_configs([TOPIC]) == throttles_before
    assert errors == [], errors


def coordinate_on(probe: Any, group: str, broker: int) -> None:
    """`broker` made the coordinator of `group`: the leader of its `__consumer_offsets` partition,
    `Utils.abs(groupId.hashCode()) % partitions` (GroupCoordinatorService.partitionFor)."""
    transport = GroupTransport({"bootstrap_servers": probe.bootstrap, "client_id": "test-coordinator"})
    try:
        # the cluster's first FindCoordinator creates the topic
        wait_for(lambda: transport.find_coordinator(group, 10)[0] == 0, 30, "__consumer_offsets")
        offsets = probe.replicas(OFFSETS_TOPIC)
        partition = java_string_hash(group) % len(offsets)
        replicas = [broker, *[b for b in offsets[partition] if b != broker][:2]]
        admin = probe.kafka_python()
        admin.alter_partition_reassignments({TopicPartition(OFFSETS_TOPIC, partition): replicas})
        wait_for(
            lambda: probe.replicas(OFFSETS_TOPIC)[partition] == replicas, 30, "the coordinator's replicas"
        )
        wait_for(lambda: full_isr(probe, {partition: replicas}, OFFSETS_TOPIC), 30, "them in sync")
        admin.elect_leaders(0, {OFFSETS_TOPIC: [partition]}, raise_errors=False)  # preferred
        wait_for(lambda: transport.find_coordinator(group, 10) == (0, broker), 30, f"coordinator {broker}")
    finally:
        transport.close()


def java_string_hash(text: str) -> int:
    """Java's String.hashCode, made non-negative as Kafka's Utils.abs does."""
    units = text.encode("utf-16-be")  # Java hashes a string's UTF-16 code units
    value = 0
    for i in range(0, len(units), 2):
        value = (31 * value + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    signed = value - (1 << 32) if value >= 1 << 31 else value
    return 0 if signed == -(1 << 31) else abs(signed)


def healed(daemon: DaemonProcess, fault: Callable[[], object]) -> tuple[float, dict[str, Any], list[Any]]:
    """`fault` done, then waited for the daemon's one self-healing plan to complete and its anomaly to be
    fixed: the seconds from the fault to the plan's end, the plan, and the daemon's error records."""
    fault()
    faulted = time.monotonic()

    def fix_completed() -> bool:
        code, plans = daemon.request("GET", "/v1/plans")
        assert code == 200, plans
        return any(p["state"] == "completed" for p in plans["plans"])

    wait_for(fix_completed, 240, "the self-healing plan completed")
    took = time.monotonic() - faulted
    _, plans = daemon.request("GET", "/v1/plans")
    (fix,) = plans["plans"]
    wait_for(lambda: anomaly_states(daemon) == ["fixed"], 30, "the anomaly fixed")
    return took, fix, daemon.log_records("error")


def writer_lapses(daemon: DaemonProcess) -> list[str]:
    """The writer group's failed requests once the daemon first held the writer right."""
    events = [r["event"] for r in daemon.log_records()]
    held = events.index("this daemon holds the cluster's writer right")
    return [e for e in events[held:] if e.startswith("writer group")]


def holds_the_writer_right(daemon: DaemonProcess) -> bool:
    code, status = daemon.request("GET", "/v1/status")
    assert code == 200, status
    return bool(status.get("writer", {}).get("self"))


def anomaly_states(daemon: DaemonProcess) -> list[str]:
    code, answer = daemon.request("GET", "/v1/anomalies")
    assert code == 200, answer
    return [a["state"] for a in answer["anomalies"]]


def full_isr(probe: Any, replicas: dict[int, list[int]], topic: str = TOPIC) -> bool:
    isr = probe.isr(topic)
    return all(sorted(isr[p]) == sorted(r) for p, r in replicas.items())
