"""The cluster admin interface the daemon talks to, and the immutable values it returns.

Everything a caller gets back is frozen and library-neutral: no confluent-kafka or kafka-python type
escapes this package, so the daemon and its tests never depend on which client answered. Per-item
failures (one broker offline, one topic deleted) come back as data beside the items that succeeded;
a whole call that fails raises ClusterCallError.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Protocol, runtime_checkable

from reassignd import config_keys
from reassignd.cluster.errors import KafkaErrorInfo
from reassignd.model import ClusterSnapshot, InvalidInputError, Problem, TopicPartition

# KIP-73 / KIP-542 throttle configs, and what snapshot decisions need besides.
BROKER_THROTTLE_KEYS: Final = (
    config_keys.LEADER_REPLICATION_THROTTLED_RATE,
    config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE,
    config_keys.REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND,
)
TOPIC_THROTTLE_KEYS: Final = (
    config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS,
    config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS,
)


class ConfigSource(enum.IntEnum):
    """Kafka's wire codes for a config's source (DescribeConfigsResponse.ConfigSource, clients/.../requests/
    DescribeConfigsResponse.java; librdkafka's rd_kafka_ConfigSource_t uses the same numbers)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC = 1
    DYNAMIC_BROKER = 2
    DYNAMIC_DEFAULT_BROKER = 3
    STATIC_BROKER = 4
    DEFAULT = 5
    DYNAMIC_BROKER_LOGGER = 6
    DYNAMIC_CLIENT_METRICS = 7
    DYNAMIC_GROUP = 8

    @property
    def is_dynamic(self) -> bool:
        """Set through the admin API (by an operator or a tool), as opposed to a file or Kafka's default."""
        return self in (
            ConfigSource.DYNAMIC_TOPIC,
            ConfigSource.DYNAMIC_BROKER,
            ConfigSource.DYNAMIC_DEFAULT_BROKER,
        )


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """One config as a resource currently sees it; `value` is None when sensitive or unset."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool = False
    sensitive: bool = False
    # The same key at lower-precedence levels, highest first (what a DELETE would fall back to).
    synonyms: tuple[tuple[ConfigSource, str | None], ...] = ()

    def value_from(self, source: ConfigSource) -> str | None:
        """The value this key has at exactly one level, whether or not that level is the effective one."""
        if self.source == source:
            return self.value
        return next((v for s, v in self.synonyms if s == source), None)


@dataclass(frozen=True, slots=True)
class ConfigDescription:
    """One resource's configs, or why they could not be read (broker offline, topic unknown)."""

    values: Mapping[str, ConfigValue] = field(default_factory=lambda: MappingProxyType({}))
    error: KafkaErrorInfo | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.values, MappingProxyType):
            object.__setattr__(self, "values", MappingProxyType(dict(self.values)))

    def dynamic(self, source: ConfigSource) -> dict[str, str]:
        """The values set at exactly this dynamic level (e.g. DYNAMIC_BROKER for per-broker overrides)."""
        out: dict[str, str] = {}
        for name, config in self.values.items():
            value = config.value_from(source)
            if value is not None:
                out[name] = value
        return out


class ConfigOpType(enum.IntEnum):
    """IncrementalAlterConfigs operations (KIP-339)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class ConfigOp:
    """One incremental change; APPEND/SUBTRACT apply to list configs such as throttled-replica lists."""

    key: str
    op: ConfigOpType
    value: str | None = None

    def __post_init__(self) -> None:
        if not self.key:
            raise InvalidInputError("config operation", [Problem("config op", "key", "must not be empty")])
        if self.op is ConfigOpType.DELETE:
            if self.value is not None:
                raise InvalidInputError(
                    "config operation",
                    [
                        Problem(
                            f"config op {self.key}", "value", f"must be absent for DELETE, got {self.value!r}"
                        )
                    ],
                )
        elif self.value is None:
            raise InvalidInputError(
                "config operation",
                [Problem(f"config op {self.key}", "value", f"is required for {self.op.name}")],
            )

    @classmethod
    def set(cls, key: str, value: str) -> ConfigOp:
        return cls(key, ConfigOpType.SET, value)

    @classmethod
    def delete(cls, key: str) -> ConfigOp:
        return cls(key, ConfigOpType.DELETE)

    @classmethod
    def append(cls, key: str, value: str) -> ConfigOp:
        return cls(key, ConfigOpType.APPEND, value)

    @classmethod
    def subtract(cls, key: str, value: str) -> ConfigOp:
        return cls(key, ConfigOpType.SUBTRACT, value)


def merge_ops(resource: str, ops: Iterable[ConfigOp]) -> list[ConfigOp]:
    """One op per key, as Kafka requires within one resource: several APPENDs (or SUBTRACTs) of one list key
    become one with the items comma-separated, which Kafka applies identically. Any other repeat (two SETs,
    APPEND with SUBTRACT) is ambiguous and refused."""
    by_key: dict[str, list[ConfigOp]] = {}
    for op in ops:
        by_key.setdefault(op.key, []).append(op)
    merged: list[ConfigOp] = []
    problems: list[Problem] = []
    for key, same in by_key.items():
        kinds = {op.op for op in same}
        if len(same) == 1:
            merged.append(same[0])
        elif len(kinds) == 1 and kinds <= {ConfigOpType.APPEND, ConfigOpType.SUBTRACT}:
            items = [item for op in same for item in (op.value or "").split(",") if item]
            merged.append(ConfigOp(key, same[0].op, ",".join(dict.fromkeys(items))))
        else:
            shown = ", ".join(
                f"{op.op.name} {op.value!r}" if op.value is not None else op.op.name for op in same
            )
            problems.append(Problem(resource, key, f"conflicting operations in one call: {shown}"))
    if problems:
        raise InvalidInputError("config operations", problems)
    return merged


@dataclass(frozen=True, slots=True)
class Reassignment:
    """An ongoing reassignment as ListPartitionReassignments reports it (KIP-455)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ReplicaLogDir:
    """One replica's log on one broker (DescribeLogDirs): its size and Kafka's offset lag.

    The offset lag is not how far a follower is behind its leader: for a current log it is its high watermark
    minus its log end, which Kafka keeps at 0; for a future log (a move between log dirs, `is_future`) it is
    how far it is behind the current one. A follower's byte lag is the leader's size minus its size.
    """

    size: int
    offset_lag: int
    log_dir: str
    is_future: bool = False


@dataclass(frozen=True, slots=True)
class LogDirsResult:
    replicas: Mapping[tuple[TopicPartition, int], ReplicaLogDir]
    errors: Mapping[int, KafkaErrorInfo] = field(default_factory=lambda: MappingProxyType({}))
    futures: Mapping[tuple[TopicPartition, int], str] = field(default_factory=lambda: MappingProxyType({}))
    """The dir each future log (a move between log dirs in flight) is being copied to."""
    dirs: Mapping[int, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    """Each answering broker's log dirs."""
    volumes: Mapping[tuple[int, str], tuple[int, int]] = field(default_factory=lambda: MappingProxyType({}))
    """(broker, dir) -> (total, usable) bytes of the dir's volume, where the broker said (KIP-827)."""
    offline: frozenset[tuple[int, str]] = frozenset()
    """(broker, dir) answered KAFKA_STORAGE_ERROR: a failed log dir (convert.offline_log_dirs)."""


@dataclass(frozen=True, slots=True)
class ItemError:
    """Part of a read failed: `item` names what was skipped (e.g. `broker 3`, `topic orders`)."""

    api: str
    item: str
    error: KafkaErrorInfo

    def __str__(self) -> str:
        return f"{self.api} {self.item}: {self.error}"


@dataclass(frozen=True, slots=True)
class SnapshotResult:
    """A snapshot and the parts of it that could not be read; the snapshot is still usable."""

    snapshot: ClusterSnapshot
    errors: tuple[ItemError, ...] = ()


SizesWanted = bool | Collection[TopicPartition] | Mapping[TopicPartition, Collection[int]]


class SnapshotFromResult:
    """`snapshot` is `snapshot_with_errors` without the errors: one definition for every adapter."""

    async def snapshot_with_errors(
        self,
        partitions: Collection[TopicPartition] | None = None,
        *,
        with_sizes: SizesWanted = False,
        broker_config_keys: Collection[str] = (),
        topic_config_keys: Collection[str] = (),
    ) -> SnapshotResult:
        raise NotImplementedError

    async def snapshot(
        self,
        partitions: Collection[TopicPartition] | None = None,
        *,
        with_sizes: SizesWanted = False,
        broker_config_keys: Collection[str] = (),
        topic_config_keys: Collection[str] = (),
    ) -> ClusterSnapshot:
        result = await self.snapshot_with_errors(
            partitions,
            with_sizes=with_sizes,
            broker_config_keys=broker_config_keys,
            topic_config_keys=topic_config_keys,
        )
        return result.snapshot


@runtime_checkable
class ClusterObserver(Protocol):
    """Metrics hook: the daemon's metrics module implements it; the adapter never imports that module."""

    def call_failed(self, api: str, error: KafkaErrorInfo) -> None: ...

    def call_succeeded(self, api: str, wall_time: float) -> None: ...


class ClusterAdmin(Protocol):
    """What the daemon needs from a Kafka cluster. Implementations: KafkaClusterAdmin (real clients).

    `with_sizes` of a snapshot: False (none), True (every replica of every partition read), a collection of
    partitions (every replica of those), or a mapping from partition to brokers (those replicas and the
    leader's only: a moving partition's progress needs its leader and its adding replicas, not the rest).
    """

    async def snapshot(
        self,
        partitions: Collection[TopicPartition] | None = None,
        *,
        with_sizes: bool | Collection[TopicPartition] | Mapping[TopicPartition, Collection[int]] = False,
        broker_config_keys: Collection[str] = (),
        topic_config_keys: Collection[str] = (),
    ) -> ClusterSnapshot: ...

    async def snapshot_with_errors(
        self,
        partitions: Collection[TopicPartition] | None = None,
        *,
        with_sizes: bool | Collection[TopicPartition] | Mapping[TopicPartition, Collection[int]] = False,
        broker_config_keys: Collection[str] = (),
        topic_config_keys: Collection[str] = (),
    ) -> SnapshotResult: ...

    async def cluster_id(self) -> str | None: ...

    async def learn_cluster_size(self) -> None:
        """Reads every topic's metadata once, so that the first read of a plan already knows whether to
        ask for its topics by name or for all topics (cluster/kafka.py, metadata_for_all_topics). A
        daemon calls it at start."""

    async def topic_partitions(
        self, topics: Collection[str]
    ) -> tuple[list[TopicPartition], list[ItemError]]: ...

    async def describe_broker_configs(
        self,
        broker_ids: Collection[int],
        keys: Collection[str] | None = None,
        *,
        live: Collection[int] | None = None,
    ) -> dict[int, ConfigDescription]: ...

    async def describe_topic_configs(
        self, topics: Collection[str], keys: Collection[str] | None = None
    ) -> dict[str, ConfigDescription]: ...

    async def alter_broker_configs(self, broker_id: int, ops: Collection[ConfigOp]) -> None: ...

    async def alter_topic_configs(self, topic: str, ops: Collection[ConfigOp]) -> None: ...

    async def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Collection[int] | None]
    ) -> dict[TopicPartition, KafkaErrorInfo | None]: ...

    async def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, Reassignment]: ...

    async def elect_preferred_leaders(
        self, partitions: Collection[TopicPartition]
    ) -> dict[TopicPartition, KafkaErrorInfo | None]: ...

    async def describe_log_dirs(
        self, broker_ids: Collection[int], partitions: Collection[TopicPartition]
    ) -> LogDirsResult: ...

    async def alter_replica_log_dirs(
        self, moves: Mapping[tuple[TopicPartition, int], str]
    ) -> dict[tuple[TopicPartition, int], KafkaErrorInfo | None]:
        """AlterReplicaLogDirs: each (partition, broker) replica to the dir named; answered per replica."""
        ...

    async def create_topic(
        self,
        name: str,
        *,
        assignment: Mapping[int, Collection[int]] | None = None,
        num_partitions: int | None = None,
        replication_factor: int | None = None,
        configs: Mapping[str, str] | None = None,
    ) -> None: ...

    async def close(self, *, wait: bool = True) -> None:
        """Release the clients; `wait=False`: calls still in flight are left, not waited for."""
        ...
