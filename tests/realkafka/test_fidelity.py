"""The simulator's fidelity: each test asks a `reassignd sim` process and a real Kafka 4.4 KRaft cluster the
same question, through the same clients, and expects the same answer (docs/simulator.md, "Settled against
real Kafka", lists each behaviour, its verdict and its Kafka source).

Both clusters have four brokers in racks /dc1/rack1.. /dc2/rack2, two log dirs each,
replica.lag.time.max.ms = 4000 and a cluster-level min.insync.replicas of 1 (what formatting a 4.4 KRaft
cluster writes). The real controller fences a broker after 30 s without a heartbeat, so a broker paused
(SIGSTOP) for a few seconds is a slow follower, not a failed one; the simulator's slow follower is a broker
whose network takes nothing in. Timings are wall-clock on both (the simulator runs at time scale 1) and
leave the margins a loaded two-core machine needs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from reassignd.cluster._kafka_python import KafkaAdminClient, KpTopicPartition, send_each
from reassignd.engine.cluster_clock import CLOCK_KEYS
from reassignd.localkafka.cluster import RACKS, KafkaCluster
from reassignd.localkafka.load import RateProducer, fill
from reassignd.localkafka.probe import ClusterProbe
from tests.realkafka.conftest import wait_for
from tests.services.simulator import SimProcess

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.admin import (
        AlterReplicaLogDirsRequest,
        DescribeConfigsRequest,
        DescribeLogDirsRequest,
        ElectLeadersRequest,
        IncrementalAlterConfigsRequest,
    )
    from kafka.protocol.metadata import MetadataRequest

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

MIB = 1024 * 1024
BROKERS = (1, 2, 3, 4)
LAG_TIME_MS = 4000
RATE_KEYS = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)


def sim_scenario() -> dict[str, Any]:
    return {
        "seed": 1,
        "kafka": {"version": "4.4", "mode": "kraft"},
        "brokers": [
            {
                "id": b,
                "rack": RACKS[b - 1],
                "log_dirs": [f"/data/broker-{b}/data-0", f"/data/broker-{b}/data-1"],
            }
            for b in BROKERS
        ],
        "topics": [],
        "static_broker_configs": {"replica.lag.time.max.ms": str(LAG_TIME_MS)},
        "cluster_broker_configs": {"min.insync.replicas": "1"},
    }


@dataclass
class Backend:
    """One cluster, asked through kafka-python and librdkafka as any client would; writes that need a
    producer or a slow broker go to whatever makes them on that cluster."""

    name: str
    bootstrap: str
    fill: Callable[[str, int, int], object]
    produce: Callable[[str, int, float], contextlib.AbstractContextManager[Any]]
    slow: Callable[[int], contextlib.AbstractContextManager[None]]
    probe: ClusterProbe = field(init=False)
    admin: Any = field(init=False)

    def __post_init__(self) -> None:
        self.probe = ClusterProbe(self.bootstrap)
        self.admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=15000)

    def close(self) -> None:
        self.admin.close()
        self.probe.close()

    def send(self, broker: int, request: Any) -> Any:
        answer = send_each(self.admin, {broker: request}, 15)[broker]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def topic(
        self, name: str, assignment: Mapping[int, list[int]], configs: Mapping[str, str] | None = None
    ) -> str:
        """A topic of this test's own (a unique name per backend), settled: leaders and full ISRs."""
        full = f"{name}-{int(time.time() * 1000) % 10**8}"
        self.probe.create_topic(full, assignment, configs or {})
        wait_for(lambda: _settled(self.probe, full, assignment), 30, f"{self.name}: topic {full} settled")
        return full

    def alter(self, topic: str, partition: int, replicas: list[int] | None) -> Any:
        return self.admin.alter_partition_reassignments({KpTopicPartition(topic, partition): replicas})

    def moving(self, topic: str) -> dict[int, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        return {
            p: (m.replicas, m.adding, m.removing)
            for (t, p), m in self.probe.reassignments().items()
            if t == topic
        }

    def logs(self, broker: int, topic: str) -> dict[tuple[int, bool], tuple[str, int, int]]:
        """(partition, is future) -> (log dir, size, offset lag) on one broker, from DescribeLogDirs."""
        request = DescribeLogDirsRequest(
            topics=[DescribeLogDirsRequest.DescribableLogDirTopic(topic=topic, partitions=[0, 1, 2, 3])]
        )
        found = {}
        for result in self.send(broker, request).results:
            for t in result.topics:
                for p in t.partitions:
                    found[(p.partition_index, bool(p.is_future_key))] = (
                        result.log_dir,
                        p.partition_size,
                        p.offset_lag,
                    )
        return found

    def isr(self, topic: str, broker: int = 1) -> dict[int, list[int]]:
        """The ISR of each partition as one broker's Metadata shows it (asked of that broker only, so a
        paused broker holds nothing up)."""
        request = MetadataRequest[12](
            topics=[MetadataRequest[12].MetadataRequestTopic(topic_id=None, name=topic)],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        (found,) = self.send(broker, request).topics
        return {p.partition_index: list(p.isr_nodes) for p in found.partitions}

    def dirs(self, broker: int) -> list[str]:
        request = DescribeLogDirsRequest(topics=[])
        return sorted(r.log_dir for r in self.send(broker, request).results)

    def set_rate(self, broker: int, key: str, value: str | None) -> None:
        self.probe.set_broker_config(broker, key, value)

    def set_cluster_default(self, key: str, value: str | None) -> None:
        """The cluster-wide dynamic default (resource ""), which neither client's API addresses."""
        op = 0 if value is not None else 1  # SET, DELETE
        request = IncrementalAlterConfigsRequest(resources=[(4, "", [(key, op, value)])], validate_only=False)
        (result,) = self.send(1, request).responses
        assert result.error_code == 0, (result.error_code, result.error_message)


def _settled(probe: ClusterProbe, name: str, assignment: Mapping[int, list[int]]) -> bool:
    try:
        isr, leaders = probe.isr(name), probe.leaders(name)
    except Exception:
        return False
    return all(
        sorted(isr.get(p, [])) == sorted(r) and leaders.get(p, -1) == r[0] for p, r in assignment.items()
    )


@contextlib.contextmanager
def _pause(cluster: KafkaCluster, broker: int) -> Iterator[None]:
    """SIGSTOP the broker's JVM (our own process, by its PID): it fetches nothing until SIGCONT."""
    proc = cluster.brokers[broker].proc
    assert proc is not None
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(proc.pid, signal.SIGCONT)


@contextlib.contextmanager
def _sim_slow(sim: SimProcess, broker: int) -> Iterator[None]:
    sim.request("POST", f"/brokers/{broker}/network", {"network_in_bytes_per_sec": 0})
    try:
        yield
    finally:
        sim.request("POST", f"/brokers/{broker}/network", {"network_in_bytes_per_sec": 125_000_000})


@contextlib.contextmanager
def _sim_produce(sim: SimProcess, topic: str, partition: int, rate: float) -> Iterator[None]:
    sim.request(
        "POST", "/produce", {"topic": topic, "partition": partition, "bytes_per_sec": rate, "acks": "all"}
    )
    try:
        yield
    finally:
        sim.produce(topic, 0, partition=partition)


@pytest.fixture(scope="module", params=["sim", "kafka"])
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    workdir = tmp_path_factory.mktemp(f"fidelity-{request.param}")
    if request.param == "sim":
        with SimProcess(sim_scenario(), workdir, time_scale=1) as sim:
            backend = Backend(
                "sim",
                sim.bootstrap_servers,
                fill=lambda topic, partition, size: sim.request(
                    "POST", "/append", {"topic": topic, "partition": partition, "bytes": size}
                ),
                produce=lambda topic, partition, rate: _sim_produce(sim, topic, partition, rate),
                slow=lambda broker: _sim_slow(sim, broker),
            )
            try:
                yield backend
            finally:
                backend.close()
        return
    real = KafkaCluster(
        workdir,
        broker_properties={"replica.lag.time.max.ms": str(LAG_TIME_MS)},
        controller_properties={"broker.session.timeout.ms": "30000"},
    )
    with real:
        backend = Backend(
            "kafka",
            real.bootstrap_servers,
            fill=lambda topic, partition, size: fill(real.bootstrap_servers, topic, [partition], size),
            produce=lambda topic, partition, rate: RateProducer(
                real.bootstrap_servers, topic, [partition], rate
            ),
            slow=lambda broker: _pause(real, broker),
        )
        try:
            yield backend
        finally:
            backend.close()


# ---------------------------------------------------------------------------------------------------------
# What a broker says about itself


# ApiVersions of a real 4.4.0 broker for the APIs the simulator serves; the simulator advertises ApiVersions
# up to v4, the last kafka-python describes (a broker must decode what it advertises): differs on purpose.
SERVED = {3: (0, 13), 19: (2, 7), 20: (1, 6), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 5)}
SERVED |= {43: (0, 2), 44: (0, 1), 45: (0, 1), 46: (0, 0), 60: (0, 2)}
# the writer group's APIs (docs/ha.md): FindCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup
SERVED |= {10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5)}


def test_api_versions_of_the_apis_served_and_the_release_kafka_python_infers(cluster: Backend) -> None:
    data = cluster.admin._manager.broker_version_data
    advertised = {int(key): tuple(v) for key, v in data.api_versions.items()}
    assert {key: advertised[key] for key in SERVED} == SERVED
    assert advertised[18] == ((0, 4) if cluster.name == "sim" else (0, 5))
    assert data.broker_version == (4, 3)  # kafka-python's newest guess (DescribeLogDirs v5)


def _described(cluster: Backend, name: str, keys: list[str] | None) -> tuple[Any, dict[str, Any]]:
    request = DescribeConfigsRequest(resources=[(4, name, keys)], include_synonyms=True, min_version=1)
    broker = int(name) if name else 1
    (result,) = cluster.send(broker, request).results
    entries = {
        e.name: (
            e.value,
            e.config_source,
            e.read_only,
            e.config_type,
            [(s.value, s.source) for s in e.synonyms],
        )
        for e in result.configs
    }
    return (result.error_code, result.error_message), entries


def test_the_simulated_clock_is_answered_only_when_named_and_a_real_broker_answers_nothing(
    cluster: Backend,
) -> None:
    """The daemon asks every broker for the simulator's clock each cycle (engine/cluster_clock.py): a real
    broker must answer the rest of the request as before and nothing for those names."""
    status, entries = _described(cluster, "1", [*CLOCK_KEYS, RATE_KEYS[0]])
    assert status == (0, "")
    if cluster.name == "kafka":
        assert entries == {}
    else:
        assert set(entries) == set(CLOCK_KEYS)
        assert float(entries[CLOCK_KEYS[1]][0]) == 1.0
        assert all(entry[2] for entry in entries.values()), "read-only"
        # the clock runs at that scale (a fresh simulator answered 0.0 once: it had not ticked yet)
        started = float(entries[CLOCK_KEYS[0]][0])
        deadline = time.monotonic() + 10
        while float(_described(cluster, "1", [CLOCK_KEYS[0]])[1][CLOCK_KEYS[0]][0]) <= started:
            assert time.monotonic() < deadline, f"the simulated clock stood at {started} for 10 s"
            time.sleep(0.2)
    _status, every = _described(cluster, "1", None)
    assert not set(CLOCK_KEYS) & set(every)


def test_a_throttle_rate_is_described_only_where_a_level_sets_it(cluster: Backend) -> None:
    unset, entries = _described(cluster, "1", list(RATE_KEYS))
    assert unset == (0, "") and entries == {}, "a rate nobody set is not listed (no KafkaConfig key)"
    _status, every = _described(cluster, "1", None)
    assert not set(RATE_KEYS) & set(every)
    try:
        cluster.set_rate(1, RATE_KEYS[0], "1000000")
        cluster.set_rate(1, RATE_KEYS[2], "2000000")
        cluster.set_cluster_default(RATE_KEYS[1], "3000000")
        wait_for(lambda: len(_described(cluster, "1", list(RATE_KEYS))[1]) == 3, 10, "configs replayed")
        _status, entries = _described(cluster, "1", list(RATE_KEYS))
        # value, source (2 broker, 3 cluster default), read-only, type LONG (5), synonyms without a default
        assert entries == {
            RATE_KEYS[0]: ("1000000", 2, False, 5, [("1000000", 2)]),
            RATE_KEYS[1]: ("3000000", 3, False, 5, [("3000000", 3)]),
            RATE_KEYS[2]: ("2000000", 2, False, 5, [("2000000", 2)]),
        }
        _status, default = _described(cluster, "", None)
        assert default[RATE_KEYS[1]] == ("3000000", 3, False, 5, [("3000000", 3)])
        assert default["min.insync.replicas"][:2] == ("1", 3), "what formatting a 4.4 KRaft cluster writes"
    finally:
        for key in (RATE_KEYS[0], RATE_KEYS[2]):
            cluster.set_rate(1, key, None)
        cluster.set_cluster_default(RATE_KEYS[1], None)


# ---------------------------------------------------------------------------------------------------------
# Reassignments, elections and log dirs


@contextlib.contextmanager
def _moves_held(cluster: Backend, topic: str) -> Iterator[None]:
    """Leader rate 0 on every broker for the topic's partitions: a move starts and never progresses."""
    for b in BROKERS:
        cluster.set_rate(b, RATE_KEYS[0], "0")
    cluster.probe.set_topic_config(topic, "leader.replication.throttled.replicas", "*")
    try:
        yield
    finally:
        for b in BROKERS:
            cluster.set_rate(b, RATE_KEYS[0], None)


def test_a_move_a_new_target_and_a_cancel_list_replicas_in_kafkas_order(cluster: Backend) -> None:
    topic = cluster.topic("order", {0: [3, 1]})
    cluster.fill(topic, 0, 2 * MIB)
    with _moves_held(cluster, topic):
        assert cluster.alter(topic, 0, [4, 2]) == {KpTopicPartition(topic, 0): None}
        # the controller lists the move at once; brokers' Metadata shows it a moment later
        assert cluster.moving(topic) == {0: ((4, 2, 1, 3), (2, 4), (1, 3))}
        wait_for(lambda: cluster.probe.replicas(topic)[0] == [4, 2, 1, 3], 5, "Metadata shows the move")
        time.sleep(2.0)
        assert cluster.moving(topic) == {0: ((4, 2, 1, 3), (2, 4), (1, 3))}, "held: nothing caught up"
        cluster.alter(topic, 0, [4, 1])  # from the current replicas; adding stays when nothing is added
        assert cluster.moving(topic) == {0: ((4, 1, 2, 3), (2, 4), (2, 3))}
        cluster.alter(topic, 0, None)
        assert cluster.moving(topic) == {}
        wait_for(lambda: cluster.probe.replicas(topic)[0] == [1, 3], 5, "Metadata shows the cancel")
        assert (cluster.probe.isr(topic)[0], cluster.probe.leaders(topic)[0]) == ([3, 1], 3)
        errors = cluster.alter(topic, 0, None)
        assert errors[KpTopicPartition(topic, 0)].__name__ == "NoReassignmentInProgressError"


def _elect(
    cluster: Backend, election: int, tps: list[tuple[str, list[int]]]
) -> list[tuple[str, int, int, str | None]]:
    topics = [ElectLeadersRequest.TopicPartitions(topic=t, partitions=ps) for t, ps in tps]
    answer = cluster.send(
        1, ElectLeadersRequest(election_type=election, topic_partitions=topics, timeout_ms=10000)
    )
    return [
        (r.topic, p.partition_id, p.error_code, p.error_message)
        for r in answer.replica_election_results
        for p in r.partition_result
    ]


def test_election_answers(cluster: Backend) -> None:
    topic = cluster.topic("elect", {0: [2, 4], 1: [1, 2]})
    cluster.fill(topic, 1, 2 * MIB)
    assert _elect(cluster, 0, [(topic, [0])]) == [
        (topic, 0, 84, "Leader election not needed for topic partition.")
    ]
    assert _elect(cluster, 0, [(topic, [9]), ("no-such-topic", [0])]) == [
        (topic, 9, 3, f"No such partition as {topic}-9"),
        ("no-such-topic", 0, 3, "No such topic as no-such-topic"),
    ]
    with _moves_held(cluster, topic):
        cluster.alter(topic, 1, [3, 1, 2])  # 3 first, but not in sync while the move is held
        wait_for(lambda: cluster.probe.replicas(topic)[1] == [3, 1, 2], 5, "Metadata shows the move")
        assert _elect(cluster, 0, [(topic, [1])]) == [
            (topic, 1, 80, "The preferred leader was not available.")
        ]
        assert _elect(cluster, 1, [(topic, [1])]) == [
            (topic, 1, 84, "Leader election not needed for topic partition.")
        ]
    wait_for(lambda: cluster.moving(topic) == {}, 30, "the move completes")
    assert _elect(cluster, 0, [(topic, [1])]) == [(topic, 1, 0, None)]


def _alter_dir(cluster: Backend, broker: int, path: str, topic: str, partition: int) -> int:
    directory = AlterReplicaLogDirsRequest.AlterReplicaLogDir
    request = AlterReplicaLogDirsRequest(
        dirs=[
            directory(
                path=path, topics=[directory.AlterReplicaLogDirTopic(name=topic, partitions=[partition])]
            )
        ]
    )
    ((result,),) = [[p.error_code for p in r.partitions] for r in cluster.send(broker, request).results]
    return int(result)


def test_a_log_dir_named_before_the_replica_exists_is_where_it_lands(cluster: Backend) -> None:
    topic = cluster.topic("dirs", {0: [1, 2], 1: [2, 3]})
    cluster.fill(topic, 0, MIB)
    second = cluster.dirs(3)[1]
    assert _alter_dir(cluster, 3, "/no/such/dir", topic, 0) == 57  # LOG_DIR_NOT_FOUND
    assert _alter_dir(cluster, 3, second, "no-such-topic", 0) == 3  # UNKNOWN_TOPIC_OR_PARTITION
    assert _alter_dir(cluster, 3, second, topic, 7) == 3
    # partition 1 already fills one of broker 3's dirs; name the same one for partition 0 before it is there
    taken = cluster.logs(3, topic)[(1, False)][0]
    assert _alter_dir(cluster, 3, taken, topic, 0) == 9  # REPLICA_NOT_AVAILABLE, and the dir is remembered
    cluster.alter(topic, 0, [1, 2, 3])
    wait_for(lambda: cluster.moving(topic) == {}, 30, "the move completes")
    wait_for(lambda: (0, False) in cluster.logs(3, topic), 10, "the replica is on broker 3")
    assert cluster.logs(3, topic)[(0, False)][0] == taken, "not the dir with the fewest logs: the one named"


# ---------------------------------------------------------------------------------------------------------
# Throttles: windows, not rates


def test_rate_zero_lets_a_follower_trickle_a_fetch_a_window_and_stops_a_leader(cluster: Backend) -> None:
    """Follower rate 0: one fetch (replica.fetch.max.bytes, 1 MiB) each time the quota's 11-sample window
    has emptied; the same for a copy between log dirs at alter-log-dirs rate 0; leader rate 0: nothing,
    every fetch response of the partition is metered (measured 4.4: 983,266 bytes every 11.0-11.5 s)."""
    topic = cluster.topic("trickle", {0: [1], 1: [3], 2: [4]})
    for partition in (0, 1, 2):
        cluster.fill(topic, partition, 5 * MIB)
    cluster.set_rate(2, RATE_KEYS[1], "0")
    cluster.set_rate(3, RATE_KEYS[0], "0")
    cluster.set_rate(4, RATE_KEYS[2], "0")
    cluster.probe.set_topic_config(topic, "follower.replication.throttled.replicas", "0:2")
    cluster.probe.set_topic_config(topic, "leader.replication.throttled.replicas", "1:3")
    try:
        current = cluster.logs(4, topic)[(2, False)][0]
        other = next(d for d in cluster.dirs(4) if d != current)
        started = time.monotonic()
        cluster.alter(topic, 0, [1, 2])
        cluster.alter(topic, 1, [3, 2])
        assert _alter_dir(cluster, 4, other, topic, 2) == 0
        seen: dict[str, list[tuple[float, int]]] = {"follower": [], "future": [], "leader": []}
        while time.monotonic() - started < 25:
            elapsed = time.monotonic() - started
            on_2, on_4 = cluster.logs(2, topic), cluster.logs(4, topic)
            for label, size in (
                ("follower", on_2.get((0, False), ("", 0, 0))[1]),
                ("future", on_4.get((2, True), ("", 0, 0))[1]),
                ("leader", on_2.get((1, False), ("", 0, 0))[1]),
            ):
                if not seen[label] or seen[label][-1][1] != size:
                    seen[label].append((round(elapsed, 1), size))
            time.sleep(0.25)
        for label in ("follower", "future"):
            grants = [(t, round(size / MIB)) for t, size in seen[label] if size]
            # 1 MiB at once, a second one 11-12.5 s later, a third 11-12.5 s after that (a real fetch brings
            # whole batches: 983,266 of the 1,048,576 bytes with these records)
            assert [n for _t, n in grants] == [1, 2, 3], (label, seen[label])
            assert grants[0][0] < 3.0, (label, seen[label])
            assert 10.0 < grants[1][0] - grants[0][0] < 13.5, (label, seen[label])
            assert 10.0 < grants[2][0] - grants[1][0] < 13.5, (label, seen[label])
        assert [size for _t, size in seen["leader"] if size] == [], seen["leader"]
    finally:
        cluster.set_rate(2, RATE_KEYS[1], None)
        cluster.set_rate(3, RATE_KEYS[0], None)
        cluster.set_rate(4, RATE_KEYS[2], None)


def test_a_leader_throttle_lets_a_whole_window_through_at_once(cluster: Backend) -> None:
    """A leader's quota window always spans 11-12 s (every follower fetch records to it): at 2 MB/s a
    16 MiB copy is through at once, not in 8 s (measured 4.4: 20 MiB in under 1.3 s)."""
    topic = cluster.topic("burst", {0: [1]})
    cluster.fill(topic, 0, 16 * MIB)
    cluster.set_rate(1, RATE_KEYS[0], "2000000")
    cluster.probe.set_topic_config(topic, "leader.replication.throttled.replicas", "0:1")
    try:
        started = time.monotonic()
        cluster.alter(topic, 0, [1, 2])
        wait_for(lambda: cluster.moving(topic) == {}, 15, "the move completes")
        assert time.monotonic() - started < 5.0
    finally:
        cluster.set_rate(1, RATE_KEYS[0], None)


# ---------------------------------------------------------------------------------------------------------
# A follower that falls behind; acks=all below min.insync.replicas


def test_a_slow_follower_leaves_the_isr_and_acks_all_writes_stop_until_it_is_back(cluster: Backend) -> None:
    topic = cluster.topic("slow", {0: [1, 2]}, {"min.insync.replicas": "2"})
    with cluster.produce(topic, 0, 200_000):
        time.sleep(1.0)
        with cluster.slow(2):
            slowed = time.monotonic()
            # out of sync replica.lag.time.max.ms after it last caught up (the leader checks every half of it)
            wait_for(lambda: cluster.isr(topic)[0] == [1], 20, "the slow follower leaves the ISR")
            left_after = time.monotonic() - slowed
            assert LAG_TIME_MS / 1000 - 0.5 <= left_after <= LAG_TIME_MS / 1000 * 1.5 + 4.0, left_after
            time.sleep(1.0)
            held = cluster.logs(1, topic)[(0, False)][1]
            time.sleep(2.0)
            assert cluster.logs(1, topic)[(0, False)][1] == held, "acks=all writes refused: the log holds"
        wait_for(lambda: sorted(cluster.isr(topic)[0]) == [1, 2], 20, "back in sync")
        wait_for(lambda: cluster.logs(1, topic)[(0, False)][1] > held, 10, "writes accepted again")
