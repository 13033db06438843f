"""What the cluster itself says, read with clients of its own (never through reassignd's adapter), so a
real-Kafka test or benchmark judges the daemon from the brokers' side.

    probe = ClusterProbe(cluster.bootstrap_servers)
    probe.replicas("orders")                # {partition: [replicas]} in Kafka's order
    probe.leaders("orders")                 # {partition: leader}
    probe.throttle_configs(topics)          # every throttle config of every broker, the cluster and topics
    with ReassignmentSampler(probe) as sampler:   # ListPartitionReassignments every second
        ...
    sampler.peak_per_broker()               # most replica movements seen at once per broker
"""

from __future__ import annotations

import threading
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

# kafka-python, imported without its import-time warnings
from reassignd.cluster._kafka_python import KafkaAdminClient

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

# Every config reassignd (or an operator, or Kafka's own tool) uses to throttle replication or log-dir moves.
BROKER_THROTTLE_KEYS = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)
TOPIC_THROTTLE_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


@dataclass(frozen=True)
class Moving:
    """One ongoing reassignment as ListPartitionReassignments shows it."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


class ClusterProbe:
    """Blocking reads of a real cluster over a PLAINTEXT listener: confluent-kafka for Metadata, kafka-python
    for configs and for what librdkafka lacks (ListPartitionReassignments, DescribeLogDirs). The lock makes
    one probe safe to share with a sampler thread."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka.admin import AdminClient

        self.bootstrap = bootstrap
        self._admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        self._kafka_python: Any = None
        self._lock = threading.RLock()

    @property
    def admin(self) -> Any:
        return self._admin

    def kafka_python(self) -> Any:
        with self._lock:
            if self._kafka_python is None:
                self._kafka_python = KafkaAdminClient(
                    bootstrap_servers=self.bootstrap, request_timeout_ms=15000
                )
            return self._kafka_python

    def close(self) -> None:
        if self._kafka_python is not None:
            self._kafka_python.close()

    # -- metadata ------------------------------------------------------------------------------------------

    def _partitions(self, topic: str) -> dict[int, Any]:
        metadata = self._admin.list_topics(topic=topic, timeout=15)
        info = metadata.topics[topic]
        if info.error is not None:
            raise RuntimeError(f"metadata of {topic}: {info.error}")
        return dict(info.partitions)

    def create_topic(
        self, name: str, assignment: Mapping[int, list[int]], configs: Mapping[str, str]
    ) -> None:
        with self._lock:
            self.kafka_python().create_topics(
                [NewTopic(name, replica_assignments=dict(assignment), topic_configs=dict(configs))]
            )

    def replicas(self, topic: str) -> dict[int, list[int]]:
        return {p: list(meta.replicas) for p, meta in sorted(self._partitions(topic).items())}

    def leaders(self, topic: str) -> dict[int, int]:
        return {p: meta.leader for p, meta in sorted(self._partitions(topic).items())}

    def isr(self, topic: str) -> dict[int, list[int]]:
        return {p: list(meta.isrs) for p, meta in sorted(self._partitions(topic).items())}

    def brokers(self) -> set[int]:
        return set(self._admin.list_topics(timeout=15).brokers)

    # -- reassignments and log dirs ------------------------------------------------------------------------

    def reassignments(self) -> dict[tuple[str, int], Moving]:
        with self._lock:
            answer = self.kafka_python().list_partition_reassignments()
        return {
            (tp.topic, tp.partition): Moving(
                tuple(entry["replicas"]), tuple(entry["adding_replicas"]), tuple(entry["removing_replicas"])
            )
            for tp, entry in _items(answer)
        }

    def log_dirs(self, brokers: Iterable[int]) -> dict[tuple[str, int, int], tuple[str, int, bool]]:
        """(topic, partition, broker) -> (log dir, size in bytes, is a future replica) for every replica."""
        found: dict[tuple[str, int, int], tuple[str, int, bool]] = {}
        for broker in brokers:
            with self._lock:
                answer = self.kafka_python().describe_log_dirs(brokers=[broker])
            for entry in answer:
                for log_dir in entry["log_dirs"]:
                    if log_dir["error_code"] != 0:
                        continue
                    for topic in log_dir["topics"]:
                        for part in topic["partitions"]:
                            key = (topic["name"], part["partition_index"], entry["broker"])
                            future = bool(part["is_future_key"])
                            if future or key not in found:
                                found[key] = (log_dir["log_dir"], part["partition_size"], future)
        return found

    def replica_size(self, topic: str, partition: int, broker: int) -> int | None:
        """The size of one replica's log on `broker` (its current log, not a future one), None while the
        broker does not host it: DescribeLogDirs asked for that partition only."""
        with self._lock:
            answer = self.kafka_python().describe_log_dirs(
                topic_partitions={topic: [partition]}, brokers=[broker]
            )
        for entry in answer:
            for log_dir in entry["log_dirs"]:
                if log_dir["error_code"] != 0:
                    continue
                for found in log_dir["topics"]:
                    for part in found["partitions"]:
                        if part["partition_index"] == partition and not part["is_future_key"]:
                            return int(part["partition_size"])
        return None

    # -- configs -------------------------------------------------------------------------------------------

    def _described(self, resource_type: Any, name: str) -> dict[str, dict[str, Any]]:

        with self._lock:
            answer = self.kafka_python().describe_configs(
                [ConfigResource(resource_type, name)], include_synonyms=True, config_filter="all"
            )
        return dict(next(iter(answer.values()))[name])

    def broker_configs(self, broker: int) -> dict[str, str]:
        """The dynamic configs set on one broker, as Kafka stores them. A throttle rate nobody set is not
        listed at all by Kafka 4.x (it is no KafkaConfig key), so absence means unset."""

        entries = self._described(ConfigResourceType.BROKER, str(broker))
        return {k: e["value"] for k, e in entries.items() if e["config_source"] == "DYNAMIC_BROKER_CONFIG"}

    def cluster_default_configs(self, broker: int) -> dict[str, str]:
        """The cluster-wide dynamic defaults (resource ""), read as the synonyms one broker reports: neither
        client can address the "" resource itself."""

        entries = self._described(ConfigResourceType.BROKER, str(broker))
        return {
            synonym["name"]: synonym["value"]
            for entry in entries.values()
            for synonym in entry.get("synonyms") or ()
            if synonym["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
        }

    def topic_configs(self, topic: str) -> dict[str, str]:
        """The dynamic configs set on one topic."""

        entries = self._described(ConfigResourceType.TOPIC, topic)
        return {k: e["value"] for k, e in entries.items() if e["config_source"] == "DYNAMIC_TOPIC_CONFIG"}

    def throttle_configs(self, topics: Iterable[str], brokers: Iterable[int] | None = None) -> dict[str, str]:
        """Every throttle-related dynamic config of every broker, the cluster default and the topics, as one
        flat map ("broker 3: leader.replication.throttled.rate" -> "1000000"): compare two for equality."""
        ids = sorted(self.brokers() if brokers is None else brokers)
        flat: dict[str, str] = {}
        for key, value in self.cluster_default_configs(ids[0]).items():
            if key in BROKER_THROTTLE_KEYS:
                flat[f"cluster default: {key}"] = value
        for broker in ids:
            for key, value in self.broker_configs(broker).items():
                if key in BROKER_THROTTLE_KEYS:
                    flat[f"broker {broker}: {key}"] = value
        for topic in sorted(topics):
            for key, value in self.topic_configs(topic).items():
                if key in TOPIC_THROTTLE_KEYS:
                    flat[f"topic {topic}: {key}"] = value
        return flat

    def set_broker_config(self, broker: int, key: str, value: str | None) -> None:
        """An operator's own change (IncrementalAlterConfigs SET, or DELETE for None)."""
        self._alter("broker", str(broker), key, value)

    def set_topic_config(self, topic: str, key: str, value: str | None) -> None:
        self._alter("topic", topic, key, value)

    def _alter(self, kind: str, name: str, key: str, value: str | None) -> None:

        resource_type = ConfigResourceType.BROKER if kind == "broker" else ConfigResourceType.TOPIC
        change = ("SET", value) if value is not None else ("DELETE", None)
        with self._lock:
            answer = self.kafka_python().alter_configs(
                [ConfigResource(resource_type, name, {key: change})], raise_on_unknown=False, incremental=True
            )
        result = answer[kind][name]
        if result != "OK":
            raise RuntimeError(f"setting {key} on {kind} {name!r}: {result}")


def _items(answer: Any) -> list[tuple[Any, Any]]:
    if isinstance(answer, Mapping):
        return list(answer.items())
    return list(answer)


class Sampler:
    """Calls `sample_once()` every `interval` seconds on a thread of its own, between `__enter__` and
    `__exit__` (the test's reads, not the daemon's); what a sample raises goes to `errors`: a gap in the
    samples, not a failure."""

    interval: float
    errors: list[str]
    thread_name = "sampler"

    def sample_once(self) -> None:
        raise NotImplementedError

    def _run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.sample_once()
            except Exception as exc:
                self.errors.append(repr(exc))
            stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def __enter__(self) -> Self:
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(self._stop,), name=self.thread_name, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


@dataclass
class ReassignmentSampler(Sampler):
    """ListPartitionReassignments every `interval` seconds in a thread, by the test, not the daemon: the most
    replica movements seen at once per broker, as reassignd's limits count them (docs/engine.md): incoming,
    the replicas being added to a broker; outgoing, the adding replicas a broker serves as the leader
    (followers copy from the leader), the leader read from Metadata right after the listing."""

    probe: ClusterProbe
    interval: float = 1.0
    samples: int = 0
    peak_incoming: Counter[int] = field(default_factory=Counter)
    peak_outgoing: Counter[int] = field(default_factory=Counter)
    peak_partitions: int = 0
    peak_replicas: int = 0
    errors: list[str] = field(default_factory=list)
    thread_name = "reassignment-sampler"

    def sample_once(self) -> None:
        moving = self.probe.reassignments()
        leaders = {
            (topic, p): leader
            for topic in {t for t, _ in moving}
            for p, leader in self.probe.leaders(topic).items()
        }
        incoming: Counter[int] = Counter(b for m in moving.values() for b in m.adding)
        outgoing: Counter[int] = Counter()
        for key, m in moving.items():
            outgoing[leaders.get(key, -1)] += len(m.adding)
        for broker, count in incoming.items():
            self.peak_incoming[broker] = max(self.peak_incoming[broker], count)
        for broker, count in outgoing.items():
            self.peak_outgoing[broker] = max(self.peak_outgoing[broker], count)
        self.peak_partitions = max(self.peak_partitions, len(moving))
        self.peak_replicas = max(self.peak_replicas, sum(incoming.values()))
        self.samples += 1


@dataclass
class CopySampler(Sampler):
    """The size of one replica on its receiving broker, read by the test (DescribeLogDirs) every `interval`
    seconds in a thread: how fast a copy really runs, as the broker that writes it reports it. `samples` are
    (seconds since start, size or None while the broker does not host the replica)."""

    probe: ClusterProbe
    topic: str
    partition: int
    broker: int
    interval: float = 0.2
    samples: list[tuple[float, int | None]] = field(default_factory=list)
    spans: list[tuple[float, float]] = field(default_factory=list)  # per sample: (asked, answered)
    errors: list[str] = field(default_factory=list)
    _started: float = 0.0
    thread_name = "copy-sampler"

    def now(self) -> float:
        """Seconds on the samples' clock."""
        return time.monotonic() - self._started

    def sample_once(self) -> None:
        asked = time.monotonic()
        size = self.probe.replica_size(self.topic, self.partition, self.broker)
        answered = time.monotonic()
        # the broker read the size between asking and answering: on a loaded box a round trip takes a
        # second or more, and either end alone would shift the copy's timing by it
        self.spans.append((asked - self._started, answered - self._started))
        self.samples.append(((asked + answered) / 2 - self._started, size))

    def rate_bounds(self, index: int) -> tuple[float, float]:
        """The slowest and fastest average rate from the replica's creation to sample `index` that the
        round trips allow: it was created after the last read that did not find it was asked and before
        the first that found it answered; sample `index` was read between its ask and its answer."""
        first = next(i for i, (_, size) in enumerate(self.samples) if size is not None)
        earliest = self.spans[first - 1][0] if first > 0 else 0.0
        latest = self.spans[first][1]
        size = self.samples[index][1] or 0
        asked, answered = self.spans[index]
        return size / max(answered - earliest, 1e-3), size / max(asked - latest, 1e-3)

    def copy(self, final_size: int) -> Copy:
        """The copy the samples saw: from the first sample that shows the replica on the broker (its log is
        created empty when the reassignment starts) to the first that shows it at `final_size`."""
        created = next((t for t, size in self.samples if size is not None), None)
        done = next((t for t, size in self.samples if size is not None and size >= final_size), None)
        if created is None or done is None:
            raise AssertionError(f"no whole copy of {final_size} bytes sampled: {self.samples}")
        return Copy(created, done, final_size, tuple(self.samples))

    def __enter__(self) -> Self:
        self._started = time.monotonic()
        return super().__enter__()


@dataclass(frozen=True)
class Copy:
    """One sampled copy: `started` when the replica appeared, `ended` when it reached `size` bytes."""

    started: float
    ended: float
    size: int
    samples: tuple[tuple[float, int | None], ...]

    @property
    def seconds(self) -> float:
        return self.ended - self.started

    @property
    def rate(self) -> float:
        """Bytes per second over the whole copy (at most one sampling interval off at either end)."""
        return self.size / max(self.seconds, 1e-3)

    def size_at(self, t: float) -> int:
        """The replica's size at the last sample taken at or before `t` (0 before it appeared)."""
        return max((size or 0 for when, size in self.samples if when <= t), default=0)

    def rate_between(self, start: float, end: float) -> float:
        return (self.size_at(end) - self.size_at(start)) / max(end - start, 1e-3)


@dataclass
class ThrottleSampler(Sampler):
    """Every throttle config (ClusterProbe.throttle_configs) read by the test every `interval` seconds in a
    thread: `seen[key]` holds each value a key took while it ran, in order, so a rate that was in force
    only for a moment is still seen."""

    probe: ClusterProbe
    topics: tuple[str, ...]
    brokers: tuple[int, ...]
    interval: float = 0.1
    seen: dict[str, list[str]] = field(default_factory=dict)
    samples: int = 0
    errors: list[str] = field(default_factory=list)
    thread_name = "throttle-sampler"

    def sample_once(self) -> None:
        configs = self.probe.throttle_configs(self.topics, self.brokers)
        for key, value in configs.items():
            values = self.seen.setdefault(key, [])
            if not values or values[-1] != value:
                values.append(value)
        self.samples += 1
