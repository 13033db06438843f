"""What the simulated cluster reports: configs and their changes, log dirs, observed figures, state.

DescribeConfigs follows ConfigHelper.describeConfigs / createTopicConfigEntry / createBrokerConfigEntry
(core/src/main/scala/kafka/server/ConfigHelper.scala): every known key with its effective value, the source
of that value and its synonyms from highest precedence; broker configs that cannot change at runtime are
read-only; the cluster-default broker resource (name "") lists only its dynamic entries. A broker lists
the keys of `allConfigs(config)`, KafkaConfig's values plus the properties set: the throttle rates are
QuotaConfigs keys, not KafkaConfig ones, so a rate nobody set is not listed at all, and a set one has no
DEFAULT synonym (KafkaConfig's defaults do not know it); measured on Kafka 4.4 (tests/realkafka/
test_fidelity.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from reassignd import config_keys
from reassignd.model import Broker, ClusterSnapshot, PartitionState, TopicInfo, TopicPartition
from reassignd.sim import configs as cfg
from reassignd.sim import errors
from reassignd.sim.configs import ConfigEntry
from reassignd.sim.core import ClusterCore
from reassignd.sim.entities import SimPartition
from reassignd.sim.errors import KafkaError
from reassignd.sim.reassignment import Election
from reassignd.sim.scenario import topic_id_text


def _broker_for(sim: ClusterCore, name: str) -> int | None:
    """None for the cluster default resource; raises for anything that is not a registered broker id."""
    if name == "":
        return None
    try:
        broker_id = int(name)
    except ValueError:
        broker_id = -1
    if broker_id not in sim.brokers:
        raise KafkaError(
            errors.INVALID_REQUEST,
            f"Unexpected broker id, expected one of {sorted(sim.brokers)} or empty string, "
            f"but received {name}",
        )
    return broker_id


def describe_configs(
    sim: ClusterCore, resource_type: int, name: str, keys: list[str] | None
) -> list[ConfigEntry]:
    wanted = set(keys) if keys else None
    entries: list[ConfigEntry] = []
    if resource_type == cfg.RESOURCE_TOPIC:
        topic = sim.topics.get(name)
        if topic is None:
            raise KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist.")
        for key in cfg.TOPIC_CONFIGS.values():
            if wanted is not None and key.name not in wanted:
                continue
            synonyms: list[tuple[str, str | None, int]] = []
            if key.name in topic.configs:
                synonyms.append((key.name, topic.configs[key.name], cfg.SOURCE_TOPIC))
            if key.synonym:
                inherited = _broker_synonyms(sim, None, key.synonym)
                synonyms += [s for s in inherited if s[2] != cfg.SOURCE_DEFAULT or s[1] is not None]
            if not synonyms or synonyms[-1][2] != cfg.SOURCE_DEFAULT:
                synonyms.append((key.name, key.default, cfg.SOURCE_DEFAULT))
            value, source = synonyms[0][1], synonyms[0][2]
            entries.append(ConfigEntry(key.name, value, False, source, False, tuple(synonyms), key.type))
        return entries
    if resource_type == cfg.RESOURCE_BROKER:
        broker_id = _broker_for(sim, name)
        for key in cfg.BROKER_CONFIGS.values():
            if wanted is not None and key.name not in wanted:
                continue
            if broker_id is None:
                if key.name in sim.cluster_configs:
                    value = sim.cluster_configs[key.name]
                    synonyms = [(key.name, value, cfg.SOURCE_DYNAMIC_DEFAULT_BROKER)]
                    entries.append(
                        ConfigEntry(
                            key.name,
                            value,
                            False,
                            cfg.SOURCE_DYNAMIC_DEFAULT_BROKER,
                            False,
                            tuple(synonyms),
                            key.type,
                        )
                    )
                continue
            synonyms = _broker_synonyms(sim, broker_id, key.name)
            if not key.in_kafka_config:  # a QuotaConfigs key: listed only where some level sets it
                synonyms = [s for s in synonyms if s[2] != cfg.SOURCE_DEFAULT]
                if not synonyms:
                    continue
            value, source = synonyms[0][1], synonyms[0][2]
            entries.append(
                ConfigEntry(key.name, value, not key.dynamic, source, False, tuple(synonyms), key.type)
            )
        entries += _custom_broker_entries(sim, broker_id, wanted)
        if broker_id is not None and wanted is not None:
            entries += clock_entries(sim, wanted)
        return entries
    raise KafkaError(errors.INVALID_REQUEST, f"Unsupported resource type {resource_type}")


def clock_entries(sim: ClusterCore, wanted: set[str]) -> list[ConfigEntry]:
    """The simulated clock and how fast it runs against the wall clock, as read-only broker configs, only
    for a client that names them: rates measured on the wall clock against a time-scaled simulator are
    off by the scale, and no Kafka API says what time it is on a broker. A real broker answers nothing for
    these names (DescribeConfigs skips unknown ones), and its clock is the wall clock."""
    values = {
        config_keys.SIM_CLOCK_SECONDS: repr(float(sim.now)),
        config_keys.SIM_TIME_SCALE: repr(float(sim.time_scale)),
    }
    return [
        ConfigEntry(
            name,
            value,
            True,
            cfg.SOURCE_DYNAMIC_BROKER,
            False,
            ((name, value, cfg.SOURCE_DYNAMIC_BROKER),),
            "DOUBLE",
        )
        for name, value in values.items()
        if name in wanted
    ]


def _custom_broker_entries(
    sim: ClusterCore, broker_id: int | None, wanted: set[str] | None
) -> list[ConfigEntry]:
    """Dynamic broker configs Kafka does not define (custom properties, accepted on write).

    ConfigHelper.createBrokerConfigEntry: a key of unknown type may be a secret (KafkaConfig.maybeSensitive),
    so its value is never shown; it is read-only (not a known dynamic config) and of type UNKNOWN.
    """
    levels = [(sim.cluster_configs, cfg.SOURCE_DYNAMIC_DEFAULT_BROKER)]
    if broker_id is not None:
        levels.insert(0, (sim.brokers[broker_id].configs, cfg.SOURCE_DYNAMIC_BROKER))
    names = sorted({n for configs, _ in levels for n in configs if n not in cfg.BROKER_CONFIGS})
    entries = []
    for name in names:
        if wanted is not None and name not in wanted:
            continue
        synonyms = tuple((name, None, source) for configs, source in levels if name in configs)
        entries.append(ConfigEntry(name, None, True, synonyms[0][2], True, synonyms, "UNKNOWN"))
    return entries


def _broker_synonyms(sim: ClusterCore, broker_id: int | None, name: str) -> list[tuple[str, str | None, int]]:
    """Every level that sets `name`, highest precedence first, ending with the default."""
    out: list[tuple[str, str | None, int]] = []
    broker = sim.brokers.get(broker_id) if broker_id is not None else None
    if broker is not None and name in broker.configs:
        out.append((name, broker.configs[name], cfg.SOURCE_DYNAMIC_BROKER))
    if name in sim.cluster_configs:
        out.append((name, sim.cluster_configs[name], cfg.SOURCE_DYNAMIC_DEFAULT_BROKER))
    static = broker.static_configs if broker is not None else _any_static(sim)
    if name in static:
        out.append((name, static[name], cfg.SOURCE_STATIC_BROKER))
    key = cfg.BROKER_CONFIGS.get(name)
    out.append((name, key.default if key else None, cfg.SOURCE_DEFAULT))
    return out


def _any_static(sim: ClusterCore) -> dict[str, str]:
    return next(iter(sim.brokers.values())).static_configs if sim.brokers else {}


# Keys whose change can move a partition in or out of under-min-ISR or make it eligible for an unclean
# election; any other key (throttle lists, rates) changes no partition's state.
_PARTITION_STATE_KEYS = frozenset({config_keys.MIN_INSYNC_REPLICAS, cfg.UNCLEAN_LEADER_ELECTION})
# Keys a partition's books depend on: how fast its log grows (acks=all producers below min.insync.replicas)
# and what its in-sync replication records on throttle quotas (the throttled-replica lists).
_ACCOUNTED_KEYS = frozenset(
    {
        config_keys.MIN_INSYNC_REPLICAS,
        config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS,
        config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS,
    }
)


def incremental_alter_configs(
    sim: ClusterCore,
    resource_type: int,
    name: str,
    ops: list[tuple[str, int, str | None]],
    validate_only: bool,
) -> None:
    """IncrementalAlterConfigs for one resource: all of `ops` or none (KafkaError).

    A BROKER resource is first checked as the receiving broker does in both modes
    (ConfigAdminManager.validateBrokerConfigChange); the write then follows the KRaft controller
    (ConfigurationControlManager) or, in ZooKeeper mode, ZkAdminManager.incrementalAlterConfigs.
    """
    cfg.check_request(ops)
    if resource_type == cfg.RESOURCE_TOPIC:
        topic = sim.topics.get(name)
        if sim.kafka.zookeeper:
            if not name:
                raise KafkaError(errors.INVALID_REQUEST, "Default topic resources are not allowed.")
            updated = cfg.prepare_incremental(cfg.TOPIC_CONFIGS, topic.configs if topic else {}, ops)
            if topic is None:
                raise KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
            wrap = f"Invalid config value for resource {cfg.zk_resource(resource_type, name)}: "
            cfg.check_topic_configs(updated, wrap)
        else:
            updated = cfg.kraft_incremental(cfg.TOPIC_CONFIGS, topic.configs if topic else {}, ops)
            cfg.check_topic_configs(updated)
            if topic is None:
                raise KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        if not validate_only:
            _set_topic_configs(sim, topic, updated, changed={op[0] for op in ops})
        return
    if resource_type == cfg.RESOURCE_BROKER:
        broker_id = _broker_for(sim, name)
        current = sim.cluster_configs if broker_id is None else sim.brokers[broker_id].configs
        checked = cfg.prepare_incremental(cfg.BROKER_CONFIGS, current, ops)
        cfg.check_dynamic_broker(checked)
        updated = checked if sim.kafka.zookeeper else cfg.kraft_incremental(cfg.BROKER_CONFIGS, current, ops)
        if not validate_only:
            _set_broker_configs(sim, broker_id, updated, changed={op[0] for op in ops})
        return
    raise KafkaError(errors.INVALID_REQUEST, f"Unsupported resource type {resource_type}")


def alter_configs(
    sim: ClusterCore,
    resource_type: int,
    name: str,
    configs: list[tuple[str, str | None]],
    validate_only: bool,
) -> None:
    """Legacy AlterConfigs (API 33) for one resource: its dynamic configs become exactly `configs`.

    ConfigAdminManager.preprocess (legacy) refuses duplicate keys and null values and checks BROKER
    resources on the receiving broker; the KRaft controller (ConfigurationControlManager.legacyAlterConfigs)
    or ZkAdminManager.alterConfigs then replaces the resource's configs, deleting the ones not given.
    """
    cfg.check_request([(key, cfg.OP_SET, value) for key, value in configs])
    given = {key: value or "" for key, value in configs}
    if resource_type == cfg.RESOURCE_TOPIC:
        topic = sim.topics.get(name)
        if sim.kafka.zookeeper:
            if not name:
                raise KafkaError(errors.INVALID_REQUEST, "Default topic resources are not allowed.")
            if topic is None:
                raise KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
            cfg.check_topic_configs(given, f"Invalid config value for resource {cfg.zk_resource(2, name)}: ")
        else:
            cfg.check_topic_configs(given)
            if topic is None:
                raise KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        if not validate_only:
            _set_topic_configs(sim, topic, given, changed=set(given) | set(topic.configs))
        return
    if resource_type == cfg.RESOURCE_BROKER:
        broker_id = _broker_for(sim, name)
        cfg.check_dynamic_broker(given)
        current = sim.cluster_configs if broker_id is None else sim.brokers[broker_id].configs
        if not validate_only:
            _set_broker_configs(sim, broker_id, given, changed=set(given) | set(current))
        return
    raise KafkaError(errors.INVALID_REQUEST, f"Unsupported resource type {resource_type}")


def _set_topic_configs(sim: ClusterCore, topic: Any, updated: dict[str, str], changed: set[str]) -> None:
    def apply() -> None:
        topic.configs = updated
        topic.refresh_throttles()

    sim.reaccount(topic.partitions if changed & _ACCOUNTED_KEYS else (), apply)
    sim._keys_epoch += 1
    if changed & _PARTITION_STATE_KEYS:
        _after_config_change(sim, topic.partitions)
    sim._dirty = True


def _set_broker_configs(
    sim: ClusterCore, broker_id: int | None, updated: dict[str, str], changed: set[str]
) -> None:
    affected: list[SimPartition] = []
    if changed & _PARTITION_STATE_KEYS:
        if broker_id is None:
            affected = [p for t in sim.topics.values() for p in t.partitions]
        else:
            affected = sorted(sim._replicas_on.get(broker_id, ()), key=lambda p: (p.topic, p.index))

    def apply() -> None:
        if broker_id is None:
            sim.cluster_configs = updated
        else:
            sim.brokers[broker_id].configs = updated

    sim.reaccount(affected if config_keys.MIN_INSYNC_REPLICAS in changed else (), apply)
    sim.broker_configs_changed()
    if affected:
        _after_config_change(sim, affected)
    sim._dirty = True


def _after_config_change(sim: ClusterCore, partitions: list[SimPartition]) -> None:
    """Enabling unclean election elects the offline partitions it concerns (KRaft: the controller's config
    replay; ZooKeeper: KafkaController.processTopicUncleanLeaderElectionEnable and its broker-level twin)."""
    for p in partitions:
        sim._track_under_min(p)
        if p.leader == -1 and sim.unclean_enabled(p.topic):
            if sim.kafka.zookeeper:
                zp = sim._zk(p)
                zp.elect_offline(sim.alive_in(p), unclean_allowed=True)
                sim._commit(p, zp)
            else:
                sim._change(p, Election.UNCLEAN)
    sim._dirty = True


@dataclass(frozen=True, slots=True)
class ReplicaLogInfo:
    """One log in a log dir, as DescribeLogDirs reports it (offsets are bytes in the model)."""

    topic: str
    partition: int
    size: int
    offset_lag: int
    is_future: bool = False


@dataclass(frozen=True, slots=True)
class LogDirDescription:
    """One log dir of a broker: its path, its volume's total and usable bytes, and the logs asked for."""

    path: str
    total_bytes: int
    usable_bytes: int
    replicas: tuple[ReplicaLogInfo, ...]
    error_code: int = 0
    """KAFKA_STORAGE_ERROR for a failed dir: no replicas, no volume figures (-1; log_dirs.py)."""


def bytes_per_log_dir(sim: ClusterCore, broker_id: int) -> dict[str, int]:
    """Bytes the logs on a broker hold, per log dir: the in-sync replicas from the dir's running total (a
    line in time, kept by ClusterCore._account), the others and the future logs one by one."""
    now = sim.now
    used: dict[str, float] = {}
    dirs = sim.brokers[broker_id].log_dirs
    for d in dirs:
        intercept, slope = sim._dir_lines.get((broker_id, d.path), (0.0, 0.0))
        used[d.path] = intercept + slope * now
    intercept, slope = sim._first_dir_lines.get(broker_id, (0.0, 0.0))  # replicas placed by default
    used[dirs[0].path] += intercept + slope * now
    for p in sim._lagging_on.get(broker_id, ()):
        path = sim.dir_of(p, broker_id)
        used[path] = used.get(path, 0.0) + p.position_exact(broker_id)
    for (_p, b), future in sim._futures.items():
        if b == broker_id:
            used[future.path] = used.get(future.path, 0.0) + future.progress.at(now)
    return {path: round(total) for path, total in used.items()}


def log_dir_descriptions(
    sim: ClusterCore, broker_id: int, tps: list[tuple[str, int]] | None
) -> list[LogDirDescription]:
    """ReplicaManager.describeLogDirs: every configured log dir, with the asked-for logs it holds.

    A log's offset lag is Kafka's: for the current log of a replica max(HW - LEO, 0), which is 0 because a
    replica's own high watermark never passes its own log end (UnifiedLog.updateHighWatermark); how far a
    follower is behind its leader is the leader's size minus its size. The usable bytes of a volume are its
    total minus other data minus the replicas in it (they grow as the log does).
    """
    broker = sim.brokers.get(broker_id)
    if broker is None or not broker.online:
        raise KafkaError(errors.BROKER_NOT_AVAILABLE, f"Broker {broker_id} is not available.")
    hosted = sim._replicas_on.get(broker_id, set())
    if tps is None:
        parts = sorted(hosted, key=lambda p: (p.topic, p.index))
    else:
        parts = []
        for topic, index in sorted(set(tps)):
            t = sim.topics.get(topic)
            p = t.partitions[index] if t is not None and 0 <= index < len(t.partitions) else None
            if p is not None and p in hosted:
                parts.append(p)
    rows: dict[str, list[ReplicaLogInfo]] = {d.path: [] for d in broker.log_dirs}
    for p in parts:
        size = p.position(broker_id)
        rows[sim.dir_of(p, broker_id)].append(ReplicaLogInfo(p.topic, p.index, size, 0))
        future = sim._futures.get((p, broker_id))
        if future is not None:  # its lag: the current log's end minus its own
            copied = min(round(future.progress.at(sim.now)), size)
            rows[future.path].append(ReplicaLogInfo(p.topic, p.index, copied, size - copied, True))
    used = bytes_per_log_dir(sim, broker_id)
    return [
        LogDirDescription(
            d.path,
            d.total_bytes,
            max(0, d.total_bytes - d.other_bytes - used.get(d.path, 0)),
            tuple(rows[d.path]),
        )
        if d.online
        else LogDirDescription(d.path, -1, -1, (), errors.KAFKA_STORAGE_ERROR)
        for d in broker.log_dirs
    ]


def describe_log_dirs(
    sim: ClusterCore, broker_id: int, tps: list[tuple[str, int]] | None
) -> list[tuple[str, list[tuple[str, int, int, int, bool]]]]:
    """[(log_dir, [(topic, partition, size, offset_lag, is_future)])] for every log dir of one broker that
    answers (a failed dir, answered KAFKA_STORAGE_ERROR, is left out, as the cluster adapter leaves it)."""
    return [
        (d.path, [(r.topic, r.partition, r.size, r.offset_lag, r.is_future) for r in d.replicas])
        for d in log_dir_descriptions(sim, broker_id, tps)
        if not d.error_code
    ]


def observed(sim: ClusterCore) -> dict[str, Any]:
    brokers = []
    for broker_id in sorted(sim.brokers):
        brokers.append(
            {
                "id": broker_id,
                "incoming": sim._incoming.get(broker_id, 0),
                "incoming_peak": sim._incoming_peak.get(broker_id, 0),
                "outgoing": sim._outgoing.get(broker_id, 0),
                "outgoing_peak": sim._outgoing_peak.get(broker_id, 0),
            }
        )
    under: list[dict[str, Any]] = []
    for p in sim._ever_under:
        under.append(
            {
                "topic": p.topic,
                "partition": p.index,
                "seconds": sim.under_min_seconds(p),
                "under_now": p in sim._under_min,
            }
        )
    under.sort(key=lambda e: (e["topic"], e["partition"]))
    return {"time": sim.now, "brokers": brokers, "under_min_isr": under}


def replica_sizes(p: SimPartition) -> dict[int, int]:
    """Bytes each replica holds, computed once per partition (in-sync replicas hold the log end)."""
    end = p._end()
    lags = p.lags
    size = round(end)
    if not lags:
        return dict.fromkeys(p.replicas, size)
    now = p._clock.now
    return {b: round(min(end, lags[b].at(now))) if b in lags else size for b in p.replicas}


def _usable(sim: ClusterCore, broker: Any) -> list[tuple[Any, int]]:
    used = bytes_per_log_dir(sim, broker.id)
    return [(d, max(0, d.total_bytes - d.other_bytes - used.get(d.path, 0))) for d in broker.log_dirs]


def partition_dict(p: SimPartition, sim: ClusterCore | None = None) -> dict[str, Any]:
    return {
        "topic": p.topic,
        "partition": p.index,
        "replicas": list(p.replicas),
        "isr": list(p.isr),
        "leader": p.leader,
        "leader_epoch": p.leader_epoch,
        "partition_epoch": p.partition_epoch,
        "adding": list(p.adding),
        "removing": list(p.removing),
        "size_bytes": p.log_end,
        "produce_bytes_per_sec": p.produce_bytes_per_sec,
        "replica_sizes": {str(b): size for b, size in replica_sizes(p).items()},
        **({"log_dirs": {str(b): sim.dir_of(p, b) for b in sorted(p.replicas)}} if sim is not None else {}),
    }


def state_dict(sim: ClusterCore) -> dict[str, Any]:
    """What the control API's GET /state returns."""
    return {
        "time": sim.now,
        "cluster_id": getattr(sim, "cluster_id", None),
        "kafka": sim.kafka.to_dict(),
        "controller_id": sim.controller_id,
        "brokers": [
            {
                "id": b.id,
                "rack": b.rack,
                "online": b.online,
                "network_in_bytes_per_sec": b.network_in,
                "network_out_bytes_per_sec": b.network_out,
                "configs": dict(b.configs),
                "log_dirs": [
                    {"path": d.path, "total_bytes": d.total_bytes, "usable_bytes": usable, "online": d.online}
                    for d, usable in _usable(sim, b)
                ],
            }
            for b in sorted(sim.brokers.values(), key=lambda b: b.id)
        ],
        "cluster_broker_configs": dict(sim.cluster_configs),
        "topics": [
            {"name": t.name, "topic_id": topic_id_text(t.topic_id), "configs": dict(t.configs)}
            for t in sorted(sim.topics.values(), key=lambda t: t.name)
        ],
        "partitions": [
            partition_dict(p, sim) for name in sorted(sim.topics) for p in sim.topics[name].partitions
        ],
        "observed": observed(sim),
    }


def partition_state(p: SimPartition, tp: TopicPartition | None = None) -> PartitionState:
    """One simulated partition as reassignd.model sees it (the daemon's view through the admin API)."""
    return PartitionState(
        tp=tp or TopicPartition(p.topic, p.index),
        replicas=tuple(p.replicas),
        # As the adapter reads Metadata: a ZooKeeper-mode cancel can leave an ISR member outside the replicas.
        isr=tuple(r for r in p.isr if r in p.replicas),
        leader=p.leader,
        adding=tuple(p.adding),
        removing=tuple(p.removing),
        size_bytes=p.log_end,
        replica_sizes=replica_sizes(p),
        produce_bytes_per_sec=p.produce_bytes_per_sec,
    )


def to_snapshot(sim: ClusterCore) -> ClusterSnapshot:
    """The cluster as reassignd.model sees it: replica sizes from each replica's position, produce rates."""
    partitions = []
    for t in sim.topics.values():
        for p in t.partitions:
            partitions.append(partition_state(p))
    return ClusterSnapshot.build(
        brokers=[Broker(b.id, b.rack, b.online) for b in sim.brokers.values()],
        partitions=partitions,
        topics=[TopicInfo(t.name, topic_id_text(t.topic_id), dict(t.configs)) for t in sim.topics.values()],
        broker_configs={b.id: dict(b.configs) for b in sim.brokers.values() if b.configs},
        cluster_configs=dict(sim.cluster_configs),
        cluster_id=getattr(sim, "cluster_id", None),
        controller_id=sim.controller_id,
    )


def replica_log_dirs(
    sim: ClusterCore, p: SimPartition, brokers: Iterable[int]
) -> tuple[dict[int, str], dict[int, str]]:
    """(the dir of each broker's current log, the dir of each future log) for these replicas of `p`, as
    DescribeLogDirs reports them (a replica moving between dirs is listed in both, the future one flagged)."""
    current: dict[int, str] = {}
    future: dict[int, str] = {}
    for b in brokers:
        current[b] = sim.dir_of(p, b)
        moving = sim._futures.get((p, b))
        if moving is not None:
            future[b] = moving.path
    return current, future
