"""`reassignd run` drains a broker of a real KRaft cluster, judged from the brokers' side.

A producer writes throughout with acks=all; the test itself samples ListPartitionReassignments every second
for the per-broker limits, and reads every throttle config of every broker and topic before and after.
A second daemon on the same cluster (issue 31) refuses to write while the first drains.

The drain is laid out so that each per-broker limit alone bounds it somewhere: four partitions, led by
brokers 2 and 3 (two each), all give broker 1 a replica (only the incoming limit keeps broker 1 at two),
and four partitions led by broker 1 give brokers 2 and 3 two each (only the outgoing limit keeps broker 1
at two). Laid out as three consecutive brokers per partition, every receiver got its replicas from one
leader, so either limit alone kept both counts at two, and breaking one of them went unseen.
"""

from __future__ import annotations

import time
from collections import Counter
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
# The drain's own rates: at 1 MB/s a broker's four 5 MiB copies outlast the quota window's first burst
# (rate x 11 s at once, conftest.py) by seconds, so a limit broken is seen by a sampler that reads once a
# second; at 5 MB/s they ended within the burst
DRAIN_LIMITS = {
    **LIMITS,
    "leader.reassignment.throttled.rate": 1_000_000,
    "follower.reassignment.throttled.rate": 1_000_000,
}
# Partition -> replicas, preferred leader first; each drain target puts the spare where broker 4 was.
DRAIN_ASSIGNMENT = {
    # spare 1, led by 2 and 3: broker 1 would receive four, each leader serve two
    0: [2, 3, 4],
    1: [3, 2, 4],
    2: [2, 4, 3],
    3: [3, 4, 2],
    # led by 1, spares 2 and 3: broker 1 would serve four, each receiver get two
    4: [1, 3, 4],
    5: [1, 2, 4],
    6: [1, 4, 3],
    7: [1, 4, 2],
    # not moving
    8: [1, 2, 3],
    9: [2, 3, 1],
    10: [3, 1, 2],
    11: [2, 1, 3],
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


def unbounded_peaks(
    assignment: dict[int, list[int]], plan: dict[str, Any]
) -> tuple[Counter[int], Counter[int]]:
    """Replicas each broker would receive and serve (as the partition's leader) with every move at once."""
    incoming: Counter[int] = Counter()
    outgoing: Counter[int] = Counter()
    for partition, target in plan_targets(plan).items():
        added = [b for b in target if b not in assignment[partition]]
        incoming.update(added)
        outgoing[assignment[partition][0]] += len(added)
    return incoming, outgoing


def loaded_topic(
    cluster: KafkaCluster, probe: ClusterProbe, topic: str, assignment: dict[int, list[int]] | None = None
) -> dict[int, list[int]]:
    assignment = initial_assignment() if assignment is None else assignment
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
    assignment = loaded_topic(cluster, probe, topic, DRAIN_ASSIGNMENT)
    broker, key, value = OPERATOR_BROKER
    probe.set_broker_config(broker, key, value)
    probe.set_topic_config(topic, *OPERATOR_TOPIC_LIST)
    throttles_before = probe.throttle_configs([topic])
    assert throttles_before == {
        f"broker {broker}: {key}": value,
        f"topic {topic}: {OPERATOR_TOPIC_LIST[0]}": "0:1",
    }

    plan = drain_plan(topic, assignment, broker=4)
    incoming, outgoing = unbounded_peaks(assignment, plan)
    assert incoming[1] == 4 and max(outgoing[2], outgoing[3]) == 2, "only the incoming limit bounds broker 1"
    assert outgoing[1] == 4 and max(incoming[2], incoming[3]) == 2, "only the outgoing limit bounds broker 1"
    daemon = DaemonProcess(tmp_path / "daemon", cluster.bootstrap_servers, DRAIN_LIMITS).start()
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

    print(f"\nsampled peaks: incoming {dict(sampler.peak_incoming)}, outgoing {dict(sampler.peak_outgoing)}")
    assert sampler.samples >= 3 and not sampler.errors, (sampler.samples, sampler.errors)
    assert max(sampler.peak_incoming.values(), default=0) <= 2, sampler.peak_incoming
    assert max(sampler.peak_outgoing.values(), default=0) <= 2, sampler.peak_outgoing
    # each limit held broker 1 at two while it wanted four: the sampler saw the bound itself
    assert sampler.peak_incoming[1] == 2 and sampler.peak_outgoing[1] == 2, sampler

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
