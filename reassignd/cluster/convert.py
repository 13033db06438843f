"""Pure conversions from what the clients return to the adapter's immutable values.

Kept apart from the I/O so the snapshot assembly (offline brokers, sizes, config levels) is testable with
plain values and stays readable.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

from reassignd.cluster.api import ConfigDescription, ConfigSource, ConfigValue, Reassignment, ReplicaLogDir
from reassignd.model import (
    NO_LEADER,
    NO_SIZES,
    Broker,
    ClusterSnapshot,
    PartitionState,
    TopicInfo,
    TopicPartition,
)


class RawPartition(NamedTuple):
    """A tuple: a metadata read makes 100,000 of these a cycle on a big cluster."""

    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RawTopic:
    name: str
    topic_id: str | None
    partitions: tuple[RawPartition, ...]


@dataclass(frozen=True, slots=True)
class ClusterView:
    """DescribeCluster: the live brokers (with racks), the controller, the cluster id."""

    cluster_id: str | None
    controller_id: int | None
    racks: Mapping[int, str | None]


def raw_topic(name: str, topic: Any) -> RawTopic:
    """librdkafka TopicMetadata (list_topics) -> RawTopic; a partition without a leader has leader -1.
    librdkafka's fields are ints and lists of ints already: one C-level tuple() each, no per-broker int()."""
    partitions = topic.partitions
    return RawTopic(
        name=name,
        topic_id=None,
        partitions=tuple(
            RawPartition(p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
            for p in (partitions[i] for i in sorted(partitions))
        ),
    )


def config_source(raw: Any) -> ConfigSource:
    code = int(getattr(raw, "value", raw))
    try:
        return ConfigSource(code)
    except ValueError:
        return ConfigSource.UNKNOWN


def config_value(entry: Any) -> ConfigValue:
    """A confluent_kafka ConfigEntry (with its synonyms, which librdkafka keys by name)."""
    synonyms = tuple(
        (config_source(s.source), s.value)
        for s in (entry.synonyms or {}).values()
        if config_source(s.source) != config_source(entry.source) or s.value != entry.value
    )
    return ConfigValue(
        name=str(entry.name),
        value=None if entry.value is None else str(entry.value),
        source=config_source(entry.source),
        read_only=bool(entry.is_read_only),
        sensitive=bool(entry.is_sensitive),
        synonyms=synonyms,
    )


def config_from_wire(entry: Any) -> ConfigValue:
    """A DescribeConfigs (v1+) result entry as kafka-python decodes it, with its synonyms in Kafka's order
    (highest precedence first, all under the entry's own name); the entry itself is not its own synonym."""
    source = config_source(entry.config_source)
    return ConfigValue(
        name=str(entry.name),
        value=None if entry.value is None else str(entry.value),
        source=source,
        read_only=bool(entry.read_only),
        sensitive=bool(entry.is_sensitive),
        synonyms=tuple(
            (config_source(s.source), s.value)
            for s in entry.synonyms or ()
            if config_source(s.source) != source or s.value != entry.value
        ),
    )


def config_description(entries: Mapping[str, Any], keys: Collection[str] | None) -> ConfigDescription:
    wanted = None if keys is None else frozenset(keys)
    return ConfigDescription(
        values={name: config_value(e) for name, e in entries.items() if wanted is None or name in wanted}
    )


def log_dir_listing(
    broker: int, results: Iterable[Any], wanted: Collection[TopicPartition] | None = None
) -> tuple[dict[tuple[TopicPartition, int], ReplicaLogDir], dict[tuple[TopicPartition, int], str], list[str]]:
    """One broker's DescribeLogDirs results as kafka-python decodes them -> (its current logs, the dir of
    each future log, its log dirs). Read field by field: kafka-python's to_dict() of a first full read
    (300,000 replicas on 100 brokers) took longer than the rest of it.

    A replica being moved between log dirs of one broker appears twice (the future log with is_future);
    the current one wins, since that is what serves fetches.
    """
    # the caller's own keys, found by topic and index: no key built per replica, and the sizes come back
    # keyed by the objects the caller looks them up with (no field-by-field equality on each lookup)
    keep = None if wanted is None else partition_index(wanted)
    out: dict[tuple[TopicPartition, int], ReplicaLogDir] = {}
    futures: dict[tuple[TopicPartition, int], str] = {}
    dirs: list[str] = []
    for log_dir in results:
        if log_dir.error_code:
            continue
        path = str(log_dir.log_dir)
        dirs.append(path)
        for topic in log_dir.topics or ():
            name = str(topic.name)
            kept = None if keep is None else keep.get(name)
            if keep is not None and kept is None:
                continue
            for part in topic.partitions or ():
                index = part.partition_index
                tp = TopicPartition(name, index) if kept is None else kept.get(index)
                if tp is None:
                    continue
                replica = ReplicaLogDir(
                    size=part.partition_size,
                    offset_lag=part.offset_lag,
                    log_dir=path,
                    is_future=bool(part.is_future_key),
                )
                key = (tp, broker)
                if replica.is_future:
                    futures[key] = path
                if key not in out or out[key].is_future:
                    out[key] = replica
    return out, futures, dirs


KAFKA_STORAGE_ERROR = 56
"""DescribeLogDirs' error code for an offline log dir (Errors.KAFKA_STORAGE_ERROR)."""


def offline_log_dirs(broker: int, results: Iterable[Any]) -> set[tuple[int, str]]:
    """One broker's DescribeLogDirs results -> its dirs answered KAFKA_STORAGE_ERROR (56): failed dirs,
    which list no partition (ReplicaManager.describeLogDirs)."""
    return {(broker, str(d.log_dir)) for d in results if d.error_code == KAFKA_STORAGE_ERROR}


def log_dir_volumes(broker: int, results: Iterable[Any]) -> dict[tuple[int, str], tuple[int, int]]:
    """One broker's DescribeLogDirs results -> (broker, dir) -> (total bytes, usable bytes) of each dir's
    volume (KIP-827, v4 on: Kafka 3.3); a dir in error, or that says -1 (not known), is left out."""
    out: dict[tuple[int, str], tuple[int, int]] = {}
    for log_dir in results:
        total, usable = getattr(log_dir, "total_bytes", -1), getattr(log_dir, "usable_bytes", -1)
        if not log_dir.error_code and total > 0 and usable >= 0:
            out[(broker, str(log_dir.log_dir))] = (int(total), int(usable))
    return out


def reassignment(entry: Mapping[str, Any]) -> Reassignment:
    return Reassignment(
        replicas=tuple(int(b) for b in entry.get("replicas", ())),
        adding=tuple(int(b) for b in entry.get("adding_replicas", ())),
        removing=tuple(int(b) for b in entry.get("removing_replicas", ())),
    )


def present_partitions(
    topics: Mapping[str, RawTopic], keys: Mapping[str, Mapping[int, TopicPartition]] | None
) -> Iterator[tuple[TopicPartition, RawPartition]]:
    """The partitions read that were asked for (all when `keys` is None: new keys), with their metadata;
    asked ones come back under the caller's own key objects (`keys`: partition_index)."""
    for topic in topics.values():
        kept = None if keys is None else keys.get(topic.name, {})
        for raw in topic.partitions:
            tp = TopicPartition(topic.name, raw.partition) if kept is None else kept.get(raw.partition)
            if tp is not None:
                yield tp, raw


def partition_index(partitions: Iterable[TopicPartition]) -> dict[str, dict[int, TopicPartition]]:
    """The caller's own partition keys by topic and index: a read of a few partitions of big topics skips
    the rest without building (and hashing) a key for each, and the snapshot shares the caller's keys."""
    index: dict[str, dict[int, TopicPartition]] = {}
    for tp in partitions:
        index.setdefault(tp.topic, {})[tp.partition] = tp
    return index


def build_snapshot(
    cluster: ClusterView,
    topics: Mapping[str, RawTopic],
    *,
    wanted: Collection[TopicPartition] | None,
    reassignments: Mapping[TopicPartition, Reassignment],
    sizes: Mapping[tuple[TopicPartition, int], ReplicaLogDir],
    future_dirs: Mapping[tuple[TopicPartition, int], str] | None = None,
    broker_dirs: Mapping[int, tuple[str, ...]] | None = None,
    dir_volumes: Mapping[tuple[int, str], tuple[int, int]] | None = None,
    offline_dirs: Collection[tuple[int, str]] = (),
    broker_configs: Mapping[int, ConfigDescription],
    topic_configs: Mapping[str, ConfigDescription],
    deleted_topics: frozenset[str] = frozenset(),
    unread_configs: frozenset[tuple[str, str]] = frozenset(),
    previous: Mapping[TopicPartition, PartitionState] | None = None,
    index: Mapping[str, Mapping[int, TopicPartition]] | None = None,
) -> ClusterSnapshot:
    """Assemble one snapshot. Brokers that host replicas but are missing from the cluster's broker list
    are offline: they appear with online=False and no rack, so placement and limits still see them.

    `previous`: states of an earlier snapshot. A partition that is not moving, has no sizes read and reads
    as before gets its earlier state object back: on a big plan nearly every partition is one, and the
    engine tells unchanged partitions by identity instead of comparing each field of 100,000 states.
    `index`: `wanted` by topic and index (partition_index), when the caller has it already."""
    earlier = previous or {}
    keep = None if wanted is None else (index if index is not None else partition_index(wanted))
    sized = {tp for tp, _ in sizes}  # between full reads, the few partitions in flight
    states: list[PartitionState] = []
    referenced: set[int] = set()
    for tp, raw in present_partitions(topics, keep):
        moving = reassignments.get(tp)
        # The controller's listing of a move is newer than a broker's Metadata (read first, and a broker
        # replays the controller's records a moment later): its replica list is the partition's.
        replicas = moving.replicas if moving is not None and moving.replicas else raw.replicas
        replica_sizes: Mapping[int, int] = NO_SIZES
        if tp in sized:  # built once, as the proxy the state keeps (it copies any other mapping)
            replica_sizes = MappingProxyType({b: sizes[(tp, b)].size for b in replicas if (tp, b) in sizes})
        referenced.update(replicas)
        before = earlier.get(tp)
        if (
            before is not None
            and moving is None
            and not replica_sizes
            and before.replicas == raw.replicas
            and before.isr == raw.isr
            and before.leader == raw.leader
            and not before.adding
            and not before.removing
            and not before.replica_sizes
        ):
            states.append(before)
            continue
        states.append(
            PartitionState(
                tp=tp,
                replicas=replicas,
                isr=tuple(b for b in raw.isr if b in replicas),
                leader=raw.leader if raw.leader in replicas else NO_LEADER,
                adding=tuple(b for b in moving.adding if b in replicas) if moving else (),
                removing=tuple(b for b in moving.removing if b in replicas) if moving else (),
                size_bytes=_partition_size(raw, replica_sizes),
                replica_sizes=replica_sizes,
            )
        )
    brokers = [Broker(b, rack or None, True) for b, rack in cluster.racks.items()]
    brokers += [Broker(b, None, False) for b in sorted(referenced - set(cluster.racks))]
    infos = [
        TopicInfo(
            name=name,
            topic_id=topics[name].topic_id,
            configs=topic_configs[name].dynamic(ConfigSource.DYNAMIC_TOPIC) if name in topic_configs else {},
        )
        for name in topics
    ]
    cluster_defaults: dict[str, str] = {}
    for description in broker_configs.values():
        for key, value in description.dynamic(ConfigSource.DYNAMIC_DEFAULT_BROKER).items():
            cluster_defaults.setdefault(key, value)
    return ClusterSnapshot.build(
        brokers,
        states,
        infos,
        broker_configs={
            b: d.dynamic(ConfigSource.DYNAMIC_BROKER) for b, d in broker_configs.items() if d.error is None
        },
        cluster_configs=cluster_defaults,
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        deleted_topics=deleted_topics,
        unread_configs=unread_configs,
        replica_dirs=MappingProxyType({key: r.log_dir for key, r in sizes.items() if not r.is_future}),
        future_dirs=future_dirs or {},
        broker_dirs=broker_dirs or {},
        dir_volumes=dir_volumes or {},
        offline_dirs=frozenset(offline_dirs),
    )


def _partition_size(raw: RawPartition, replica_sizes: Mapping[int, int]) -> int:
    """The leader's log size; without a leader (or its size), the largest replica's."""
    if raw.leader in replica_sizes:
        return replica_sizes[raw.leader]
    return max(replica_sizes.values(), default=0)
