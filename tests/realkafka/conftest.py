"""Real Apache Kafka for the tests in this folder (docs/real-kafka.md).

`kafka_cluster` is one 4-broker KRaft cluster shared by a module's tests (each test its own topics);
`zookeeper_kafka_cluster` is the same in ZooKeeper mode (Kafka 3.9);
`fresh_kafka_cluster` is a private one for a test that kills, stops or reconfigures brokers. A cluster whose
tests failed leaves its brokers' logs under build/kafka-logs/ (the path is printed); otherwise its data goes.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from reassignd.localkafka.cluster import REPO, KafkaCluster
from reassignd.localkafka.probe import ClusterProbe
from tests.services.zookeeper import ZooKeeperServer

LOGS = REPO / "build" / "kafka-logs"
FAILED = pytest.StashKey[bool]()
_failed_modules: set[str] = set()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed:
        item.stash[FAILED] = True
        _failed_modules.add(item.nodeid.split("::")[0])
    return report


def _finish(cluster: KafkaCluster, failed: bool, name: str) -> None:
    cluster.close()
    if failed:
        destination = cluster.keep_logs(LOGS / f"{time.strftime('%Y%m%d-%H%M%S')}-{_safe(name)}")
        print(f"\nKafka logs of the failed test kept in {destination}", file=sys.stderr)
    cluster.remove_data()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[-120:]


@pytest.fixture(scope="module")
def kafka_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaCluster]:
    """The module's cluster; a module's own `KAFKA_BROKER_PROPERTIES` (a dict) are added to every broker's."""
    properties = getattr(request.module, "KAFKA_BROKER_PROPERTIES", None)
    cluster = KafkaCluster(tmp_path_factory.mktemp("kafka"), broker_properties=properties)
    with cluster:
        try:
            yield cluster
        finally:
            _finish(cluster, request.node.nodeid in _failed_modules, request.node.nodeid)


@pytest.fixture(scope="module")
def zookeeper_kafka_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[KafkaCluster]:
    """A module's 4-broker ZooKeeper-mode cluster (Kafka 3.9) under a chroot of its own on the session's
    ZooKeeper server; the controller is one of the brokers."""
    cluster = KafkaCluster(
        tmp_path_factory.mktemp("kafka-zk"), mode="zookeeper", zookeeper_hosts=zookeeper.hosts
    )
    with cluster:
        try:
            yield cluster
        finally:
            _finish(cluster, request.node.nodeid in _failed_modules, request.node.nodeid)


@pytest.fixture
def fresh_kafka_cluster(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., KafkaCluster]]:
    """A factory: `fresh_kafka_cluster(brokers=4, **KafkaCluster options)` starts a private cluster, stopped
    (and its logs kept on failure) when the test ends."""
    started: list[KafkaCluster] = []

    def start(**options: Any) -> KafkaCluster:
        cluster = KafkaCluster(tmp_path / f"kafka-{len(started)}", **options)
        started.append(cluster)
        return cluster.start()

    try:
        yield start
    finally:
        for cluster in started:
            _finish(cluster, request.node.stash.get(FAILED, False), request.node.nodeid)


@pytest.fixture
def probe_of() -> Iterator[Callable[[KafkaCluster], ClusterProbe]]:
    probes: list[ClusterProbe] = []

    def make(cluster: KafkaCluster) -> ClusterProbe:
        probes.append(ClusterProbe(cluster.bootstrap_servers))
        return probes[-1]

    try:
        yield make
    finally:
        for probe in probes:
            probe.close()


def create_topic(
    probe: ClusterProbe,
    name: str,
    assignment: Mapping[int, list[int]],
    configs: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> None:
    """A topic with an explicit replica assignment; returns once every partition has its leader and a full
    ISR, so a test starts from a settled cluster."""
    probe.create_topic(name, assignment, configs or {})
    wait_for(lambda: _settled(probe, name, assignment), timeout, f"topic {name} settled")


def _settled(probe: ClusterProbe, name: str, assignment: Mapping[int, list[int]]) -> bool:
    try:
        isr = probe.isr(name)
        leaders = probe.leaders(name)
    except Exception:
        return False
    return all(
        sorted(isr.get(p, [])) == sorted(replicas) and leaders.get(p, -1) == replicas[0]
        for p, replicas in assignment.items()
    )


def stray_replicas(
    probe: ClusterProbe, topic: str, replicas: Mapping[int, list[int]]
) -> set[tuple[int, int]]:
    """(partition, broker) of every log of `topic` a broker holds outside the partition's replica list: what a
    finished or cancelled move must not leave behind (DescribeLogDirs of every broker)."""
    logs = probe.log_dirs(probe.brokers())
    return {(p, b) for (t, p, b) in logs if t == topic and b not in replicas[p]}


# Kafka's replication quota is a rate over its last `replication.quota.window.num` x
# `replication.quota.window.size.seconds` (11 x 1 s by default), and a leader records every follower fetch
# into it, throttled bytes or none: a throttle set on an idle leader lets about its rate x 11 s through at
# once (measured: 10.8 MB of a 16 MiB copy in 0.5 s at 2 MB/s), and a follower that copied throttled within
# the window starts with what the idle part of it allows. Tests that need a copy to stay in flight for a
# few seconds at a small rate shorten the window to 2 x 1 s, so a copy starts with at most about two
# seconds' worth (tests/realkafka/test_throttle.py measures Kafka's default).
SHORT_QUOTA_WINDOW = {"replication.quota.window.num": "2", "replication.quota.window.size.seconds": "1"}


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise TimeoutError(f"{what}: not after {timeout}s")
