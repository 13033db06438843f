"""Scenario files: the cluster a simulation starts from (docs/simulator.md, "Scenario file").

A scenario names the Kafka release and controller mode, brokers (rack path, network capacity, log dirs),
topics (partition count, replication factor, sizes, produce rates, configs, optional assignment and log dirs)
and dynamic broker configs. A cluster snapshot JSON (reassignd.model.snapshot_from_dict) is accepted too and
starts the simulation from that exact state. Every problem is collected before failing, each with its field
and value.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from reassignd.model import (
    ClusterSnapshot,
    InvalidInputError,
    PartitionState,
    Problem,
    snapshot_from_dict,
)
from reassignd.sim.configs import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigValueError, parse_value
from reassignd.sim.kafka_version import DEFAULT as DEFAULT_KAFKA
from reassignd.sim.kafka_version import KafkaVersion, KafkaVersionError

DEFAULT_NETWORK_BYTES_PER_SEC: Final = 125_000_000.0
DEFAULT_LOG_DIR_COPY_BYTES_PER_SEC: Final = 250_000_000.0  # a disk copying between its log dirs
DEFAULT_LOG_DIR: Final = "/var/lib/kafka/data"
DEFAULT_VOLUME_BYTES: Final = 2**40  # 1 TiB per log dir unless the scenario says otherwise
ANY_LOG_DIR: Final = "any"  # as in Kafka's reassignment JSON: no preference
WHAT: Final = "simulator scenario"


@dataclass(frozen=True, slots=True)
class LogDirSpec:
    """One of a broker's log dirs: its absolute path and its volume (usable bytes at the start, if given)."""

    path: str
    total_bytes: int = DEFAULT_VOLUME_BYTES
    usable_bytes: int | None = None  # None: everything the replicas placed there do not use


DEFAULT_LOG_DIRS: Final = (LogDirSpec(DEFAULT_LOG_DIR),)


@dataclass(frozen=True, slots=True)
class BrokerSpec:
    id: int
    rack: str | None = None
    network_in: float = DEFAULT_NETWORK_BYTES_PER_SEC
    network_out: float = DEFAULT_NETWORK_BYTES_PER_SEC
    online: bool = True
    log_dirs: tuple[LogDirSpec, ...] = DEFAULT_LOG_DIRS
    log_dir_copy_rate: float = DEFAULT_LOG_DIR_COPY_BYTES_PER_SEC


PRODUCE_ACKS = ("all", "1")  # a topic's producers; "all" first: the default


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    partition_bytes: tuple[int, ...]
    produce_bytes_per_sec: tuple[float, ...]
    configs: dict[str, str] = field(default_factory=dict)
    assignment: tuple[tuple[int, ...], ...] | None = None
    topic_id: str | None = None
    # Per partition, the log dir of each replica (assignment order); "any" lets Kafka's placement choose.
    log_dirs: tuple[tuple[str, ...], ...] | None = None
    # The producers' acks: "all" (Kafka's producer default since 3.0; refused below min.insync.replicas)
    # or "1".
    produce_acks: str = "all"


@dataclass(frozen=True, slots=True)
class Scenario:
    brokers: tuple[BrokerSpec, ...]
    topics: tuple[TopicSpec, ...]
    broker_configs: dict[int, dict[str, str]] = field(default_factory=dict)
    cluster_broker_configs: dict[str, str] = field(default_factory=dict)
    static_broker_configs: dict[str, str] = field(default_factory=dict)
    seed: int | None = None
    cluster_id: str | None = None
    controller_id: int | None = None
    # Set when loaded from a cluster snapshot: the exact partition states to start from.
    partition_states: tuple[PartitionState, ...] | None = None
    kafka: KafkaVersion = DEFAULT_KAFKA
    # Seconds brokers' Metadata trails the controller after a partition change; None: the model's default.
    metadata_delay: float | None = None


def topic_id_text(topic_id: uuid.UUID) -> str:
    """Kafka's textual topic id (Uuid.toString): URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def parse_topic_id(text: str) -> uuid.UUID | None:
    """A topic id in Kafka's base64 form or as a canonical UUID string; None if it is neither."""
    if len(text) == 22:
        try:
            return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))
        except (binascii.Error, ValueError):
            return None
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def load_scenario(source: str | Path | dict[str, Any]) -> Scenario:
    """Parse a scenario (or cluster snapshot) from a dict, a JSON file path, or JSON text."""
    data: Any
    if isinstance(source, dict):
        data = source
    else:
        text = source
        if isinstance(source, Path) or not str(source).lstrip().startswith(("{", "[")):
            path = Path(source)
            try:
                text = path.read_text()
            except OSError as exc:
                raise InvalidInputError(WHAT, [Problem(str(path), "(file)", f"cannot read: {exc}")]) from None
        try:
            data = json.loads(str(text))
        except json.JSONDecodeError as exc:
            raise InvalidInputError(
                WHAT, [Problem("(document)", f"line {exc.lineno} column {exc.colno}", f"not JSON: {exc.msg}")]
            ) from None
    if not isinstance(data, dict):
        raise InvalidInputError(WHAT, [Problem("scenario", "(document)", "must be a JSON object")])
    if "partitions" in data:
        return scenario_from_snapshot(snapshot_from_dict(data))
    return _parse(data)


def scenario_from_snapshot(snapshot: ClusterSnapshot) -> Scenario:
    """A scenario that starts exactly at `snapshot` (replicas, ISR, leaders, ongoing moves, sizes)."""
    brokers = tuple(
        BrokerSpec(b.id, b.rack, online=b.online) for b in sorted(snapshot.brokers.values(), key=_id)
    )
    by_topic: dict[str, list[PartitionState]] = {}
    for state in snapshot.partitions.values():
        by_topic.setdefault(state.tp.topic, []).append(state)
    problems: list[Problem] = []
    if not brokers:
        problems.append(Problem("snapshot", "brokers", "must list at least one broker"))
    topics: list[TopicSpec] = []
    for name in sorted(set(by_topic) | set(snapshot.topics)):
        states = sorted(by_topic.get(name, []), key=lambda s: s.tp.partition)
        indexes = [s.tp.partition for s in states]
        if indexes != list(range(len(states))):
            problems.append(Problem(f"topic {name}", "partitions", f"must be numbered 0..n-1, got {indexes}"))
            continue
        if not states:
            continue
        info = snapshot.topics.get(name)
        if info is not None and info.topic_id is not None and parse_topic_id(info.topic_id) is None:
            problems.append(
                Problem(f"topic {name}", "topic_id", f"is not a Kafka topic id, got {info.topic_id!r}")
            )
            continue
        topics.append(
            TopicSpec(
                name=name,
                partitions=len(states),
                replication_factor=len(states[0].target_replicas),
                partition_bytes=tuple(s.size_bytes for s in states),
                produce_bytes_per_sec=tuple(s.produce_bytes_per_sec for s in states),
                configs=dict(info.configs) if info else {},
                assignment=tuple(s.replicas for s in states),
                topic_id=info.topic_id if info else None,
            )
        )
    if problems:
        raise InvalidInputError(WHAT, problems)
    return Scenario(
        brokers=brokers,
        topics=tuple(topics),
        broker_configs={b: dict(c) for b, c in snapshot.broker_configs.items()},
        cluster_broker_configs=dict(snapshot.cluster_configs),
        cluster_id=snapshot.cluster_id,
        controller_id=snapshot.controller_id,
        partition_states=tuple(snapshot.partitions.values()),
    )


def _id(b: Any) -> int:
    return int(b.id)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _parse(data: dict[str, Any]) -> Scenario:
    problems: list[Problem] = []

    def bad(where: str, fld: str, message: str) -> None:
        problems.append(Problem(where, fld, message))

    known = {
        "brokers",
        "topics",
        "broker_configs",
        "cluster_broker_configs",
        "static_broker_configs",
        "seed",
        "cluster_id",
        "controller_id",
        "version",
        "description",
        "kafka",
        "metadata_delay_seconds",
    }
    for key in sorted(set(data) - known):
        bad("scenario", key, f"unknown field (expected one of {sorted(known)})")
    kafka = _parse_kafka(data.get("kafka"), bad)
    seed = data.get("seed")
    if seed is not None and not _is_int(seed):
        bad("scenario", "seed", f"must be an integer, got {seed!r}")
    cluster_id = data.get("cluster_id")
    if cluster_id is not None and not isinstance(cluster_id, str):
        bad("scenario", "cluster_id", f"must be a string, got {cluster_id!r}")
    delay = data.get("metadata_delay_seconds")
    if delay is not None and (not _is_number(delay) or not 0 <= delay < float("inf")):
        bad("scenario", "metadata_delay_seconds", f"must be a non-negative number, got {delay!r}")

    brokers: list[BrokerSpec] = []
    raw_brokers = data.get("brokers")
    if not isinstance(raw_brokers, list) or not raw_brokers:
        bad("scenario", "brokers", f"must be a non-empty list, got {raw_brokers!r}")
        raw_brokers = []
    for i, entry in enumerate(raw_brokers):
        where = f"brokers[{i}]"
        if not isinstance(entry, dict):
            bad(where, "(entry)", f"must be an object, got {entry!r}")
            continue
        for key in sorted(
            set(entry)
            - {
                "id",
                "rack",
                "network_in_bytes_per_sec",
                "network_out_bytes_per_sec",
                "online",
                "log_dirs",
                "log_dir_copy_bytes_per_sec",
            }
        ):
            bad(where, key, "unknown field")
        bid: Any = entry.get("id")
        rack: Any = entry.get("rack")
        ok = True
        if not _is_int(bid) or bid < 0:
            bad(where, "id", f"must be a non-negative integer, got {bid!r}")
            ok = False
        elif any(b.id == bid for b in brokers):
            bad(where, "id", f"duplicate broker id {bid}")
            ok = False
        if rack is not None and (not isinstance(rack, str) or not rack):
            bad(where, "rack", f"must be a non-empty string or null, got {rack!r}")
            ok = False
        caps = []
        defaults = {"log_dir_copy_bytes_per_sec": DEFAULT_LOG_DIR_COPY_BYTES_PER_SEC}
        for key in ("network_in_bytes_per_sec", "network_out_bytes_per_sec", "log_dir_copy_bytes_per_sec"):
            value = entry.get(key, defaults.get(key, DEFAULT_NETWORK_BYTES_PER_SEC))
            if not _is_number(value) or value <= 0:
                bad(where, key, f"must be a positive number, got {value!r}")
                ok = False
            caps.append(float(value) if _is_number(value) else 0.0)
        online = entry.get("online", True)
        if not isinstance(online, bool):
            bad(where, "online", f"must be true or false, got {online!r}")
            ok = False
        dirs = _parse_log_dirs(entry.get("log_dirs"), where, bad)  # bad ones are reported, not cascaded
        if ok:
            brokers.append(BrokerSpec(bid, rack, caps[0], caps[1], online, dirs or DEFAULT_LOG_DIRS, caps[2]))
    broker_ids = {b.id for b in brokers}
    dirs_of = {b.id: frozenset(d.path for d in b.log_dirs) for b in brokers}

    topics: list[TopicSpec] = []
    raw_topics = data.get("topics", [])
    if not isinstance(raw_topics, list):
        bad("scenario", "topics", f"must be a list, got {raw_topics!r}")
        raw_topics = []
    for i, entry in enumerate(raw_topics):
        spec = _parse_topic(entry, f"topics[{i}]", dirs_of, bad)
        if spec is not None:
            if any(t.name == spec.name for t in topics):
                bad(f"topics[{i}]", "name", f"duplicate topic {spec.name!r}")
            else:
                topics.append(spec)

    broker_configs: dict[int, dict[str, str]] = {}
    raw_bc = data.get("broker_configs", {})
    if not isinstance(raw_bc, dict):
        bad("scenario", "broker_configs", f"must be an object of broker id to configs, got {raw_bc!r}")
        raw_bc = {}
    for key, configs in raw_bc.items():
        try:
            bid = int(key)
        except (TypeError, ValueError):
            bad("broker_configs", str(key), "key must be a broker id")
            continue
        if bid not in broker_ids:
            bad("broker_configs", str(key), f"unknown broker id {bid}")
            continue
        broker_configs[bid] = _parse_configs(
            configs, f"broker_configs.{key}", BROKER_CONFIGS, bad, dynamic=True
        )
    cluster = _parse_configs(
        data.get("cluster_broker_configs", {}), "cluster_broker_configs", BROKER_CONFIGS, bad, dynamic=True
    )
    static = _parse_configs(
        data.get("static_broker_configs", {}), "static_broker_configs", BROKER_CONFIGS, bad, dynamic=False
    )
    if problems:
        raise InvalidInputError(WHAT, problems)
    return Scenario(
        brokers=tuple(brokers),
        topics=tuple(topics),
        broker_configs=broker_configs,
        cluster_broker_configs=cluster,
        static_broker_configs=static,
        seed=seed,
        cluster_id=cluster_id,
        kafka=kafka,
        metadata_delay=None if delay is None else float(delay),
    )


def _parse_kafka(raw: Any, bad: Any) -> KafkaVersion:
    """`kafka: {"version": "3.9", "mode": "zookeeper"}`; a patch release ("3.9.1") means its minor release."""
    if raw is None:
        return DEFAULT_KAFKA
    if not isinstance(raw, dict):
        bad("scenario", "kafka", f'must be an object like {{"version": "3.9", "mode": "kraft"}}, got {raw!r}')
        return DEFAULT_KAFKA
    for key in sorted(set(raw) - {"version", "mode"}):
        bad("kafka", key, "unknown field (expected version, mode)")
    version = raw.get("version", DEFAULT_KAFKA.release)
    mode = raw.get("mode", DEFAULT_KAFKA.mode)
    if not isinstance(version, str):
        bad("kafka", "version", f'must be a string such as "3.9", got {version!r}')
        return DEFAULT_KAFKA
    release = ".".join(version.split(".")[:2])
    try:
        return KafkaVersion(release, mode)
    except KafkaVersionError as exc:
        bad("kafka", exc.field, str(exc))
        return DEFAULT_KAFKA


def _parse_log_dirs(raw: Any, where: str, bad: Any) -> tuple[LogDirSpec, ...] | None:
    """A broker's `log_dirs`: absolute paths, each a string or {"path", "total_bytes", "usable_bytes"}."""
    if raw is None:
        return DEFAULT_LOG_DIRS
    if not isinstance(raw, list) or not raw:
        bad(where, "log_dirs", f"must be a non-empty list of log dirs, got {raw!r}")
        return None
    out: list[LogDirSpec] = []
    ok = True
    for j, item in enumerate(raw):
        fld = f"log_dirs[{j}]"
        entry = {"path": item} if isinstance(item, str) else item
        if not isinstance(entry, dict):
            bad(where, fld, f'must be a path or {{"path", "total_bytes", "usable_bytes"}}, got {item!r}')
            ok = False
            continue
        for key in sorted(set(entry) - {"path", "total_bytes", "usable_bytes"}):
            bad(where, f"{fld}.{key}", "unknown field (expected path, total_bytes, usable_bytes)")
            ok = False
        path = entry.get("path")
        if not isinstance(path, str) or not path.startswith("/") or path == ANY_LOG_DIR:
            bad(where, f"{fld}.path", f"must be an absolute path, got {path!r}")
            ok = False
            continue
        if any(d.path == path for d in out):
            bad(where, f"{fld}.path", f"duplicate log dir {path!r}")
            ok = False
            continue
        total = entry.get("total_bytes", DEFAULT_VOLUME_BYTES)
        usable = entry.get("usable_bytes")
        if not _is_int(total) or total <= 0:
            bad(where, f"{fld}.total_bytes", f"must be a positive integer, got {total!r}")
            ok = False
            continue
        if usable is not None and (not _is_int(usable) or not 0 <= usable <= total):
            bad(
                where,
                f"{fld}.usable_bytes",
                f"must be an integer from 0 to total_bytes ({total}), got {usable!r}",
            )
            ok = False
            continue
        out.append(LogDirSpec(path, total, usable))
    return tuple(out) if ok else None


def _parse_topic_log_dirs(
    raw: Any,
    where: str,
    assignment: tuple[tuple[int, ...], ...] | None,
    dirs_of: dict[int, frozenset[str]],
    bad: Any,
) -> tuple[tuple[str, ...], ...] | None:
    """Per partition, one log dir (or "any") per replica of the assignment, on that replica's broker."""
    if raw is None:
        return None
    if assignment is None:
        bad(where, "log_dirs", "needs an explicit assignment (one log dir per replica)")
        return None
    if not isinstance(raw, list) or len(raw) != len(assignment):
        bad(
            where, "log_dirs", f"must be a list with one entry per partition ({len(assignment)}), got {raw!r}"
        )
        return None
    out: list[tuple[str, ...]] = []
    for p, (dirs, replicas) in enumerate(zip(raw, assignment, strict=True)):
        if (
            not isinstance(dirs, list)
            or len(dirs) != len(replicas)
            or not all(isinstance(d, str) for d in dirs)
        ):
            bad(
                where,
                f"log_dirs[{p}]",
                f"must list one log dir per replica of {list(replicas)}, got {dirs!r}",
            )
            return None
        for broker, path in zip(replicas, dirs, strict=True):
            if path != ANY_LOG_DIR and path not in dirs_of.get(broker, ()):
                bad(where, f"log_dirs[{p}]", f"{path!r} is not a log dir of broker {broker}")
                return None
        out.append(tuple(dirs))
    return tuple(out)


def _per_partition(
    value: Any, count: int, where: str, fld: str, bad: Any, *, integer: bool
) -> tuple[Any, ...]:
    check = _is_int if integer else _is_number
    if check(value):
        if value < 0:
            bad(where, fld, f"must not be negative, got {value!r}")
            return ()
        return (value,) * count
    if isinstance(value, list):
        if len(value) != count:
            bad(where, fld, f"has {len(value)} entries for {count} partitions")
            return ()
        wrong = [v for v in value if not check(v) or v < 0]
        if wrong:
            bad(
                where,
                fld,
                f"entries must be non-negative {'integers' if integer else 'numbers'}, got {wrong!r}",
            )
            return ()
        return tuple(value)
    kind = "integer" if integer else "number"
    bad(where, fld, f"must be a non-negative {kind} or a list of one per partition, got {value!r}")
    return ()


def _parse_topic(entry: Any, where: str, dirs_of: dict[int, frozenset[str]], bad: Any) -> TopicSpec | None:
    if not isinstance(entry, dict):
        bad(where, "(entry)", f"must be an object, got {entry!r}")
        return None
    allowed = {
        "name",
        "partitions",
        "replication_factor",
        "partition_bytes",
        "produce_bytes_per_sec",
        "configs",
        "assignment",
        "topic_id",
        "log_dirs",
        "produce_acks",
    }
    broker_ids = set(dirs_of)
    for key in sorted(set(entry) - allowed):
        bad(where, key, "unknown field")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        bad(where, "name", f"must be a non-empty string, got {name!r}")
        return None
    where = f"{where} ({name})"
    ok = True
    assignment_raw = entry.get("assignment")
    assignment: tuple[tuple[int, ...], ...] | None = None
    if assignment_raw is not None:
        if not isinstance(assignment_raw, list) or not assignment_raw:
            bad(where, "assignment", f"must be a non-empty list of replica lists, got {assignment_raw!r}")
            ok = False
        else:
            lists: list[tuple[int, ...]] = []
            for p, replicas in enumerate(assignment_raw):
                if not isinstance(replicas, list) or not replicas or not all(_is_int(r) for r in replicas):
                    bad(
                        where, f"assignment[{p}]", f"must be a non-empty list of broker ids, got {replicas!r}"
                    )
                    ok = False
                    continue
                if len(set(replicas)) != len(replicas):
                    bad(where, f"assignment[{p}]", f"duplicate broker id in {replicas!r}")
                    ok = False
                unknown = sorted(set(replicas) - broker_ids)
                if unknown:
                    bad(where, f"assignment[{p}]", f"unknown broker id(s) {unknown} in {replicas!r}")
                    ok = False
                lists.append(tuple(replicas))
            if ok:
                assignment = tuple(lists)
                if len({len(r) for r in lists}) != 1:
                    bad(where, "assignment", "all partitions must have the same number of replicas")
                    ok = False
    partitions: Any = entry.get("partitions", len(assignment) if assignment else None)
    if not _is_int(partitions) or partitions < 1:
        bad(where, "partitions", f"must be a positive integer, got {partitions!r}")
        return None
    if assignment is not None and len(assignment) != partitions:
        bad(where, "assignment", f"has {len(assignment)} replica lists for {partitions} partitions")
        ok = False
    rf: Any = entry.get("replication_factor", len(assignment[0]) if assignment else None)
    if not _is_int(rf) or rf < 1:
        bad(where, "replication_factor", f"must be a positive integer, got {rf!r}")
        ok = False
    elif assignment is not None and len(assignment[0]) != rf:
        bad(where, "replication_factor", f"is {rf} but the assignment has {len(assignment[0])} replicas")
        ok = False
    elif rf > len(broker_ids):
        bad(where, "replication_factor", f"{rf} is larger than the number of brokers ({len(broker_ids)})")
        ok = False
    sizes = _per_partition(
        entry.get("partition_bytes", 0), partitions, where, "partition_bytes", bad, integer=True
    )
    rates = _per_partition(
        entry.get("produce_bytes_per_sec", 0), partitions, where, "produce_bytes_per_sec", bad, integer=False
    )
    configs = _parse_configs(entry.get("configs", {}), f"{where} configs", TOPIC_CONFIGS, bad, dynamic=True)
    topic_id = entry.get("topic_id")
    if topic_id is not None and (not isinstance(topic_id, str) or parse_topic_id(topic_id) is None):
        bad(where, "topic_id", f"must be a Kafka topic id (base64) or a UUID string, got {topic_id!r}")
        ok = False
    acks = entry.get("produce_acks", PRODUCE_ACKS[0])
    if acks not in PRODUCE_ACKS:
        bad(where, "produce_acks", f"must be one of {list(PRODUCE_ACKS)}, got {acks!r}")
        ok = False
    if not ok or not sizes or not rates:
        return None
    log_dirs = _parse_topic_log_dirs(entry.get("log_dirs"), where, assignment, dirs_of, bad)
    if entry.get("log_dirs") is not None and log_dirs is None:
        return None
    return TopicSpec(
        name=name,
        partitions=partitions,
        replication_factor=rf,
        partition_bytes=tuple(int(s) for s in sizes),
        produce_bytes_per_sec=tuple(float(r) for r in rates),
        configs=configs,
        assignment=assignment,
        topic_id=topic_id,
        log_dirs=log_dirs,
        produce_acks=acks,
    )


def _parse_configs(raw: Any, where: str, keys: dict[str, Any], bad: Any, dynamic: bool) -> dict[str, str]:
    if not isinstance(raw, dict):
        bad(where, "(configs)", f"must be an object of name to string value, got {raw!r}")
        return {}
    out: dict[str, str] = {}
    for name, value in raw.items():
        key = keys.get(name)
        if key is None:
            bad(where, name, "unknown config name")
            continue
        if dynamic and not key.dynamic:
            bad(where, name, "is a static broker config; put it under static_broker_configs")
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            bad(where, name, f"must be a string, got {value!r}")
            continue
        text = str(value)
        try:
            parse_value(key, text)
        except ConfigValueError as exc:
            bad(where, name, str(exc))
            continue
        out[name] = text
    return out
