"""A plan's `log_dirs` (JBOD) through `reassignd run` on a real KRaft cluster, judged from the brokers' side:
DescribeLogDirs says where each replica is and whether a future log is left, DescribeConfigs what the
log-dir throttle (`replica.alter.log.dirs.io.max.bytes.per.second`) is before, during and after, and the
gaining broker's own write counters (/proc/PID/io) how many times a replica was written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from reassignd.localkafka.cluster import KafkaCluster, KafkaNode
from reassignd.localkafka.load import fill
from reassignd.localkafka.probe import ClusterProbe, Sampler
from tests.realkafka.conftest import create_topic, wait_for
from tests.services.daemon import DaemonProcess

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

MIB = 1024 * 1024
LOG_DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
OPERATOR_RATE = "12345678"  # an operator's own log-dir rate on one broker: back byte-identical after the plan


@dataclass(frozen=True)
class Written:
    """What a process handed to write(2) and its kin (`wchar`: file writes, also socket writes and sendfile)
    and the bytes of the pages it dirtied (`write_bytes`, less those of files deleted before writeback)."""

    wchar: int
    write_bytes: int
    cancelled_write_bytes: int

    @classmethod
    def of(cls, node: KafkaNode) -> Written:
        assert node.proc is not None
        fields = dict(line.split(": ") for line in Path(f"/proc/{node.proc.pid}/io").read_text().splitlines())
        return cls(int(fields["wchar"]), int(fields["write_bytes"]), int(fields["cancelled_write_bytes"]))

    def __sub__(self, other: Written) -> Written:
        return Written(
            self.wchar - other.wchar,
            self.write_bytes - other.write_bytes,
            self.cancelled_write_bytes - other.cancelled_write_bytes,
        )


@dataclass
class LogDirSampler(Sampler):
    """DescribeLogDirs of some brokers every `interval` s in a thread, by the test: every future log seen
    (replica -> the largest size it reached), every dir each replica's current log was seen in (in order)
    and the log-dir rate of each broker seen during the plan."""

    probe: ClusterProbe
    topic: str
    brokers: tuple[int, ...]
    interval: float = 0.25
    futures: dict[tuple[int, int, str], int] = field(default_factory=dict)
    current: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    rates: dict[int, set[str | None]] = field(default_factory=dict)
    samples: int = 0
    errors: list[str] = field(default_factory=list)
    thread_name = "log-dir-sampler"

    def sample_once(self) -> None:
        logs = self.probe.log_dirs(self.brokers)
        rates = {b: self.probe.broker_configs(b).get(LOG_DIR_RATE) for b in self.brokers}
        for (topic, partition, broker), (path, size, future) in logs.items():
            if topic == self.topic and future:
                key = (partition, broker, path)
                self.futures[key] = max(self.futures.get(key, 0), size)
            elif topic == self.topic:
                seen = self.current.setdefault((partition, broker), [])
                if not seen or seen[-1] != path:
                    seen.append(path)
        for broker, rate in rates.items():
            self.rates.setdefault(broker, set()).add(rate)
        self.samples += 1


def dirs_of(cluster: KafkaCluster, broker: int) -> tuple[str, str]:
    first, second = cluster.brokers[broker].log_dirs
    return str(first), str(second)


def other_dir(cluster: KafkaCluster, broker: int, path: str) -> str:
    first, second = dirs_of(cluster, broker)
    return second if path == first else first


def logs_per_dir(probe: ClusterProbe, cluster: KafkaCluster, broker: int) -> dict[str, int]:
    counts = dict.fromkeys(dirs_of(cluster, broker), 0)
    for (_t, _p, b), (path, _size, future) in probe.log_dirs([broker]).items():
        if b == broker and not future:
            counts[path] = counts.get(path, 0) + 1
    return counts


def where(
    probe: ClusterProbe, topic: str, brokers: tuple[int, ...]
) -> dict[tuple[int, int], tuple[str, bool]]:
    """(partition, broker) -> (the dir of its log, whether a future log of it is there too)."""
    logs = probe.log_dirs(brokers)
    out: dict[tuple[int, int], tuple[str, bool]] = {}
    for (t, p, b), (path, _size, future) in logs.items():
        if t == topic:
            out[(p, b)] = (path, future)
    return out


def current_dirs(probe: ClusterProbe, topic: str, brokers: tuple[int, ...]) -> dict[tuple[int, int], str]:
    """(partition, broker) -> the dir of its current log (a future log is not where a replica is)."""
    logs = probe.log_dirs(brokers)
    return {(p, b): path for (t, p, b), (path, _size, future) in logs.items() if t == topic and not future}


def futures_left(probe: ClusterProbe, topic: str, brokers: tuple[int, ...]) -> list[tuple[int, int, str]]:
    logs = probe.log_dirs(brokers)
    return [(p, b, path) for (t, p, b), (path, _s, future) in logs.items() if t == topic and future]


def dir_kafka_would_not_pick(
    cluster: KafkaCluster, probe: ClusterProbe, daemon: DaemonProcess, broker: int
) -> tuple[str, dict[str, int]]:
    """The dir of `broker` a replica added there now would not be created in unless told: the one with more
    logs (LogManager.nextLogDirs picks the dir with the fewest; on a tie, here, the first). Counted once the
    daemon's writer group has made Kafka create `__consumer_offsets` (its logs count too: counted before
    it, a tie was broken by one of them and a replica landed in the named dir with the placement turned
    off); a one-partition topic on `broker` breaks a tie."""
    wait_for(
        lambda: (daemon.status().get("writer") or {}).get("self") is True, 30, "the daemon's writer group"
    )
    wait_for(
        lambda: (
            bool(probe.leaders("__consumer_offsets"))
            and -1 not in probe.leaders("__consumer_offsets").values()
        ),
        30,
        "__consumer_offsets led",
    )
    counts = logs_per_dir(probe, cluster, broker)
    if len(set(counts.values())) == 1:
        create_topic(probe, f"ballast-{broker}-{sum(counts.values())}", {0: [broker]})
        had = sum(counts.values())
        wait_for(
            lambda: sum(counts.update(logs_per_dir(probe, cluster, broker)) or counts.values()) > had,
            15,
            "the ballast log in DescribeLogDirs",
        )
    assert len(set(counts.values())) == 2, counts
    return max(counts, key=lambda d: counts[d]), counts


def test_a_broker_gaining_a_replica_creates_it_in_the_named_dir_and_writes_it_once(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    """AlterReplicaLogDirs before the step that adds the replica (the broker answers REPLICA_NOT_AVAILABLE and
    keeps the dir): broker 3 writes the partition once, into the named dir, and no future log ever exists.
    Sent after the step, the replica lands in the dir Kafka picks (the one with fewer logs) and is then
    copied again into the named one: twice the bytes."""
    probe = probe_of(kafka_cluster)
    topic, size, gainer = "jbod-gain", 24 * MIB, 3
    create_topic(probe, topic, {0: [1, 2]})
    fill(kafka_cluster.bootstrap_servers, topic, [0], size)
    throttles_before = probe.throttle_configs([topic])
    node = kafka_cluster.brokers[gainer]
    daemon = DaemonProcess(
        tmp_path / "daemon",
        kafka_cluster.bootstrap_servers,
        {"log.dir.reassignment.throttled.rate": 8_000_000},
    ).start()
    try:
        named, counts = dir_kafka_would_not_pick(kafka_cluster, probe, daemon, gainer)
        plan = {
            "version": 1,
            "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 3], "log_dirs": ["any", named]}],
        }
        before = Written.of(node)
        with LogDirSampler(probe, topic, (gainer,)) as sampler:
            plan_id = daemon.submit(plan)
            status = daemon.wait_for_state(plan_id, {"completed", "cancelled", "failed"}, timeout=120)
            time.sleep(1)  # what the broker writes once the move is over (checkpoints) is in the figure too
    finally:
        daemon.stop()
    written = Written.of(node) - before
    print(
        f"\nbroker {gainer} wrote while gaining a {size} B replica: wchar {written.wchar} B "
        f"({written.wchar / size:.2f}x), write_bytes {written.write_bytes} B "
        f"({written.write_bytes / size:.2f}x), cancelled_write_bytes {written.cancelled_write_bytes} B; "
        f"future logs seen: {sampler.futures}; its dirs seen: {sampler.current.get((0, gainer))}; "
        f"logs per dir before: {counts}; samples {sampler.samples}"
    )
    assert status["state"] == "completed", status
    assert daemon.log_records("error") == []
    assert probe.replicas(topic) == {0: [1, 3]}
    assert where(probe, topic, (1, gainer))[(0, gainer)] == (named, False), "in the named dir, no future log"
    assert sampler.current.get((0, gainer)) == [named], "created in the named dir, never in another first"
    assert sampler.samples >= 3 and not sampler.errors, (sampler.samples, sampler.errors)
    assert sampler.futures == {}, (
        "the replica was copied a second time, from one dir of broker 3 to the other"
    )
    assert 0.9 * size <= written.wchar <= 1.4 * size, written
    assert probe.throttle_configs([topic]) == throttles_before


def test_a_move_between_the_dirs_of_a_broker_ends_in_the_named_dir_at_the_rate_set_and_restores_it(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    """Replicas of brokers 1 and 2 move to their other dir; broker 2 has an operator's own log-dir rate
    (policy add: theirs plus ours while our moves run there). `PATCH /v1/throttles` changes our rate while
    the moves run, the brokers and the status show the new one at once, and afterwards every throttle config
    is byte-identical to what it was."""
    probe = probe_of(kafka_cluster)
    topic, size = "jbod-intra", 12 * MIB
    create_topic(probe, topic, {0: [1, 2], 1: [2, 1]})
    fill(kafka_cluster.bootstrap_servers, topic, [0, 1], size)
    now = current_dirs(probe, topic, (1, 2))
    target = {(p, b): other_dir(kafka_cluster, b, path) for (p, b), path in now.items()}
    plan = {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": p, "replicas": r, "log_dirs": [target[(p, b)] for b in r]}
            for p, r in ((0, [1, 2]), (1, [2, 1]))
        ],
    }
    probe.set_broker_config(2, LOG_DIR_RATE, OPERATOR_RATE)
    throttles_before = probe.throttle_configs([topic])
    assert throttles_before == {f"broker 2: {LOG_DIR_RATE}": OPERATOR_RATE}
    first, second = 1_500_000, 3_000_000
    daemon = DaemonProcess(
        tmp_path / "daemon",
        kafka_cluster.bootstrap_servers,
        {"log.dir.reassignment.throttled.rate": first, "reassignment.max.log.dir.movements.per.broker": 2},
    ).start()
    try:
        with LogDirSampler(probe, topic, (1, 2)) as sampler:
            plan_id = daemon.submit(plan)
            wait_for(lambda: bool(futures_left(probe, topic, (1,))), 60, "a future log on broker 1")
            # broker 2's sum, before the change replaces it (the sampler alone missed it once under load)
            wait_for(
                lambda: probe.broker_configs(2).get(LOG_DIR_RATE) == str(int(OPERATOR_RATE) + first),
                30,
                "the operator's rate plus ours on broker 2",
            )
            # and broker 1's, seen by the sampler: the two are written at once, and a sampler that read
            # broker 1 just before the write and broker 2 just after missed it once
            wait_for(lambda: str(first) in sampler.rates.get(1, ()), 30, "our rate on broker 1, sampled")
            code, answer = daemon.request(
                "PATCH", "/v1/throttles", {"log.dir.reassignment.throttled.rate": second}
            )
            assert code == 200, answer
            assert answer["log.dir.reassignment.throttled.rate"] == second
            wait_for(
                lambda: probe.broker_configs(1).get(LOG_DIR_RATE) == str(second),
                30,
                "the new rate on broker 1",
            )
            # the status is the view the daemon publishes once its cycle has Kafka's answer to the write,
            # a moment after the broker has the value (read before it once: {1: 1500000, 2: 13845678})
            in_force: dict[int, int | None] = {}

            def status_shows_it() -> bool:
                brokers = daemon.status(plan_id)["brokers"]
                in_force.update({b["broker"]: b["log_dir_throttle"] for b in brokers})
                return in_force.get(1) == second

            wait_for(status_shows_it, 10, "the status showing the new rate on broker 1")
            status = daemon.wait_for_state(plan_id, {"completed", "cancelled", "failed"}, timeout=120)
    finally:
        daemon.stop()
    assert status["state"] == "completed", status
    assert daemon.log_records("error") == []
    assert current_dirs(probe, topic, (1, 2)) == target
    assert futures_left(probe, topic, (1, 2)) == []
    assert in_force[1] == second, in_force
    assert str(first) in sampler.rates[1] and str(second) in sampler.rates[1], sampler.rates
    assert str(int(OPERATOR_RATE) + first) in sampler.rates[2], "the operator's rate plus ours (policy add)"
    assert status["progress"]["log_dir_moves"] == {
        "total": 4,
        "done": 4,
        "in_flight": 0,
        "waiting": 0,
        "dropped": 0,
    }
    assert probe.throttle_configs([topic]) == throttles_before


def test_a_cancel_sends_an_unfinished_move_back_to_the_dir_of_its_current_log(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    """As `kafka-reassign-partitions.sh --cancel` does: AlterReplicaLogDirs to the dir the current log is
    in drops the future log. The plan ends cancelled long before the copy could have finished, the replica
    where it was, no future log left, the throttle as it was."""
    probe = probe_of(kafka_cluster)
    topic, size, broker, rate = "jbod-cancel", 16 * MIB, 4, 1_000_000
    create_topic(probe, topic, {0: [4, 1]})
    fill(kafka_cluster.bootstrap_servers, topic, [0], size)
    (start,) = [d for (p, b), d in current_dirs(probe, topic, (broker,)).items() if (p, b) == (0, broker)]
    named = next(d for d in dirs_of(kafka_cluster, broker) if d != start)
    throttles_before = probe.throttle_configs([topic])
    plan = {
        "version": 1,
        "partitions": [{"topic": topic, "partition": 0, "replicas": [4, 1], "log_dirs": [named, "any"]}],
    }
    daemon = DaemonProcess(
        tmp_path / "daemon", kafka_cluster.bootstrap_servers, {"log.dir.reassignment.throttled.rate": rate}
    ).start()
    try:
        plan_id = daemon.submit(plan)
        wait_for(lambda: bool(futures_left(probe, topic, (broker,))), 60, "the future log")
        cancelled_at = time.monotonic()
        code, answer = daemon.request("POST", f"/v1/plans/{plan_id}/cancel")
        assert code == 200, answer
        status = daemon.wait_for_state(plan_id, {"completed", "cancelled", "failed"}, timeout=60)
        took = time.monotonic() - cancelled_at
    finally:
        daemon.stop()
    print(f"\nplan {status['state']} {took:.1f} s after the cancel (the whole copy: {size / rate:.0f} s)")
    assert status["state"] == "cancelled", status
    assert took < 0.5 * size / rate, f"ended {took:.1f} s after the cancel: the copy was let finish"
    assert current_dirs(probe, topic, (broker,)) == {(0, broker): start}, "back where its current log was"
    assert futures_left(probe, topic, (broker,)) == []
    assert probe.throttle_configs([topic]) == throttles_before


def test_a_snapshot_with_sizes_carries_each_log_dirs_volume_as_the_broker_says_it(
    kafka_cluster: KafkaCluster, probe_of: Any
) -> None:
    """KIP-827 (DescribeLogDirs v4, Kafka 3.3 on): the snapshot self-healing's `disk_capacity` judges
    carries each log dir's total and usable bytes, as the broker's own volume says them."""
    import asyncio
    import shutil

    from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin

    create_topic(probe_of(kafka_cluster), "volumes", {0: [1, 2]})

    async def read() -> Any:
        admin = KafkaClusterAdmin(AdminSettings({"bootstrap.servers": kafka_cluster.bootstrap_servers}))
        try:
            return await admin.snapshot(with_sizes=True)
        finally:
            await admin.close()

    snapshot = asyncio.run(read())
    said = {(b, d) for b, d in snapshot.dir_volumes if b in (1, 2)}
    assert said == {(b, d) for b in (1, 2) for d in dirs_of(kafka_cluster, b)}, snapshot.dir_volumes
    for (_, path), (total, usable) in snapshot.dir_volumes.items():
        disk = shutil.disk_usage(path)
        assert total == disk.total, (path, total, disk)
        assert 0 <= usable <= total
