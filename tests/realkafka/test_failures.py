"""A plan through failures on a real KRaft cluster of its own: the receiving broker killed (-9) mid-plan and
started again 30 s later, and the daemon killed (-9) mid-plan and started again on the same state dir. Each
plan ends exactly (replica lists in order, preferred leaders leading) and every throttle config of every
broker and topic is byte-identical to before it, an operator's own rate on the broker that died included,
while a producer writes with acks=all.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from reassignd.localkafka.cluster import KafkaCluster
from reassignd.localkafka.load import MIN_INSYNC_ERRORS, RateProducer, fill
from reassignd.localkafka.probe import ClusterProbe
from tests.realkafka.conftest import SHORT_QUOTA_WINDOW, create_topic, wait_for
from tests.services.daemon import DaemonProcess

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PARTITIONS = 4
PARTITION_BYTES = 4 * 1024 * 1024
RECEIVER = 4
SETTINGS = {
    "leader.reassignment.throttled.rate": 2_000_000,  # shared by the two copies broker 4 takes at once
    "follower.reassignment.throttled.rate": 2_000_000,
    "reassignment.max.incoming.replica.movements.per.broker": 2,
    "cluster.request.timeout.seconds": 5,
}
OPERATOR_LIST = ("leader.replication.throttled.replicas", "1:2")


def spread_to_the_receiver(topic: str) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Partitions on brokers 1-3; each gives one replica to broker 4: the last one (a
    follower) for even partitions, the first one for odd ones (4 becomes their preferred leader)."""
    before = {p: [(p + i) % 3 + 1 for i in range(3)] for p in range(PARTITIONS)}
    targets = {p: [*r[:2], RECEIVER] if p % 2 == 0 else [RECEIVER, *r[1:]] for p, r in before.items()}
    return before, targets


def plan_of(topic: str, targets: dict[int, list[int]]) -> dict[str, Any]:
    return {
        "version": 1,
        "partitions": [{"topic": topic, "partition": p, "replicas": r} for p, r in sorted(targets.items())],
    }


def prepared(cluster: KafkaCluster, probe: ClusterProbe, topic: str) -> dict[int, list[int]]:
    before, _ = spread_to_the_receiver(topic)
    create_topic(probe, topic, before, {"min.insync.replicas": "2"})
    fill(cluster.bootstrap_servers, topic, range(PARTITIONS), PARTITION_BYTES)
    probe.set_topic_config(topic, *OPERATOR_LIST)
    return before


def copying_to(probe: ClusterProbe, topic: str, broker: int) -> bool:
    """Two copies to `broker` under way (bytes arrived), with our follower rate on it."""
    moving = [p for (t, p), m in probe.reassignments().items() if t == topic and broker in m.adding]
    copied = [p for p in moving if (probe.replica_size(topic, p, broker) or 0) > 0]
    return len(copied) >= 2


def assert_exact(probe: ClusterProbe, topic: str, targets: dict[int, list[int]]) -> None:
    assert probe.replicas(topic) == targets
    assert probe.reassignments() == {}
    wait_for(lambda: probe.leaders(topic) == {p: r[0] for p, r in targets.items()}, 15, "preferred leaders")


def test_a_receiving_broker_killed_mid_plan_and_back_30_s_later_leaves_the_plan_exact_and_no_throttle(
    fresh_kafka_cluster: Any, probe_of: Any, tmp_path: Path
) -> None:
    cluster: KafkaCluster = fresh_kafka_cluster(broker_properties=SHORT_QUOTA_WINDOW)
    probe = probe_of(cluster)
    topic = "fail-receiver"
    prepared(cluster, probe, topic)
    _, targets = spread_to_the_receiver(topic)
    # An operator's own rate on the broker that will die: it must come back as it was, ours gone.
    probe.set_broker_config(RECEIVER, "follower.replication.throttled.rate", "12345678")
    throttles_before = probe.throttle_configs([topic])

    daemon = DaemonProcess(tmp_path / "daemon", cluster.bootstrap_servers, SETTINGS).start()
    try:
        with RateProducer(cluster.bootstrap_servers, topic, range(PARTITIONS), 128 * 1024) as producer:
            plan_id = daemon.submit(plan_of(topic, targets))
            wait_for(lambda: copying_to(probe, topic, RECEIVER), 60, f"copies to broker {RECEIVER}")
            in_force = probe.throttle_configs([topic])
            cluster.kill_broker(RECEIVER)
            killed_at = time.monotonic()
            time.sleep(30)
            assert daemon.status(plan_id)["state"] == "running"
            cluster.start_broker(RECEIVER)
            back_after = time.monotonic() - killed_at
            status = daemon.wait_for_state(plan_id, {"completed", "cancelled", "failed"}, timeout=180)
            time.sleep(1)
    finally:
        daemon.stop()
    assert status["state"] == "completed", status
    print(
        f"\ncluster started in {cluster.start_seconds:.1f} s; broker {RECEIVER} back {back_after:.1f} s later"
    )

    # Ours was added to the operator's rate while we used the broker (throttle.operator.rate.policy add).
    assert in_force[f"broker {RECEIVER}: follower.replication.throttled.rate"] == str(12345678 + 2_000_000)
    assert_exact(probe, topic, targets)
    assert probe.throttle_configs([topic]) == throttles_before
    assert producer.report.acked_records > 0
    assert not MIN_INSYNC_ERRORS & set(producer.report.errors), producer.report.errors
    assert daemon.log_records("error") == []


def test_the_daemon_killed_mid_plan_and_started_again_ends_the_plan_exactly_with_throttles_as_before(
    fresh_kafka_cluster: Any, probe_of: Any, tmp_path: Path
) -> None:
    cluster: KafkaCluster = fresh_kafka_cluster(broker_properties=SHORT_QUOTA_WINDOW)
    probe = probe_of(cluster)
    topic = "fail-daemon"
    prepared(cluster, probe, topic)
    _, targets = spread_to_the_receiver(topic)
    probe.set_broker_config(2, "leader.replication.throttled.rate", "7654321")
    throttles_before = probe.throttle_configs([topic])

    daemon = DaemonProcess(tmp_path / "daemon", cluster.bootstrap_servers, SETTINGS).start()
    try:
        with RateProducer(cluster.bootstrap_servers, topic, range(PARTITIONS), 128 * 1024) as producer:
            plan_id = daemon.submit(plan_of(topic, targets))
            wait_for(lambda: copying_to(probe, topic, RECEIVER), 60, f"copies to broker {RECEIVER}")
            daemon.kill9()
            in_force = probe.throttle_configs([topic])
            time.sleep(3)  # the copies go on without it
            daemon.start()
            status = daemon.wait_for_state(plan_id, {"completed", "cancelled", "failed"}, timeout=180)
            time.sleep(1)
    finally:
        daemon.stop()
    assert status["state"] == "completed", status
    assert in_force != throttles_before, "the daemon died with its throttles in force"
    assert_exact(probe, topic, targets)
    assert probe.throttle_configs([topic]) == throttles_before
    assert producer.report.acked_records > 0
    assert not MIN_INSYNC_ERRORS & set(producer.report.errors), producer.report.errors
    assert daemon.log_records("error") == []
