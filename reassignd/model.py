"""Immutable domain types shared by every layer, and their JSON forms.

Everything here is pure: snapshots are parsed at the edge (adapters, files) into frozen values that the
engine and the placers can hash, compare and share between decisions without copying. Parsing collects
every problem before failing, so an operator fixes a bad file in one round instead of one error at a time.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final, NamedTuple, TypeVar

from reassignd import config_keys
from reassignd.problems import InvalidInputError as InvalidInputError  # noqa: PLC0414 (handed on)
from reassignd.problems import Problem as Problem  # noqa: PLC0414 (handed on)

PLAN_VERSION: Final = 1
SNAPSHOT_VERSION: Final = 1
NO_LEADER: Final = -1
INT32_MAX: Final = 2**31 - 1
"""Kafka's INT32: partition ids and broker ids."""
INT64_MAX: Final = 2**63 - 1
"""Kafka's INT64 (LONG): byte counts and rates."""
MAX_REPLICATION_FACTOR: Final = 2**15 - 1
"""Kafka's replication factor is an INT16."""
MAX_TOPIC_NAME_LENGTH: Final = 249
"""Kafka's Topic.MAX_NAME_LENGTH (clients/.../common/internals/Topic.java)."""
MAX_DOCUMENT_BYTES: Final = 1 << 30
"""The largest plan or snapshot file read (a million partitions with sizes is about 300 MB)."""
PLAN_FIELDS: Final = frozenset({"version", "partitions"})
SNAPSHOT_FIELDS: Final = frozenset(
    {
        "version",
        "cluster_id",
        "controller_id",
        "brokers",
        "topics",
        "partitions",
        "broker_configs",
        "cluster_configs",
        "read_at",
    }
)
SNAPSHOT_BROKER_FIELDS: Final = frozenset({"id", "rack", "online", "log_dirs"})
SNAPSHOT_TOPIC_FIELDS: Final = frozenset({"name", "topic_id", "configs"})
SNAPSHOT_PARTITION_FIELDS: Final = frozenset(
    {
        "topic",
        "partition",
        "replicas",
        "isr",
        "leader",
        "size_bytes",
        "adding",
        "removing",
        "replica_sizes",
        "produce_bytes_per_sec",
    }
)
PLAN_ENTRY_FIELDS: Final = frozenset({"topic", "partition", "replicas", "log_dirs"})

_EMPTY: Mapping[str, str] = MappingProxyType({})
NO_SIZES: Final[Mapping[int, int]] = MappingProxyType({})
"""A partition's replica sizes when none was read (shared: 100,000 partitions hold it)."""


def _frozen(mapping: Mapping[Any, Any] | None) -> Mapping[Any, Any]:
    return MappingProxyType(dict(mapping or {}))


K = TypeVar("K")
V = TypeVar("V")


def copy_of(mapping: Mapping[K, V]) -> dict[K, V]:
    """A fresh dict of `mapping`: through `copy()` when it is a dict or a proxy of one, a C-level copy that
    rehashes nothing (dict(proxy) calls each key's __hash__: 30 ms for 100,000 partitions, against 1.4)."""
    if isinstance(mapping, (dict, MappingProxyType)):
        copied: Any = mapping.copy()
        if type(copied) is dict:
            return copied
    return dict(mapping)


# ---------------------------------------------------------------------------------------------------------
# Errors


class _Problems:
    def __init__(self) -> None:
        self.items: list[Problem] = []

    def add(self, where: str, fld: str, message: str) -> None:
        self.items.append(Problem(where, fld, message))

    def raise_if_any(self, what: str) -> None:
        if self.items:
            raise InvalidInputError(what, self.items)


# ---------------------------------------------------------------------------------------------------------
# Core values


_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]+")


def topic_name_problem(name: str) -> str | None:
    """Why Kafka would refuse `name` as a topic (Topic.validate), or None."""
    if not name:
        return "must not be empty"
    if name in (".", ".."):
        return "cannot be '.' or '..'"
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"is {len(name)} characters; Kafka allows at most {MAX_TOPIC_NAME_LENGTH}"
    if not _TOPIC_NAME.fullmatch(name):
        return (
            f"{shown(name)} has characters Kafka does not allow (only ASCII letters, digits, '.', '_', '-')"
        )
    return None


def shown(value: object, limit: int = 60) -> str:
    """`repr(value)` cut to `limit` characters: error messages never echo a megabyte of hostile input."""
    try:
        return clipped(repr(value), limit)
    except ValueError:  # an int too long for str() (sys.get_int_max_str_digits)
        digits = int(value.bit_length() * 0.30103) if isinstance(value, int) else 0
        return f"<an integer of about {digits} digits>"


def clipped(text: str, limit: int = 60) -> str:
    """`text` cut to `limit` characters (for a key name used as a Problem's field)."""
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def parse_rack_path(rack: str | None) -> tuple[str, ...]:
    """`/dc1/rack2/host3` -> ("dc1", "rack2", "host3"); a plain `rack-a` is a one-level path (KIP-879)."""
    if not rack:
        return ()
    return tuple(part for part in rack.split("/") if part)


@dataclass(frozen=True, slots=True)
class Broker:
    id: int
    rack: str | None = None
    online: bool = True

    @property
    def rack_levels(self) -> tuple[str, ...]:
        return parse_rack_path(self.rack)


class TopicPartition(NamedTuple):
    """A tuple: plans and snapshots key hundreds of thousands of dicts and sets by it, and a tuple's hash
    and equality run in C (a dataclass's ran in Python: a lookup by an equal key from another snapshot
    took 3.7 times as long)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class PartitionState:
    """A partition as the cluster reports it.

    `replicas` is Kafka's replica list: during a reassignment that is the target followed by the replicas
    being removed (KRaft PartitionReassignmentReplicas). `replica_sizes` holds the bytes each replica has on
    its broker (DescribeLogDirs); a missing entry means unknown.
    """

    tp: TopicPartition
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int = NO_LEADER
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    size_bytes: int = 0
    replica_sizes: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))
    produce_bytes_per_sec: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.replica_sizes, MappingProxyType):
            object.__setattr__(self, "replica_sizes", _frozen(self.replica_sizes))

    @property
    def is_reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    @property
    def has_sizes(self) -> bool:
        """Sizes were read for it (a replica's, or the partition's)."""
        return bool(self.replica_sizes or self.size_bytes)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """What the partition ends as: the replica list without the replicas being removed."""
        if not self.removing:
            return self.replicas
        removing = set(self.removing)
        return tuple(r for r in self.replicas if r not in removing)

    @property
    def original_replicas(self) -> tuple[int, ...]:
        """What a cancel reverts to: the replica list without the replicas being added (KIP-455)."""
        if not self.adding:
            return self.replicas
        adding = set(self.adding)
        return tuple(r for r in self.replicas if r not in adding)

    def size_on(self, broker: int) -> int | None:
        return self.replica_sizes.get(broker)

    def with_sizes(self, size_bytes: int, replica_sizes: Mapping[int, int]) -> PartitionState:
        """`replace(self, size_bytes=..., replica_sizes=...)` without its field-by-field introspection:
        the controller patches or strips sizes on every partition of a plan each cycle."""
        return PartitionState(
            self.tp,
            self.replicas,
            self.isr,
            self.leader,
            self.adding,
            self.removing,
            size_bytes,
            replica_sizes if replica_sizes else NO_SIZES,
            self.produce_bytes_per_sec,
        )


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: str | None = None
    configs: Mapping[str, str] = field(default_factory=lambda: _EMPTY)

    def __post_init__(self) -> None:
        if not isinstance(self.configs, MappingProxyType):
            object.__setattr__(self, "configs", _frozen(self.configs))


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """The whole cluster at one instant, as far as reassignment decisions need it."""

    brokers: Mapping[int, Broker]
    partitions: Mapping[TopicPartition, PartitionState]
    topics: Mapping[str, TopicInfo] = field(default_factory=lambda: MappingProxyType({}))
    broker_configs: Mapping[int, Mapping[str, str]] = field(default_factory=lambda: MappingProxyType({}))
    cluster_configs: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    cluster_id: str | None = None
    controller_id: int | None = None
    deleted_topics: frozenset[str] = frozenset()
    """Topics the cluster answered do not exist (UNKNOWN_TOPIC_OR_PARTITION to a request naming them):
    deleted while a plan ran, so its partitions there are dropped rather than waited for. A topic that
    merely could not be read is not here."""
    unread_configs: frozenset[tuple[str, str]] = frozenset()
    """Config resources (`("topic", name)`, `("broker", id)`) asked for but not read (offline broker,
    failed request): their configs here say nothing, not "unset" (see `configs_known`)."""
    replica_dirs: Mapping[tuple[TopicPartition, int], str] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """(partition, broker) -> the log dir its current log is in (DescribeLogDirs), for the replicas read."""
    future_dirs: Mapping[tuple[TopicPartition, int], str] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """(partition, broker) -> the log dir a future log is being copied to (AlterReplicaLogDirs in flight)."""
    broker_dirs: Mapping[int, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    dir_volumes: Mapping[tuple[int, str], tuple[int, int]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """(broker, log dir) -> (total bytes, usable bytes) of the dir's volume, where the broker said (KIP-827,
    DescribeLogDirs v4: Kafka 3.3 and later; read with sizes)."""
    offline_dirs: frozenset[tuple[int, str]] = frozenset()
    """(broker, log dir) answered with KAFKA_STORAGE_ERROR by DescribeLogDirs (read with sizes): a failed
    dir, whose replicas are offline; it lists none of them (ReplicaManager.describeLogDirs)."""
    read_at: float | None = None
    """When the cluster was read (Unix seconds), if its reader said: how old the sizes and rates are."""
    """The log dirs of each broker whose log dirs were read (DescribeLogDirs lists every one)."""

    def __post_init__(self) -> None:
        for name in ("deleted_topics", "unread_configs", "offline_dirs"):
            if not isinstance(getattr(self, name), frozenset):
                object.__setattr__(self, name, frozenset(getattr(self, name)))
        for name in (
            "brokers",
            "partitions",
            "topics",
            "cluster_configs",
            "replica_dirs",
            "future_dirs",
            "broker_dirs",
            "dir_volumes",
        ):
            value = getattr(self, name)
            if not isinstance(value, MappingProxyType):
                object.__setattr__(self, name, _frozen(value))
        if not isinstance(self.broker_configs, MappingProxyType) or any(
            not isinstance(v, MappingProxyType) for v in self.broker_configs.values()
        ):
            object.__setattr__(
                self, "broker_configs", _frozen({b: _frozen(c) for b, c in self.broker_configs.items()})
            )

    @classmethod
    def build(
        cls,
        brokers: Iterable[Broker],
        partitions: Iterable[PartitionState],
        topics: Iterable[TopicInfo] = (),
        **kwargs: Any,
    ) -> ClusterSnapshot:
        return cls(
            brokers={b.id: b for b in brokers},
            partitions={p.tp: p for p in partitions},
            topics={t.name: t for t in topics},
            **kwargs,
        )

    def online_broker_ids(self) -> frozenset[int]:
        return frozenset(b.id for b in self.brokers.values() if b.online)

    def replicas_per_broker(self) -> dict[int, int]:
        """The replicas each broker holds (a broker with none is left out): the load the placer evens."""
        return dict(Counter(b for p in self.partitions.values() for b in p.replicas))

    def is_online(self, broker_id: int) -> bool:
        """One broker's state without building the set of all (a per-partition question on 1,000 brokers)."""
        broker = self.brokers.get(broker_id)
        return broker is not None and broker.online

    def topic_config(self, topic: str, key: str) -> str | None:
        info = self.topics.get(topic)
        return info.configs.get(key) if info else None

    def min_insync_replicas(self, topic: str) -> int:
        """The topic's min.insync.replicas, falling back to the cluster default and then Kafka's (1)."""
        value = self.topic_config(topic, config_keys.MIN_INSYNC_REPLICAS) or self.cluster_configs.get(
            config_keys.MIN_INSYNC_REPLICAS
        )
        try:
            return max(1, int(value)) if value is not None else 1
        except ValueError:
            return 1

    def broker_config(self, broker: int, key: str) -> str | None:
        return self.broker_configs.get(broker, _EMPTY).get(key)

    def configs_known(self, kind: str, name: str) -> bool:
        """Whether this snapshot read the resource's configs: a broker's are read only while it is up."""
        if (kind, name) in self.unread_configs:
            return False
        if kind == "broker":
            return int(name) in self.broker_configs
        return name in self.topics

    def with_partitions(self, updated: Iterable[PartitionState]) -> ClusterSnapshot:
        # one C-level copy of the private dict (a mapping proxy's copy() copies the dict under it), wrapped
        # as is: `__post_init__` would copy it again, and plans run this on 100,000 partitions every cycle
        merged = copy_of(self.partitions)
        merged.update((p.tp, p) for p in updated)
        return replace(self, partitions=MappingProxyType(merged))

    def with_brokers(self, updated: Iterable[Broker]) -> ClusterSnapshot:
        merged = copy_of(self.brokers)
        merged.update((b.id, b) for b in updated)
        return replace(self, brokers=MappingProxyType(merged))


@dataclass(frozen=True, slots=True)
class ReassignmentPlan:
    """Final target replicas per partition, in Kafka's reassignment JSON form."""

    targets: Mapping[TopicPartition, tuple[int, ...]]
    log_dirs: Mapping[TopicPartition, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    _topics: frozenset[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("targets", "log_dirs"):
            value = getattr(self, name)
            if not isinstance(value, MappingProxyType):
                object.__setattr__(self, name, _frozen(value))

    def __len__(self) -> int:
        return len(self.targets)

    def topics(self) -> frozenset[str]:
        """Made once: the plan never changes, and each cycle asks (a pass over 100,000 partitions)."""
        topics = self._topics
        if topics is None:
            topics = frozenset(tp.topic for tp in self.targets)
            object.__setattr__(self, "_topics", topics)
        return topics

    def to_dict(self) -> dict[str, Any]:
        entries: list[dict[str, Any]] = []
        for tp in sorted(self.targets):
            entry: dict[str, Any] = {
                "topic": tp.topic,
                "partition": tp.partition,
                "replicas": list(self.targets[tp]),
            }
            if tp in self.log_dirs:
                entry["log_dirs"] = list(self.log_dirs[tp])
            entries.append(entry)
        return {"version": PLAN_VERSION, "partitions": entries}

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> ReassignmentPlan:
        return cls.from_dict(_load_json(text, "reassignment plan"))

    @classmethod
    def from_dict(cls, data: Any) -> ReassignmentPlan:
        """The plan, or InvalidInputError listing every problem (never a plan of the entries that parsed)."""
        draft = PlanDraft.parse(data)
        if draft.problems:
            raise InvalidInputError("reassignment plan", draft.problems)
        return cls(targets=draft.targets, log_dirs=draft.log_dirs)


ANY_LOG_DIR: Final = "any"
"""Kafka's reassignment JSON for "the log dir the broker picks" (ReassignPartitionsCommand.ANY_LOG_DIR)."""


def assignment_document(assignment: Mapping[TopicPartition, Iterable[int]]) -> dict[str, Any]:
    """Kafka's reassignment JSON for an assignment, as kafka-reassign-partitions printed the current one to
    save for rollback up to Kafka 4.1 (formatAsReassignmentJson: sorted by topic then partition, every log
    dir "any"; since 4.2 it names each replica's dir), so the document can be submitted back as it is."""
    entries = []
    for tp in sorted(assignment):
        replicas = [int(b) for b in assignment[tp]]
        entries.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "replicas": replicas,
                "log_dirs": [ANY_LOG_DIR] * len(replicas),
            }
        )
    return {"version": PLAN_VERSION, "partitions": entries}


def kafka_json(document: Any) -> str:
    """JSON written as Kafka's tools write it (Jackson's compact form, key order kept)."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


EMPTY_PLAN: Final = Problem("plan", "partitions", "is empty: nothing to reassign")
"""A plan without entries: refused by submit and validate-plan. A planner that finds nothing to move writes
one (`plan`, the Spark pipeline), so reading it is no error."""


@dataclass(frozen=True, slots=True)
class PlanDraft(ReassignmentPlan):
    """A plan document read leniently: the entries that parsed, plus what was wrong with the others.

    The daemon validates a draft against the live cluster like a plan, so one answer lists every problem:
    a replica list `[-1, 99]` is reported for the -1 here and for the unknown broker 99 there. A draft with
    problems is never executed: the validator reports its problems first (daemon/validation.py).
    `named_brokers` holds, by location, the usable broker ids of the entries that did not parse.
    """

    problems: tuple[Problem, ...] = ()
    named_brokers: Mapping[str, tuple[int, ...]] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def parse(cls, data: Any) -> PlanDraft:
        problems = _Problems()
        targets: dict[TopicPartition, tuple[int, ...]] = {}
        log_dirs: dict[TopicPartition, tuple[str, ...]] = {}
        named: dict[str, tuple[int, ...]] = {}
        if not isinstance(data, dict):
            problems.add("plan", "(document)", f"must be a JSON object, got {_type_name(data)}")
            return cls(targets={}, problems=tuple(problems.items))
        _unknown_fields(data, PLAN_FIELDS, "plan", problems)
        version = data.get("version")
        if version != PLAN_VERSION or isinstance(version, bool):
            problems.add("plan", "version", f"must be {PLAN_VERSION}, got {shown(version)}")
        entries = data.get("partitions")
        if not isinstance(entries, list):
            problems.add("plan", "partitions", f"must be a list, got {_type_name(entries)}")
            entries = []
        for index, entry in enumerate(entries):
            where = f"partitions[{index}]"
            before = len(problems.items)
            tp = _parse_tp(entry, where, problems)
            if tp is not None:
                where = f"partitions[{index}] ({tp})"
            if isinstance(entry, dict):
                _unknown_fields(entry, PLAN_ENTRY_FIELDS, where, problems)
            replicas = _parse_replica_list(entry, "replicas", where, problems, allow_empty=False)
            dirs_tuple = _parse_log_dirs(entry, replicas, where, problems)
            if tp is not None and tp in targets:
                problems.add(where, "partition", f"duplicate entry for {tp}")
                continue
            if len(problems.items) != before or tp is None or replicas is None:
                usable = _usable_broker_ids(entry)
                if usable:
                    named[where] = usable
                continue
            targets[tp] = replicas
            if dirs_tuple is not None and any(d != "any" for d in dirs_tuple):
                log_dirs[tp] = dirs_tuple
        return cls(targets=targets, log_dirs=log_dirs, problems=tuple(problems.items), named_brokers=named)


def _unknown_fields(data: Mapping[str, Any], known: frozenset[str], where: str, problems: _Problems) -> None:
    for key in sorted(set(data) - known):
        problems.add(where, clipped(str(key)), f"unknown field; known: {', '.join(sorted(known))}")


def _parse_log_dirs(
    entry: Any, replicas: tuple[int, ...] | None, where: str, problems: _Problems
) -> tuple[str, ...] | None:
    if not isinstance(entry, dict) or "log_dirs" not in entry:
        return None
    dirs = entry["log_dirs"]  # null is refused, as Kafka's tool refuses it: absent means "any" for each
    if not isinstance(dirs, list) or not all(isinstance(d, str) and d for d in dirs):
        problems.add(where, "log_dirs", f"must be a list of non-empty strings, got {shown(dirs)}")
        return None
    if replicas is not None and len(dirs) != len(replicas):
        problems.add(
            where, "log_dirs", f"has {len(dirs)} entries for {len(replicas)} replicas: {shown(dirs)}"
        )
        return None
    return tuple(dirs)


def _usable_broker_ids(entry: Any) -> tuple[int, ...]:
    raw = entry.get("replicas") if isinstance(entry, dict) else None
    if not isinstance(raw, list):
        return ()
    return tuple(sorted({b for b in raw if _as_strict_int(b) is not None and 0 <= b <= INT32_MAX}))


# ---------------------------------------------------------------------------------------------------------
# Snapshot JSON (documented in docs/snapshot-format.md)


def snapshot_to_dict(snapshot: ClusterSnapshot) -> dict[str, Any]:
    partitions: list[dict[str, Any]] = []
    for tp in sorted(snapshot.partitions):
        p = snapshot.partitions[tp]
        entry: dict[str, Any] = {
            "topic": tp.topic,
            "partition": tp.partition,
            "replicas": list(p.replicas),
            "isr": list(p.isr),
            "leader": p.leader,
            "size_bytes": p.size_bytes,
        }
        if p.adding:
            entry["adding"] = list(p.adding)
        if p.removing:
            entry["removing"] = list(p.removing)
        if p.replica_sizes:
            entry["replica_sizes"] = {str(b): s for b, s in sorted(p.replica_sizes.items())}
        if p.produce_bytes_per_sec:
            entry["produce_bytes_per_sec"] = p.produce_bytes_per_sec
        partitions.append(entry)
    return {
        "version": SNAPSHOT_VERSION,
        "cluster_id": snapshot.cluster_id,
        "controller_id": snapshot.controller_id,
        "brokers": [
            {"id": b.id, "rack": b.rack, "online": b.online}
            | ({"log_dirs": list(snapshot.broker_dirs[b.id])} if b.id in snapshot.broker_dirs else {})
            for b in sorted(snapshot.brokers.values(), key=lambda b: b.id)
        ],
        "topics": [
            {"name": t.name, "topic_id": t.topic_id, "configs": dict(t.configs)}
            for t in sorted(snapshot.topics.values(), key=lambda t: t.name)
        ],
        "partitions": partitions,
        "broker_configs": {str(b): dict(c) for b, c in sorted(snapshot.broker_configs.items())},
        "cluster_configs": dict(snapshot.cluster_configs),
    } | ({"read_at": snapshot.read_at} if snapshot.read_at is not None else {})


def snapshot_to_json(snapshot: ClusterSnapshot, indent: int | None = None) -> str:
    return json.dumps(snapshot_to_dict(snapshot), indent=indent)


def snapshot_from_json(text: str | bytes) -> ClusterSnapshot:
    return snapshot_from_dict(load_snapshot_document(text))


def load_snapshot_document(text: str | bytes) -> Any:
    """A snapshot file's JSON, read with the bounds every snapshot reader applies (reassignd.strictjson)."""
    return _load_json(text, "cluster snapshot")


def snapshot_from_dict(data: Any) -> ClusterSnapshot:
    """Parse and cross-check a snapshot; every problem is reported at once."""
    what = "cluster snapshot"
    problems = _Problems()
    if not isinstance(data, dict):
        problems.add("snapshot", "(document)", f"must be a JSON object, got {_type_name(data)}")
        problems.raise_if_any(what)
    _unknown_fields(data, SNAPSHOT_FIELDS, "snapshot", problems)
    version = data.get("version", SNAPSHOT_VERSION)
    if version != SNAPSHOT_VERSION or isinstance(version, bool):
        problems.add("snapshot", "version", f"must be {SNAPSHOT_VERSION}, got {shown(version)}")

    broker_dirs: dict[int, tuple[str, ...]] = {}
    brokers = _parse_brokers(data.get("brokers"), problems, broker_dirs)
    topics = _parse_topics(data.get("topics", []), problems)
    partitions: dict[TopicPartition, PartitionState] = {}
    raw_partitions = data.get("partitions")
    if not isinstance(raw_partitions, list):
        problems.add("snapshot", "partitions", f"must be a list, got {_type_name(raw_partitions)}")
        raw_partitions = []
    for index, entry in enumerate(raw_partitions):
        state = _parse_partition(entry, index, brokers, problems)
        if state is None:
            continue
        if state.tp in partitions:
            problems.add(f"partitions[{index}] ({state.tp})", "partition", f"duplicate entry for {state.tp}")
            continue
        partitions[state.tp] = state
    for tp in partitions:
        if tp.topic not in topics:
            topics[tp.topic] = TopicInfo(name=tp.topic)

    broker_configs: dict[int, Mapping[str, str]] = {}
    raw_bc = data.get("broker_configs", {})
    if not isinstance(raw_bc, dict):
        problems.add("snapshot", "broker_configs", f"must be an object, got {_type_name(raw_bc)}")
        raw_bc = {}
    for key, configs in raw_bc.items():
        broker_id = _as_int(key)
        if broker_id is None or not 0 <= broker_id <= INT32_MAX:
            problems.add("broker_configs", str(key), "key must be a non-negative broker id")
            continue
        parsed = _parse_str_map(configs, f"broker_configs[{key}]", problems)
        if parsed is not None:
            broker_configs[broker_id] = parsed
    cluster_configs = _parse_str_map(data.get("cluster_configs", {}), "snapshot", problems, "cluster_configs")

    cluster_id = data.get("cluster_id")
    if cluster_id is not None and not isinstance(cluster_id, str):
        problems.add("snapshot", "cluster_id", f"must be a string or null, got {shown(cluster_id)}")
    controller_id = data.get("controller_id")
    controller_int = _as_strict_int(controller_id)
    if controller_id is not None and (controller_int is None or not 0 <= controller_int <= INT32_MAX):
        problems.add("snapshot", "controller_id", f"must be an integer or null, got {shown(controller_id)}")
    read_at = data.get("read_at")
    if read_at is not None and (
        isinstance(read_at, bool) or not isinstance(read_at, int | float) or not 0 <= read_at < 2**40
    ):
        problems.add("snapshot", "read_at", f"must be Unix seconds (a number >= 0), got {shown(read_at)}")
    problems.raise_if_any(what)
    return ClusterSnapshot(
        brokers=brokers,
        partitions=partitions,
        topics=topics,
        broker_configs=broker_configs,
        cluster_configs=cluster_configs or {},
        cluster_id=cluster_id,
        controller_id=controller_id,
        broker_dirs=broker_dirs,
        read_at=None if read_at is None else float(read_at),
    )


# ---------------------------------------------------------------------------------------------------------
# Parsing helpers


def _load_json(text: str | bytes, what: str) -> Any:
    from reassignd import strictjson

    return strictjson.loads(text, what, max_bytes=MAX_DOCUMENT_BYTES)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _as_strict_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _as_int(value: Any) -> int | None:
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return _as_strict_int(value)


def _parse_tp(entry: Any, where: str, problems: _Problems) -> TopicPartition | None:
    if not isinstance(entry, dict):
        problems.add(where, "(entry)", f"must be an object, got {_type_name(entry)}")
        return None
    topic = entry.get("topic")
    partition = entry.get("partition")
    ok = True
    if not isinstance(topic, str) or not topic:
        problems.add(where, "topic", f"must be a non-empty string, got {shown(topic)}")
        ok = False
    else:
        bad_name = topic_name_problem(topic)
        if bad_name is not None:
            problems.add(where, "topic", bad_name)
            ok = False
    part = _as_strict_int(partition)
    if part is None:
        problems.add(where, "partition", f"must be an integer, got {shown(partition)}")
        ok = False
    elif part < 0:
        problems.add(where, "partition", f"must not be negative, got {part}")
        ok = False
    elif part > INT32_MAX:
        problems.add(where, "partition", f"must be at most {INT32_MAX} (Kafka's INT32), got {shown(part)}")
        ok = False
    return TopicPartition(topic, part) if ok and isinstance(topic, str) and part is not None else None


def _parse_replica_list(
    entry: Any, name: str, where: str, problems: _Problems, *, allow_empty: bool, required: bool = True
) -> tuple[int, ...] | None:
    if not isinstance(entry, dict):
        return None
    if name not in entry and not required:
        return ()
    value = entry.get(name)
    if not isinstance(value, list):
        problems.add(where, name, f"must be a list of broker ids, got {shown(value)}")
        return None
    if len(value) > MAX_REPLICATION_FACTOR:
        problems.add(
            where, name, f"has {len(value)} entries; a replication factor is at most {MAX_REPLICATION_FACTOR}"
        )
        return None
    ok = True
    ids: list[int] = []
    for item in value:
        broker = _as_strict_int(item)
        if broker is None:
            problems.add(where, name, f"broker ids must be integers, got {shown(item)} in {shown(value)}")
            ok = False
        elif broker < 0:
            problems.add(where, name, f"broker ids must not be negative, got {broker} in {shown(value)}")
            ok = False
        elif broker > INT32_MAX:
            problems.add(
                where, name, f"broker ids are at most {INT32_MAX} (Kafka's INT32), got {shown(broker)}"
            )
            ok = False
        else:
            ids.append(broker)
    if not value and not allow_empty:
        problems.add(where, name, "must not be empty")
        ok = False
    duplicates = sorted(b for b, n in Counter(ids).items() if n > 1)
    if duplicates:
        problems.add(where, name, f"duplicate broker id(s) {duplicates} in {shown(value)}")
        ok = False
    return tuple(ids) if ok else None


def _parse_str_map(
    value: Any, where: str, problems: _Problems, name: str = "configs"
) -> dict[str, str] | None:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.add(where, name, f"must be an object of strings, got {_type_name(value)}")
        return None
    out: dict[str, str] = {}
    for key, item in value.items():
        if item is None:
            continue
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            problems.add(where, f"{name}.{key}", f"must be a string, got {shown(item)}")
            continue
        out[str(key)] = str(item)
    return out


def _parse_brokers(
    raw: Any, problems: _Problems, dirs: dict[int, tuple[str, ...]] | None = None
) -> dict[int, Broker]:
    """The brokers; each one's optional `log_dirs` (a list of paths) goes into `dirs`."""
    brokers: dict[int, Broker] = {}
    if not isinstance(raw, list):
        problems.add("snapshot", "brokers", f"must be a list, got {_type_name(raw)}")
        return brokers
    for index, entry in enumerate(raw):
        where = f"brokers[{index}]"
        if not isinstance(entry, dict):
            problems.add(where, "(entry)", f"must be an object, got {_type_name(entry)}")
            continue
        _unknown_fields(entry, SNAPSHOT_BROKER_FIELDS, where, problems)
        broker_id = _as_strict_int(entry.get("id"))
        rack = entry.get("rack")
        online = entry.get("online", True)
        ok = True
        if broker_id is None or not 0 <= broker_id <= INT32_MAX:
            problems.add(where, "id", f"must be a non-negative integer, got {shown(entry.get('id'))}")
            ok = False
        if rack is not None and not isinstance(rack, str):
            problems.add(where, "rack", f"must be a string or null, got {shown(rack)}")
            ok = False
        if not isinstance(online, bool):
            problems.add(where, "online", f"must be true or false, got {shown(online)}")
            ok = False
        if not ok or broker_id is None:
            continue
        if broker_id in brokers:
            problems.add(where, "id", f"duplicate broker id {broker_id}")
            continue
        brokers[broker_id] = Broker(broker_id, rack or None, online)
        paths = entry.get("log_dirs")
        if paths is not None:
            if not isinstance(paths, list) or not all(isinstance(d, str) and d for d in paths):
                problems.add(where, "log_dirs", f"must be a list of non-empty strings, got {shown(paths)}")
            elif dirs is not None:
                dirs[broker_id] = tuple(paths)
    return brokers


def _parse_topics(raw: Any, problems: _Problems) -> dict[str, TopicInfo]:
    topics: dict[str, TopicInfo] = {}
    if not isinstance(raw, list):
        problems.add("snapshot", "topics", f"must be a list, got {_type_name(raw)}")
        return topics
    for index, entry in enumerate(raw):
        where = f"topics[{index}]"
        if not isinstance(entry, dict):
            problems.add(where, "(entry)", f"must be an object, got {_type_name(entry)}")
            continue
        _unknown_fields(entry, SNAPSHOT_TOPIC_FIELDS, where, problems)
        name = entry.get("name")
        topic_id = entry.get("topic_id")
        if not isinstance(name, str) or not name:
            problems.add(where, "name", f"must be a non-empty string, got {shown(name)}")
            continue
        where = f"topics[{index}] ({name})"
        if topic_id is not None and not isinstance(topic_id, str):
            problems.add(where, "topic_id", f"must be a string or null, got {shown(topic_id)}")
            continue
        configs = _parse_str_map(entry.get("configs", {}), where, problems)
        if configs is None:
            continue
        if name in topics:
            problems.add(where, "name", f"duplicate topic {shown(name)}")
            continue
        topics[name] = TopicInfo(name=name, topic_id=topic_id, configs=configs)
    return topics


def _parse_partition(
    entry: Any, index: int, brokers: Mapping[int, Broker], problems: _Problems
) -> PartitionState | None:
    where = f"partitions[{index}]"
    tp = _parse_tp(entry, where, problems)
    if tp is not None:
        where = f"partitions[{index}] ({tp})"
    before = len(problems.items)
    if isinstance(entry, dict):
        _unknown_fields(entry, SNAPSHOT_PARTITION_FIELDS, where, problems)
    replicas = _parse_replica_list(entry, "replicas", where, problems, allow_empty=False)
    isr = _parse_replica_list(entry, "isr", where, problems, allow_empty=True)
    adding = _parse_replica_list(entry, "adding", where, problems, allow_empty=True, required=False)
    removing = _parse_replica_list(entry, "removing", where, problems, allow_empty=True, required=False)
    if tp is None or not isinstance(entry, dict):
        return None
    leader_raw = entry.get("leader", NO_LEADER)
    leader = NO_LEADER if leader_raw is None else _as_strict_int(leader_raw)
    if leader is None or not NO_LEADER <= leader <= INT32_MAX:
        problems.add(where, "leader", f"must be a broker id, or -1/null for none, got {shown(leader_raw)}")
    size_raw = entry.get("size_bytes", 0)
    size = _as_strict_int(size_raw)
    if size is None or not 0 <= size <= INT64_MAX:
        problems.add(where, "size_bytes", f"must be a non-negative integer, got {shown(size_raw)}")
    produce_raw = entry.get("produce_bytes_per_sec", 0.0)
    if (
        isinstance(produce_raw, bool)
        or not isinstance(produce_raw, int | float)
        or not 0 <= produce_raw < math.inf
        or produce_raw > INT64_MAX
    ):
        problems.add(
            where, "produce_bytes_per_sec", f"must be a non-negative number, got {shown(produce_raw)}"
        )
    replica_sizes: dict[int, int] = {}
    raw_sizes = entry.get("replica_sizes", {})
    if not isinstance(raw_sizes, dict):
        problems.add(
            where, "replica_sizes", f"must be an object of broker id to bytes, got {shown(raw_sizes)}"
        )
    else:
        for key, value in raw_sizes.items():
            broker_id, nbytes = _as_int(key), _as_strict_int(value)
            if (
                broker_id is None
                or nbytes is None
                or not 0 <= broker_id <= INT32_MAX
                or not 0 <= nbytes <= INT64_MAX
            ):
                problems.add(
                    where, f"replica_sizes.{key}", f"must map a broker id to bytes, got {shown(value)}"
                )
            else:
                replica_sizes[broker_id] = nbytes
    if replicas is not None:
        unknown = sorted({r for r in replicas if r not in brokers})
        if unknown and brokers:
            problems.add(where, "replicas", f"unknown broker id(s) {unknown} (list them under brokers)")
        replica_set = set(replicas)
        for name, subset in (("isr", isr), ("adding", adding), ("removing", removing)):
            if subset is not None and not set(subset) <= replica_set:
                outside = sorted(set(subset) - replica_set)
                problems.add(where, name, f"broker id(s) {outside} are not in replicas {list(replicas)}")
        if leader is not None and leader != NO_LEADER and leader not in replica_set:
            problems.add(where, "leader", f"{leader} is not one of the replicas {list(replicas)}")
    if len(problems.items) != before:
        return None
    assert replicas is not None and isr is not None and adding is not None and removing is not None
    assert leader is not None and size is not None
    return PartitionState(
        tp=tp,
        replicas=replicas,
        isr=isr,
        leader=leader,
        adding=adding,
        removing=removing,
        size_bytes=size,
        replica_sizes=replica_sizes,
        produce_bytes_per_sec=float(produce_raw),
    )
