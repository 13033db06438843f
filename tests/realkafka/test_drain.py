"""`reassignd run` drains a broker of a real KRaft cluster, judged from the brokers' side.

A producer writes throughout with acks=all; the test itself samples ListPartitionReassignments every second
for the per-broker limits, and reads every throttle config of every broker and topic before and after.
A second daemon on the same cluster (issue 31) refuses to write while the first drains.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from reassignd.localkafka.cluster import KafkaCluster
from reassignd.localkafka.load import MIN_INSYNC_ERRORS, RateProducer, fill
from reassignd.localkafka.probe import ClusterProbe, ReassignmentSampler
from tests.realkafka.conftest import create_topic
from tests.services.daemon import DaemonProcess

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PARTITIONS = 12
PARTITION_BYTES = 5 * 1024 * 1024  # 60 MiB in all, each partition on three brokers
LIMITS = {
    "reassignment.max.incoming.replica.movements.per.broker": 2,
    "reassignment.max.outgoing.replica.movements.per.broker": 2,
    "leader.reassignment.throttled.rate": 5_000_000,
    "follower.reassignment.throttled.rate": 5_000_000,
}
# An operator's own throttles, which must come through the plan byte-identical.
OPERATOR_BROKER = (2, "follower.replication.throttled.rate", "12345678")
OPERATOR_TOPIC_LIST = ("leader.replication.throttled.replicas", "0:1")


def initial_assignment(brokers: int = 4) -> dict[int, list[int]]:
    """Partition p on three consecutive brokers starting at p: every broker leads three partitions."""
    return {p: [(p + i) % brokers + 1 for i in range(3)] for p in range(PARTITIONS)}


def drain_plan(topic: str, assignment: dict[int, list[int]], broker: int, brokers: int = 4) -> dict[str, Any]:
    """Each replica on `broker` goes to the one broker the partition is not on, in the same position."""
    entries = []
    for partition, replicas in assignment.items():
        if broker not in replicas:
            continue
        spare = next(b for b in range(1, brokers + 1) if b not in replicas)
        target = [spare if b == broker else b for b in replicas]
        entries.append({"topic": topic, "partition": partition, "replicas": target})
    return {"version": 1, "partitions": entries}


def plan_targets(plan: dict[str, Any]) -> dict[int, list[int]]:
    return {e["partition"]: e["replicas"] for e in plan["partitions"]}


def loaded_topic(cluster: KafkaCluster, probe: ClusterProbe, topic: str) -> dict[int, list[int]]:
    assignment = initial_assignment()
    create_topic(probe, topic, assignment, {"min.insync.replicas": "2"})
    fill(cluster.bootstrap_servers, topic, range(PARTITIONS), PARTITION_BYTES)
    return assignment


def test_drain_one_broker_under_load_is_exact_bounded_and_leaves_throttles_as_found(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    drain_and_judge(kafka_cluster, probe_of(kafka_cluster), tmp_path, "drain-orders")


def foreign_throttle_changes(daemon: DaemonProcess) -> list[dict[str, Any]]:
    """The daemon's "throttle changed by someone else" warnings. In a run where nobody else writes a
    throttle, each is a read of the daemon's own write taken for an operator's change."""
    return [r for r in daemon.log_records("warning") if r.get("event") == "throttle changed by someone else"]


def drain_and_judge(cluster: KafkaCluster, probe: ClusterProbe, tmp_path: Path, topic: str) -> None:
    """Drains broker 4 of `cluster` through `reassignd run` under acks=all load and judges it from the
    brokers' side; shared with the ZooKeeper-mode run (test_zookeeper_mode.py)."""
    assignment = loaded_topic(cluster, probe, topic)
    broker, key, value = OPERATOR_BROKER
    probe.set_broker_config(broker, key, value)
    probe.set_topic_config(topic, *OPERATOR_TOPIC_LIST)
    throttles_before = probe.throttle_configs([topic])
    assert throttles_before == {
        f"broker {broker}: {key}": value,
        f"topic {topic}: {OPERATOR_TOPIC_LIST[0]}": "0:1",
    }

    plan = drain_plan(topic, assignment, broker=4)
    daemon = DaemonProcess(tmp_path / "daemon", cluster.bootstrap_servers, LIMITS).start()
    try:
        with (
            RateProducer(cluster.bootstrap_servers, topic, range(PARTITIONS), 256 * 1024) as producer,
            ReassignmentSampler(probe) as sampler,
        ):
            plan_id = daemon.submit(plan)
            status = daemon.wait_for_state(plan_id, {"completed", "cancelled", "failed"}, timeout=180)
            time.sleep(1)  # the producer keeps writing past the end of the plan
        assert status["state"] == "completed", status
    finally:
        daemon.stop()
    assert daemon.log_records("error") == []
    assert foreign_throttle_changes(daemon) == [], "nobody else touched a throttle"

    replicas = probe.replicas(topic)
    for partition, target in plan_targets(plan).items():
        assert replicas[partition] == target, f"partition {partition}"
    assert all(4 not in r for r in replicas.values()), replicas
    assert probe.leaders(topic) == {p: r[0] for p, r in replicas.items()}, "leaders on the preferred replica"

    report = producer.report
    assert report.acked_records > 0
    assert not MIN_INSYNC_ERRORS & set(report.errors), report.errors

    assert sampler.samples >= 3 and not sampler.errors, (sampler.samples, sampler.errors)
    assert max(sampler.peak_incoming.values(), default=0) <= 2, sampler.peak_incoming
    assert max(sampler.peak_outgoing.values(), default=0) <= 2, sampler.peak_outgoing
    assert sampler.peak_replicas >= 2, "the sampler saw the drain in flight"

    assert probe.throttle_configs([topic]) == throttles_before


def wait_for_writer(daemon: DaemonProcess, url: str, timeout: float = 30.0) -> dict[str, Any]:
    """The daemon's status once its `writer` names `url` (the writer group has formed)."""
    deadline = time.monotonic() + timeout
    writer: dict[str, Any] = {}
    while time.monotonic() < deadline:
        writer = daemon.status().get("writer") or {}
        if writer.get("url") == url:
            return writer
        time.sleep(0.2)
    raise AssertionError(f"{daemon.url} never named {url} the writer: {writer}")


def test_a_second_daemon_on_the_cluster_refuses_to_write_and_the_first_plan_ends_exact(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    """Issue 31 on real brokers: two daemons (no HA, separate stores) on one cluster. The first holds the
    writer right through the Kafka group `reassignd.<cluster id>` (docs/ha.md); the second names it as the
    writer, answers its plan with 421, and writes nothing: the first's drain ends exact and every
    throttle config, the operator's included, is byte-identical to before."""
    probe = probe_of(kafka_cluster)
    topic = "two-daemons"
    assignment = {p: [(p + i) % 4 + 1 for i in range(3)] for p in range(4)}
    create_topic(probe, topic, assignment)
    fill(kafka_cluster.bootstrap_servers, topic, range(4), 256 * 1024)
    broker, key, value = OPERATOR_BROKER
    probe.set_broker_config(broker, key, value)
    probe.set_topic_config(topic, *OPERATOR_TOPIC_LIST)
    before = probe.throttle_configs([topic])
    plan = drain_plan(topic, assignment, broker=4)

    def settings(name: str) -> dict[str, Any]:
        return {**LIMITS, "cluster.client.client.id": name, "cluster.writer.session.timeout.seconds": 6}

    first = DaemonProcess(tmp_path / "first", kafka_cluster.bootstrap_servers, settings("first"))
    second = DaemonProcess(tmp_path / "second", kafka_cluster.bootstrap_servers, settings("second"))
    try:
        first.start()
        assert wait_for_writer(first, first.url)["self"] is True
        second.start()
        writer = wait_for_writer(second, first.url)
        assert writer["self"] is False, writer
        code, body = second.request("POST", "/v1/plans", plan)
        assert code == 421 and body["error"]["details"]["leader"] == first.url, (code, body)
        plan_id = first.submit(plan)
        status = first.wait_for_state(plan_id, {"completed", "cancelled", "failed"}, timeout=60)
        assert status["state"] == "completed", status
        assert second.status()["writer"]["url"] == first.url, "the first kept the right throughout"
        assert first.terminate() == 0 and second.terminate() == 0
    finally:
        first.stop()
        second.stop()
    replicas = probe.replicas(topic)
    assert {p: replicas[p] for p in plan_targets(plan)} == plan_targets(plan), "the first plan ends exact"
    assert probe.throttle_configs([topic]) == before, "every throttle config byte-identical to before"
    assert foreign_throttle_changes(first) == [] and foreign_throttle_changes(second) == []
    refusals = [r for r in second.log_records("warning") if "another reassignd" in r["event"]]
    assert len(refusals) == 1 and first.url in str(refusals[0]), refusals
    assert second.log_records("error") == [] and first.log_records("error") == []
