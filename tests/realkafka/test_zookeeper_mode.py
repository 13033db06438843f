"""`reassignd run` against a real ZooKeeper-mode cluster (Kafka 3.9: the controller is one of the brokers),
judged from the brokers' side as on KRaft: the drain of test_drain.py, and a cancel inside a step.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from reassignd.localkafka.cluster import KafkaCluster
from reassignd.localkafka.load import RateProducer
from reassignd.localkafka.probe import ClusterProbe, ReassignmentSampler
from tests.realkafka.conftest import stray_replicas, wait_for
from tests.realkafka.test_drain import (
    LIMITS,
    MIN_INSYNC_ERRORS,
    OPERATOR_BROKER,
    OPERATOR_TOPIC_LIST,
    PARTITIONS,
    drain_and_judge,
    drain_plan,
    foreign_throttle_changes,
    loaded_topic,
    plan_targets,
)
from tests.services.daemon import DaemonProcess

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

# The drain's limits with rates low enough that a 5 MiB copy takes seconds: the cancel lands inside a step.
SLOW_LIMITS = {
    **LIMITS,
    "leader.reassignment.throttled.rate": 1_000_000,
    "follower.reassignment.throttled.rate": 1_000_000,
}


def test_drain_in_zookeeper_mode_is_exact_bounded_and_leaves_throttles_as_found(
    zookeeper_kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    assert zookeeper_kafka_cluster.version.startswith("3.9")
    drain_and_judge(zookeeper_kafka_cluster, probe_of(zookeeper_kafka_cluster), tmp_path, "zk-drain-orders")


def test_cancel_inside_a_step_in_zookeeper_mode_ends_each_partition_on_its_pre_plan_list_or_target(
    zookeeper_kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    cluster = zookeeper_kafka_cluster
    probe = probe_of(cluster)
    topic = "zk-cancel-orders"
    assignment = loaded_topic(cluster, probe, topic)
    broker, key, value = OPERATOR_BROKER
    probe.set_broker_config(broker, key, value)
    probe.set_topic_config(topic, *OPERATOR_TOPIC_LIST)
    throttles_before = probe.throttle_configs([topic])
    plan = drain_plan(topic, assignment, broker=4)
    targets = plan_targets(plan)

    daemon = DaemonProcess(tmp_path / "daemon", cluster.bootstrap_servers, SLOW_LIMITS).start()
    try:
        with (
            RateProducer(cluster.bootstrap_servers, topic, range(PARTITIONS), 256 * 1024) as producer,
            ReassignmentSampler(probe) as sampler,
        ):
            plan_id = daemon.submit(plan)
            copying = wait_mid_copy(probe, topic, targets, finished=2, timeout=120)
            code, body = daemon.request("POST", f"/v1/plans/{plan_id}/cancel")
            assert code == 200 and body["state"] in ("cancelling", "cancelled"), body
            status = daemon.wait_for_state(plan_id, {"cancelled", "completed", "failed"}, timeout=180)
            time.sleep(1)  # the producer keeps writing past the end of the cancel
        assert status["state"] == "cancelled", status
        print("outcome", status["progress"]["outcome"], "copying at the cancel", sorted(copying))
    finally:
        daemon.stop()
    assert daemon.log_records("error") == []

    assert probe.reassignments() == {}, "nothing left moving"
    replicas = probe.replicas(topic)
    for partition, target in targets.items():
        assert replicas[partition] in (assignment[partition], target), (partition, replicas[partition])
    for partition in set(assignment) - set(targets):
        assert replicas[partition] == assignment[partition], f"untouched partition {partition}"
    # a step copying at the cancel holds less of its target: it goes back, unless its copy ended before the
    # daemon's cycle saw the cancel (the daemon then logs its step finished before it opens the cancel:
    # under load once, partition 10 of `copying` finished in the second the request took)
    records = daemon.log_records()
    opened = next(i for i, r in enumerate(records) if r["event"].startswith("cancelling:"))
    ended_first = {
        (r["partition"], tuple(r["target"])) for r in records[:opened] if r["event"] == "step finished"
    }
    for partition in copying:
        on_target_first = (f"{topic}-{partition}", tuple(targets[partition])) in ended_first
        expected = targets[partition] if on_target_first else assignment[partition]
        assert replicas[partition] == expected, (partition, replicas[partition], copying, ended_first)
    on_pre_plan = [p for p in targets if replicas[p] == assignment[p]]
    counts = status["progress"]["outcome"]["counts"]
    assert counts["pre_plan"] + counts["unchanged"] == len(on_pre_plan), (counts, on_pre_plan)
    assert counts["target"] == len(targets) - len(on_pre_plan) >= 2, counts
    assert probe.leaders(topic) == {p: r[0] for p, r in replicas.items()}, "leaders on the preferred replica"
    isr = probe.isr(topic)
    assert {p: sorted(r) for p, r in isr.items()} == {p: sorted(r) for p, r in replicas.items()}
    wait_for(lambda: stray_replicas(probe, topic, replicas) == set(), 30, "removed replicas deleted")

    report = producer.report
    assert report.acked_records > 0
    assert not MIN_INSYNC_ERRORS & set(report.errors), report.errors
    assert sampler.samples >= 3 and not sampler.errors, (sampler.samples, sampler.errors)
    assert max(sampler.peak_incoming.values(), default=0) <= 2, sampler.peak_incoming
    assert max(sampler.peak_outgoing.values(), default=0) <= 2, sampler.peak_outgoing
    assert probe.throttle_configs([topic]) == throttles_before


def both_rates(rate: int) -> dict[str, int]:
    return {"leader.reassignment.throttled.rate": rate, "follower.reassignment.throttled.rate": rate}


def wait_mid_copy(
    probe: ClusterProbe, topic: str, targets: dict[int, list[int]], finished: int, timeout: float
) -> set[int]:
    """Until `finished` partitions of `topic` are on their target and another is being copied to, less than
    half-way (its adding replica holds some bytes, fewer than half the leader's: seconds from done at the
    test's rates); the partitions copied to that early."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [p for p, r in probe.replicas(topic).items() if targets.get(p) == r]
        if len(done) < finished:
            time.sleep(0.3)
            continue
        moving = {p: m for (t, p), m in probe.reassignments().items() if t == topic and m.adding}
        if moving:
            sizes = probe.log_dirs({b for m in moving.values() for b in m.replicas})
            leaders = probe.leaders(topic)
            early = set()
            for partition, m in moving.items():
                leader_size = sizes.get((topic, partition, leaders[partition]), (None, 0, False))[1]
                copied = [sizes.get((topic, partition, b), (None, 0, False))[1] for b in m.adding]
                if any(0 < size < leader_size // 2 for size in copied):
                    early.add(partition)
            if early:
                return early
        time.sleep(0.3)
    raise TimeoutError(f"no copy of {topic} seen part-way after {finished} done, in {timeout}s")


def test_rates_changed_live_in_zookeeper_mode_leave_every_throttle_as_found(
    zookeeper_kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    """Each rate change is written to every broker in use and read back a moment later. A ZooKeeper-mode
    broker shows a dynamic config only once its change notification is processed: the first read after
    the write was answered showed the old value 20 times in 20 (measured). Those reads are the daemon's
    own writes under way; the plan must end with every throttle as it found it."""
    cluster = zookeeper_kafka_cluster
    probe = probe_of(cluster)
    topic = "zk-live-rates"
    assignment = loaded_topic(cluster, probe, topic)
    broker, key, value = OPERATOR_BROKER
    probe.set_broker_config(broker, key, value)
    probe.set_topic_config(topic, *OPERATOR_TOPIC_LIST)
    throttles_before = probe.throttle_configs([topic])
    plan = drain_plan(topic, assignment, broker=4)
    settings = {**SLOW_LIMITS, "controller.cycle.min.interval.seconds": 0}
    daemon = DaemonProcess(tmp_path / "daemon", cluster.bootstrap_servers, settings).start()
    try:
        with RateProducer(cluster.bootstrap_servers, topic, range(PARTITIONS), 256 * 1024) as producer:
            plan_id = daemon.submit(plan)
            for n in range(12):  # each change wakes a cycle at once: it reads the brokers right after writing
                time.sleep(0.4)
                code, body = daemon.request("PATCH", "/v1/throttles", both_rates(100_000 + 1000 * n))
                assert code == 200, body
            assert daemon.status(plan_id)["state"] == "running", "the changes came while moves ran"
            code, body = daemon.request("PATCH", "/v1/throttles", both_rates(50_000_000))  # then to the end
            assert code == 200, body
            status = daemon.wait_for_state(plan_id, {"completed", "cancelled", "failed"}, timeout=180)
            assert status["state"] == "completed", status
    finally:
        daemon.stop()
    assert daemon.log_records("error") == []
    assert not MIN_INSYNC_ERRORS & set(producer.report.errors), producer.report.errors
    assert probe.replicas(topic) == {**assignment, **plan_targets(plan)}
    assert probe.throttle_configs([topic]) == throttles_before
    assert foreign_throttle_changes(daemon) == [], "nobody else touched a throttle"
