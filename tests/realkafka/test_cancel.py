"""`reassignd cancel` on a real KRaft cluster: with copies in flight and with a partition between two steps,
every partition ends on its pre-plan list (order included) or on its target, nothing is left adding, and
every throttle config is byte-identical to before, judged from the brokers' side.

Kafka's own cancel (KIP-455, a null target) keeps the replicas in their current order without the adding
ones: `[1,2,3]` moving to `[3,4,1]` is `[3,4,1,2]` while it runs and `[3,1,2]` once cancelled, another
preferred leader. The daemon must put the pre-plan order back.

A copy in flight when the cancel comes is reverted, never let finish: a daemon that let each step end on
its target and then moved the partition back ended on the same lists, so the test samples every ISR from
the cancel on and requires that no receiving broker ever joined the ISR.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from reassignd.localkafka.cluster import KafkaCluster
from reassignd.localkafka.load import MIN_INSYNC_ERRORS, RateProducer, fill
from reassignd.localkafka.probe import ClusterProbe, Sampler, ThrottleSampler
from tests.realkafka.conftest import SHORT_QUOTA_WINDOW, create_topic, stray_replicas, wait_for
from tests.services.daemon import DaemonProcess

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

KAFKA_BROKER_PROPERTIES = SHORT_QUOTA_WINDOW  # copies at 1 MB/s stay in flight for seconds (conftest.py)

RATES = {"leader.reassignment.throttled.rate": 1_000_000, "follower.reassignment.throttled.rate": 1_000_000}
OPERATOR_RATE = (4, "follower.replication.throttled.rate", "12345678")
OPERATOR_LIST = ("leader.replication.throttled.replicas", "0:1")


@dataclass
class IsrSampler(Sampler):
    """Every `interval` s, by the test: each broker seen in each partition's ISR (Metadata). A receiving
    broker joins the ISR once its copy has caught up, before Kafka can complete the move; a reverted copy
    never does. (Replica lists against ListPartitionReassignments are no such witness: a broker's Metadata
    shows a move up to 350 ms after the controller, so a reverted receiver looked like a full replica.)"""

    probe: ClusterProbe
    topic: str
    interval: float = 0.25
    in_sync: dict[int, set[int]] = field(default_factory=dict)
    samples: int = 0
    errors: list[str] = field(default_factory=list)
    thread_name = "isr-sampler"

    def sample_once(self) -> None:
        for partition, isr in self.probe.isr(self.topic).items():
            self.in_sync.setdefault(partition, set()).update(isr)
        self.samples += 1


def plan_of(topic: str, targets: dict[int, list[int]]) -> dict[str, Any]:
    return {
        "version": 1,
        "partitions": [{"topic": topic, "partition": p, "replicas": r} for p, r in sorted(targets.items())],
    }


def loaded(
    cluster: KafkaCluster, probe: ClusterProbe, topic: str, assignment: dict[int, list[int]], sizes: list[int]
) -> None:
    create_topic(probe, topic, assignment, {"min.insync.replicas": "2"})
    for partition, size in enumerate(sizes):
        fill(cluster.bootstrap_servers, topic, [partition], size)


def cancel_and_wait(daemon: DaemonProcess, plan_id: str) -> dict[str, Any]:
    out = daemon.cli("cancel", plan_id).stdout
    assert "cancelling" in out or "cancelled" in out, out
    return daemon.wait_for_state(plan_id, {"cancelled", "completed", "failed"}, timeout=90)


def assert_back(
    probe: ClusterProbe,
    topic: str,
    before: dict[int, list[int]],
    targets: dict[int, list[int]],
    throttles_before: dict[str, str],
) -> dict[int, list[int]]:
    """Every partition on its pre-plan list or its target, order included, with its replication factor,
    its preferred leader leading, nothing adding, and every throttle config as before the plan."""
    after = probe.replicas(topic)
    for partition, replicas in after.items():
        assert replicas in (before[partition], targets[partition]), (partition, replicas)
        assert len(replicas) == len(before[partition])
    assert probe.reassignments() == {}, "nothing left adding or removing"
    wait_for(lambda: not stray_replicas(probe, topic, after), 15, f"no log of {topic} left off its replicas")
    wait_for(
        lambda: probe.leaders(topic) == {p: r[0] for p, r in after.items()},
        10,
        f"preferred leaders of {topic}",
    )
    assert probe.throttle_configs([topic]) == throttles_before
    return after


def test_a_cancel_with_copies_in_flight_puts_back_each_pre_plan_list_in_its_order(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    probe = probe_of(kafka_cluster)
    topic = "cancel-in-flight"
    before = {0: [1, 2, 3], 1: [2, 3, 4], 2: [3, 4, 1]}
    targets = {
        0: [3, 4, 1],  # one step: +4 -2; Kafka's own cancel leaves [3,1,2]
        1: [1, 2, 3],  # the new preferred leader first: +1 alone
        2: [3, 4, 2],  # one step: +2 -1
    }
    receivers = {0: 4, 1: 1, 2: 2}
    # 24 MiB at 1 MB/s: 25 s a copy. At 8 MiB the test's own wait for all three copies to show bytes took
    # 8 s on a loaded box, and partition 0's copy ended as the cancel arrived (a fresh-clone run)
    loaded(kafka_cluster, probe, topic, before, [24 * 1024 * 1024] * 3)
    broker, key, value = OPERATOR_RATE
    probe.set_broker_config(broker, key, value)
    probe.set_topic_config(topic, *OPERATOR_LIST)
    throttles_before = probe.throttle_configs([topic])

    daemon = DaemonProcess(tmp_path / "daemon", kafka_cluster.bootstrap_servers, RATES).start()
    try:
        with RateProducer(kafka_cluster.bootstrap_servers, topic, range(3), 128 * 1024) as producer:
            plan_id = daemon.submit(plan_of(topic, targets))

            def copying() -> bool:
                moving = probe.reassignments()
                return all(
                    moving.get((topic, p)) is not None
                    and moving[(topic, p)].adding == (b,)
                    and (probe.replica_size(topic, p, b) or 0) > 0
                    for p, b in receivers.items()
                )

            wait_for(copying, 30, "every copy under way")
            sizes = {p: probe.replica_size(topic, p, b) for p, b in receivers.items()}
            with IsrSampler(probe, topic) as isr:
                status = cancel_and_wait(daemon, plan_id)
                time.sleep(1)  # the producer writes past the end of the cancel
    finally:
        daemon.stop()
    assert status["state"] == "cancelled", status
    assert daemon.log_records("error") == []
    print(f"\ncopied when the cancel was sent: {sizes}; in sync after it: {isr.in_sync}")
    assert isr.samples >= 3 and not isr.errors, (isr.samples, isr.errors)
    completed = {p: b for p, b in receivers.items() if b in isr.in_sync[p]}
    assert completed == {}, f"copies let finish instead of reverted: {completed}, {isr.in_sync}"

    after = assert_back(probe, topic, before, targets, throttles_before)
    assert after == before, "every copy was in flight: every partition back on its pre-plan list"
    assert status["progress"]["outcome"]["counts"]["pre_plan"] == 3, status["progress"]["outcome"]
    assert producer.report.acked_records > 0
    assert not MIN_INSYNC_ERRORS & set(producer.report.errors), producer.report.errors


def test_a_cancel_between_two_steps_takes_the_partition_back_to_its_pre_plan_list(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    """Partition 0 goes [1,2] -> [3,4] two replicas a step: +3 alone (then elected), then -1 -2 +4. Its second
    step waits for broker 4, which partition 1's copy holds (one incoming movement per broker): the cancel
    finds partition 0 between its steps, as [3,1,2] led by 3, nearer its pre-plan list than its target, and
    partition 1 adding 4. (One replica a step would go [3,1,2] -> [3,2] -> [3,4], and [3,2] is as near the
    target as the pre-plan list: it finishes on the target.)"""
    probe = probe_of(kafka_cluster)
    topic = "cancel-between"
    before = {0: [1, 2], 1: [2, 1]}
    targets = {0: [3, 4], 1: [4, 2]}
    loaded(kafka_cluster, probe, topic, before, [1024 * 1024, 12 * 1024 * 1024])
    throttles_before = probe.throttle_configs([topic])

    settings = {
        **RATES,
        "reassignment.parallel.replica.count": 2,
        "reassignment.max.incoming.replica.movements.per.broker": 1,
    }
    daemon = DaemonProcess(tmp_path / "daemon", kafka_cluster.bootstrap_servers, settings).start()
    try:
        with RateProducer(kafka_cluster.bootstrap_servers, topic, range(2), 128 * 1024) as producer:
            plan_id = daemon.submit(plan_of(topic, targets))

            def between_steps() -> bool:
                moving = probe.reassignments()
                return (
                    (topic, 0) not in moving
                    and probe.replicas(topic)[0] == [3, 1, 2]
                    and probe.leaders(topic)[0] == 3
                    and moving.get((topic, 1)) is not None
                    and moving[(topic, 1)].adding == (4,)
                )

            wait_for(between_steps, 40, "partition 0 between its steps while partition 1 copies")
            with IsrSampler(probe, topic) as isr:
                status = cancel_and_wait(daemon, plan_id)
                time.sleep(1)
    finally:
        daemon.stop()
    assert status["state"] == "cancelled", status
    assert daemon.log_records("error") == []
    print(f"\nin sync after the cancel: {isr.in_sync}")
    assert isr.samples >= 3 and not isr.errors, (isr.samples, isr.errors)
    assert 4 not in isr.in_sync[0] | isr.in_sync[1], "a copy to 4 let finish instead of reverted"

    after = assert_back(probe, topic, before, targets, throttles_before)
    assert after == before, "[3,1,2] is nearer [1,2] than [3,4]; partition 1's copy was reverted"
    assert status["progress"]["outcome"]["counts"]["pre_plan"] == 2, status["progress"]["outcome"]
    assert producer.report.acked_records > 0
    assert not MIN_INSYNC_ERRORS & set(producer.report.errors), producer.report.errors


def test_a_cancel_with_every_partition_between_its_steps_puts_each_back_and_restores_throttles_exactly(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    """Three partitions each replace both replicas, one replica a step: +a (and the new replica elected),
    then the rest. Paused while the first steps copy, the plan finishes them and starts nothing, so every
    partition is between its steps, holding its pre-plan replicas and one more; the cancel takes each back
    to its pre-plan list (order included, preferred leader leading), no second-step receiver ever in sync,
    and every throttle config, an operator's rate on a receiving broker and list on the topic included,
    byte-identical to before although the daemon changed them meanwhile."""
    probe = probe_of(kafka_cluster)
    topic = "cancel-every-between"
    before = {0: [1, 2], 1: [2, 3], 2: [3, 4]}
    targets = {0: [3, 4], 1: [4, 1], 2: [1, 2]}
    # 8 MiB at 1 MB/s: seconds of copying, in which the pause lands before any first step ends
    loaded(kafka_cluster, probe, topic, before, [8 * 1024 * 1024] * 3)
    broker, key, value = OPERATOR_RATE
    probe.set_broker_config(broker, key, value)
    probe.set_topic_config(topic, *OPERATOR_LIST)
    throttles_before = probe.throttle_configs([topic])
    brokers = tuple(sorted(kafka_cluster.brokers))

    daemon = DaemonProcess(tmp_path / "daemon", kafka_cluster.bootstrap_servers, RATES).start()
    try:
        with (
            RateProducer(kafka_cluster.bootstrap_servers, topic, range(3), 128 * 1024) as producer,
            ThrottleSampler(probe, (topic,), brokers, interval=0.5) as throttles,
            IsrSampler(probe, topic) as isr,
        ):
            plan_id = daemon.submit(plan_of(topic, targets))
            wait_for(lambda: len(probe.reassignments()) == 3, 30, "every first step under way")
            code, answer = daemon.request("POST", f"/v1/plans/{plan_id}/pause")
            assert code == 200, answer
            first_steps = probe.reassignments()
            assert set(first_steps) == {(topic, p) for p in before}, first_steps

            def between_steps() -> bool:
                if probe.reassignments():
                    return False
                replicas, in_sync = probe.replicas(topic), probe.isr(topic)
                return all(
                    len(replicas[p]) == 3 and set(before[p]) < set(replicas[p]) == set(in_sync[p])
                    for p in before
                )

            wait_for(between_steps, 60, "every partition between its steps, its first step done")
            midway = probe.replicas(topic)
            assert daemon.status(plan_id)["state"] == "paused"
            status = cancel_and_wait(daemon, plan_id)
            # restored by the cancel itself, not by the daemon's stop (a read lags a write by up to ~1 s)
            wait_for(
                lambda: probe.throttle_configs([topic]) == throttles_before,
                10,
                "every throttle config as before, the daemon still running",
            )
            time.sleep(1)  # the producer writes past the end of the cancel
    finally:
        daemon.stop()
    print(f"\nbetween the steps: {midway}; in sync seen: {isr.in_sync}; throttles seen: {throttles.seen}")
    assert status["state"] == "cancelled", status
    assert daemon.log_records("error") == []

    after = assert_back(probe, topic, before, targets, throttles_before)
    assert after == before, "each partition nearer its pre-plan list than its target: back on it"
    assert status["progress"]["outcome"]["counts"]["pre_plan"] == 3, status["progress"]["outcome"]
    second = {p: set(targets[p]) - set(midway[p]) for p in before}
    assert all(not (second[p] & isr.in_sync[p]) for p in before), (second, isr.in_sync)
    assert isr.samples >= 3 and throttles.samples >= 3 and not isr.errors and not throttles.errors
    # the daemon did throttle: the operator's rate on broker 4 had ours added while 4 received a copy
    assert str(int(value) + RATES["follower.reassignment.throttled.rate"]) in throttles.seen.get(
        f"broker {broker}: {key}", []
    ), throttles.seen
    assert producer.report.acked_records > 0
    assert not MIN_INSYNC_ERRORS & set(producer.report.errors), producer.report.errors
