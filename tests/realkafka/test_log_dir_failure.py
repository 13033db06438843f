"""A log dir that fails on a real KRaft broker (the `log_dir_offline` detector's input, issue 29): failed
the way Kafka's own LogDirFailureTest fails one (the dir replaced by a file; the broker's next write into
it, here its high-watermark checkpoint every `replica.high.watermark.checkpoint.interval.ms`, fails), the
broker stays up with its other dir (it is not the metadata log dir), DescribeLogDirs answers the dir
KAFKA_STORAGE_ERROR (56), the replicas in it leave the ISR, and the detector finds the dir and them; and a
daemon in `execute` mode moves those replicas to another broker end to end."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
from reassignd.engine.anomalies import dir_subject
from reassignd.engine.detectors import log_dir_offline
from reassignd.localkafka.cluster import RACKS, KafkaCluster
from reassignd.localkafka.load import fill
from reassignd.model import ClusterSnapshot
from tests.realkafka.conftest import create_topic, wait_for
from tests.realkafka.test_self_healing import healed
from tests.services.daemon import DaemonProcess

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

TOPIC = "failing"
ASSIGNMENT = {p: [1, 2, 3] if p % 2 == 0 else [2, 1, 3] for p in range(6)}
CHECKPOINT_EVERY_500_MS = {"replica.high.watermark.checkpoint.interval.ms": "500"}
HEALING = {
    "leader.reassignment.throttled.rate": 5_000_000,
    "follower.reassignment.throttled.rate": 5_000_000,
    "self.healing.mode": "execute",
    "self.healing.detectors": ["log_dir_offline"],
    "self.healing.log.dir.failure.seconds": 5,
    "self.healing.check.interval.seconds": 2,
    "self.healing.cooldown.seconds": 0,
    "cluster.request.timeout.seconds": 5,
}


def snapshot_of(cluster: KafkaCluster) -> ClusterSnapshot:
    async def read() -> ClusterSnapshot:
        admin = KafkaClusterAdmin(AdminSettings({"bootstrap.servers": cluster.bootstrap_servers}))
        try:
            return await admin.snapshot(with_sizes=True)
        finally:
            await admin.close()

    return asyncio.run(read())


def test_a_failed_log_dir_is_read_as_offline_and_found_by_the_detector(
    fresh_kafka_cluster: Any, probe_of: Any
) -> None:
    cluster: KafkaCluster = fresh_kafka_cluster(brokers=3, broker_properties=CHECKPOINT_EVERY_500_MS)
    probe = probe_of(cluster)
    first, failed = cluster.brokers[1].log_dirs[:2]  # the first is the metadata log dir: never failed here
    in_failed = filled_topic(cluster, probe, failed)
    fail_dir(failed)

    def dir_offline() -> bool:
        return (1, str(failed)) in snapshot_of(cluster).offline_dirs

    wait_for(dir_offline, 60, f"broker 1's {failed} answered KAFKA_STORAGE_ERROR")
    wait_for(lambda: all(1 not in probe.isr(TOPIC)[p] for p in in_failed), 60, "its replicas out of the ISR")
    snapshot = snapshot_of(cluster)
    assert snapshot.brokers[1].online  # its other dir is live: the broker goes on (KIP-858, Kafka >= 3.7)
    assert snapshot.broker_dirs[1] == (str(first),)
    (finding,) = log_dir_offline(snapshot)
    assert (finding.subject, finding.brokers) == (dir_subject(1, str(failed)), (1,))
    assert sorted(p for p in finding.partitions if p.startswith(f"{TOPIC}-")) == sorted(
        f"{TOPIC}-{p}" for p in in_failed
    )
    assert all(probe.leaders(TOPIC)[p] != 1 for p in in_failed)


def filled_topic(cluster: KafkaCluster, probe: Any, failed: Path) -> list[int]:
    """TOPIC made and filled; its partitions whose replica on broker 1 is in `failed`."""
    create_topic(probe, TOPIC, ASSIGNMENT)
    fill(cluster.bootstrap_servers, TOPIC, range(len(ASSIGNMENT)), 64 * 1024)
    in_failed = sorted(
        p
        for (t, p, b), (path, _, future) in probe.log_dirs([1]).items()
        if t == TOPIC and b == 1 and not future and path == str(failed)
    )
    assert in_failed, "no replica of broker 1 in its second dir"
    return in_failed


def fail_dir(path: Path) -> None:
    shutil.rmtree(path)
    path.write_text("not a directory\n")  # LogDirFailureTest.causeLogDirFailure


def test_a_failed_log_dir_s_replicas_are_moved_to_another_broker_by_self_healing(
    fresh_kafka_cluster: Any, probe_of: Any, tmp_path: Path
) -> None:
    cluster: KafkaCluster = fresh_kafka_cluster(brokers=4, broker_properties=CHECKPOINT_EVERY_500_MS)
    probe = probe_of(cluster)
    failed = cluster.brokers[1].log_dirs[1]
    in_failed = filled_topic(cluster, probe, failed)
    throttles_before = probe.throttle_configs([TOPIC])
    daemon = DaemonProcess(tmp_path / "daemon", cluster.bootstrap_servers, HEALING).start()
    try:
        took, fix, errors = healed(daemon, lambda: fail_dir(failed))
    finally:
        daemon.stop()
    print(f"\nbroker 1's {failed.name} failed; its replicas were moved {took:.1f} s later ({fix['name']})")
    assert fix["name"].startswith(
        f"self-healing: re-target {len(in_failed)} partition(s) off broker 1's log dir "
    ), fix
    assert fix["name"].endswith(f"/{failed.parent.name}/{failed.name}"), fix  # the path, not its id slug
    replicas = probe.replicas(TOPIC)
    for p, before in ASSIGNMENT.items():
        if p in in_failed:
            assert 1 not in replicas[p] and len(replicas[p]) == 3, replicas
            assert len({RACKS[b - 1] for b in replicas[p]}) == 3, replicas
        else:
            assert replicas[p] == before, replicas
    wait_for(lambda: all(sorted(probe.isr(TOPIC)[p]) == sorted(replicas[p]) for p in replicas), 30, "in sync")
    assert probe.throttle_configs([TOPIC]) == throttles_before
    assert errors == [], errors
