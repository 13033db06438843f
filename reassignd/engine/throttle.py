"""Throttles for our moves: KIP-542 semantics on the KIP-73 mechanism, merged with the operators' own.

KIP-73 throttles only replicas outside the ISR, listed per topic as `partition:broker` entries, at per-broker
rates. For each step in flight we list its source replicas (they can lead the moving partition) under
`leader.replication.throttled.replicas` and its adding replicas under `follower...`, as the stock
kafka-reassign-partitions tool does, and set the leader rate on brokers serving moves and the follower rate
on brokers receiving them (nowhere else).

Ownership is decided by what was there before we first touched a topic or broker (`ThrottleOriginals`,
which the caller persists): an operator's entries and rates are never removed or overwritten, a `*` entry
is left alone, and when nothing of ours is in flight the config returns to exactly its original value.
`config_writes` emits only the changes, so configs are not rewritten every batch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final

from reassignd import config_keys
from reassignd.engine.limits import LONG_MAX, Limits
from reassignd.engine.state import ExecutionState
from reassignd.model import ClusterSnapshot, TopicPartition

TOPIC_KEYS: Final = (
    config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS,
    config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS,
)
REPLICATION_RATE_KEYS: Final = (
    config_keys.LEADER_REPLICATION_THROTTLED_RATE,
    config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE,
)
BROKER_KEYS: Final = (
    config_keys.LEADER_REPLICATION_THROTTLED_RATE,
    config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE,
    config_keys.REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND,
)
"""Every broker config we may write: a broker's original is recorded per key, for the keys its moves need
(the replication rates for one serving or receiving copies, the log-dir rate for one moving between its
log dirs)."""

Values = Mapping[str, str | None]


@dataclass(frozen=True, slots=True)
class Move:
    """One step in flight, as the throttles see it."""

    tp: TopicPartition
    source: tuple[int, ...]
    adding: tuple[int, ...]


def moves_in_flight(state: ExecutionState) -> tuple[Move, ...]:
    return tuple(Move(tp, rec.source, rec.adding) for tp, rec in state.in_flight() if rec.adding)


@dataclass(frozen=True, slots=True)
class ThrottleOriginals:
    """The throttle configs as they were before our first write; None means the key was unset."""

    topics: Mapping[str, Values] = field(default_factory=lambda: MappingProxyType({}))
    brokers: Mapping[int, Values] = field(default_factory=lambda: MappingProxyType({}))
    partitions: Mapping[str, frozenset[int]] = field(default_factory=lambda: MappingProxyType({}))
    """Per topic, the partitions we have listed entries for: ours to clean up when their moves end."""

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "topics": {t: dict(v) for t, v in sorted(self.topics.items())},
            "brokers": {str(b): dict(v) for b, v in sorted(self.brokers.items())},
            "partitions": {t: sorted(p) for t, p in sorted(self.partitions.items())},
        }

    @classmethod
    def from_json_dict(cls, data: Mapping[str, Any]) -> ThrottleOriginals:
        topics = {str(t): {str(k): _opt(v) for k, v in vals.items()} for t, vals in data["topics"].items()}
        brokers = {int(b): {str(k): _opt(v) for k, v in vals.items()} for b, vals in data["brokers"].items()}
        parts = {str(t): frozenset(int(p) for p in ps) for t, ps in data.get("partitions", {}).items()}
        return cls(MappingProxyType(topics), MappingProxyType(brokers), MappingProxyType(parts))


def _opt(value: object) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class ThrottlePlan:
    """Desired values per topic and per broker (None: unset), plus what we may clean up."""

    topics: Mapping[str, Values]
    brokers: Mapping[int, Values]
    originals: ThrottleOriginals
    metered: Mapping[int, Mapping[str, int]] = field(default_factory=lambda: MappingProxyType({}))
    """Per broker and rate key, the bytes/s of in-sync replication its quota meters for the partitions we
    list (`in_sync_metered`), included in the rate desired for our moves."""


@dataclass(frozen=True, slots=True, order=True)
class ConfigWrite:
    """One IncrementalAlterConfigs operation: SET, DELETE, APPEND or SUBTRACT (list configs)."""

    resource: str  # "topic" or "broker"
    name: str
    key: str
    op: str
    value: str | None = None


@dataclass(frozen=True, slots=True)
class _Wanted:
    """The entries and brokers our moves in flight need throttled."""

    leader_entries: dict[str, set[str]]
    follower_entries: dict[str, set[str]]
    serving: set[int]
    receiving: set[int]
    moving_dirs: set[int]
    owned: dict[str, set[int]]
    metered: dict[int, dict[str, float]] = field(default_factory=dict)


def throttle_plan(
    snapshot: ClusterSnapshot,
    moves: Iterable[Move],
    limits: Limits,
    originals: ThrottleOriginals,
    owned_partitions: Mapping[str, frozenset[int]] | None = None,
    *,
    log_dir_brokers: Iterable[int] = (),
    produce: Mapping[TopicPartition, float] | None = None,
) -> ThrottlePlan:
    """What the throttle configs should be for `moves`; originals grow with first-touched resources.

    Entries are cleaned up for every partition we ever listed (remembered in the originals) and for
    `owned_partitions`, e.g. the whole plan's partitions per topic. `log_dir_brokers` have a move between
    their log dirs running: they get the log-dir rate (`replica.alter.log.dirs.io.max.bytes.per.second`).
    `produce`: the moving partitions' produce rates (bytes/s): the in-sync replication a broker's quota
    meters for the partitions we list is added to our rate there (`in_sync_metered`).
    """
    wanted = _wanted(
        snapshot,
        moves,
        limits,
        originals=originals,
        owned_partitions=owned_partitions or {},
        log_dir_brokers=log_dir_brokers,
        produce=produce or {},
    )
    topic_originals = _topic_originals(snapshot, originals, wanted)
    broker_originals = _broker_originals(snapshot, originals, wanted)
    topics: dict[str, Values] = {}
    for topic, original in topic_originals.items():
        topics[topic] = MappingProxyType(
            {
                config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS: _merged_list(
                    original.get(config_keys.LEADER_REPLICATION_THROTTLED_REPLICAS),
                    wanted.leader_entries.get(topic, set()),
                ),
                config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS: _merged_list(
                    original.get(config_keys.FOLLOWER_REPLICATION_THROTTLED_REPLICAS),
                    wanted.follower_entries.get(topic, set()),
                ),
            }
        )
    brokers = {
        b: _broker_rates(snapshot, limits, wanted, b, original) for b, original in broker_originals.items()
    }
    return ThrottlePlan(
        topics=MappingProxyType(topics),
        brokers=MappingProxyType(brokers),
        originals=ThrottleOriginals(
            MappingProxyType(topic_originals),
            MappingProxyType(broker_originals),
            MappingProxyType({t: frozenset(p) for t, p in wanted.owned.items()}),
        ),
        metered=MappingProxyType(
            {b: MappingProxyType({k: math.ceil(v) for k, v in m.items()}) for b, m in wanted.metered.items()}
        ),
    )


def _wanted(
    snapshot: ClusterSnapshot,
    moves: Iterable[Move],
    limits: Limits,
    *,
    originals: ThrottleOriginals,
    owned_partitions: Mapping[str, frozenset[int]],
    log_dir_brokers: Iterable[int],
    produce: Mapping[TopicPartition, float],
) -> _Wanted:
    wanted = _Wanted({}, {}, set(), set(), set(), {t: set(p) for t, p in originals.partitions.items()})
    for topic, parts in owned_partitions.items():
        wanted.owned.setdefault(topic, set()).update(parts)
    for move in moves:
        topic, partition = move.tp.topic, move.tp.partition
        wanted.owned.setdefault(topic, set()).add(partition)
        leader_side = limits.leader_throttled_rate is not None and not leader_side_unthrottled(snapshot, move)
        if leader_side:
            wanted.leader_entries.setdefault(topic, set()).update(f"{partition}:{b}" for b in move.source)
            wanted.serving.update(move.source)
        follower_side = limits.follower_throttled_rate is not None
        if follower_side:
            wanted.follower_entries.setdefault(topic, set()).update(f"{partition}:{b}" for b in move.adding)
            wanted.receiving.update(move.adding)
        for broker, key, rate in in_sync_metered(
            snapshot, move, produce.get(move.tp, 0.0), leader_side=leader_side, follower_side=follower_side
        ):
            metered = wanted.metered.setdefault(broker, {})
            metered[key] = metered.get(key, 0.0) + rate
    if limits.log_dir_throttled_rate is not None:
        wanted.moving_dirs.update(log_dir_brokers)
    return wanted


def in_sync_metered(
    snapshot: ClusterSnapshot, move: Move, produce: float, *, leader_side: bool, follower_side: bool
) -> list[tuple[int, str, float]]:
    """(broker, rate key, bytes/s): the in-sync replication of `move`'s partition that a quota of ours meters.

    Kafka records every byte of a throttled partition into the replication quota, in sync or not, and holds
    back only the replicas out of the ISR (leader: `KafkaApis.sizeOfThrottledPartitions` on every follower
    fetch, `ReplicaManager.shouldLeaderThrottle`; follower: `ReplicaFetcherThread.processPartitionData`,
    `RemoteLeaderEndPoint.shouldFollowerThrottle`). So a leader listed for a partition produced to at w
    with k in-sync followers meters k * w, and the replicas out of sync share its rate less that; an adding
    replica in sync (copied, its step waiting for the rest) meters w on its own broker's follower quota.
    """
    state = snapshot.partitions.get(move.tp)
    if state is None or produce <= 0:
        return []
    out: list[tuple[int, str, float]] = []
    leader = state.leader
    if leader_side and leader in move.source:
        followers = sum(1 for b in state.isr if b != leader)
        if followers:
            out.append((leader, config_keys.LEADER_REPLICATION_THROTTLED_RATE, produce * followers))
    if follower_side:
        out += [
            (b, config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE, produce)
            for b in move.adding
            if b in state.isr and b != leader
        ]
    return out


def _topic_originals(
    snapshot: ClusterSnapshot, originals: ThrottleOriginals, wanted: _Wanted
) -> dict[str, Values]:
    """The originals, with those of the topics first touched now."""
    topic_originals = dict(originals.topics)
    for topic in set(wanted.leader_entries) | set(wanted.follower_entries):
        if topic not in topic_originals:
            topic_originals[topic] = MappingProxyType(
                {key: snapshot.topic_config(topic, key) for key in TOPIC_KEYS}
            )
    return topic_originals


def _broker_originals(
    snapshot: ClusterSnapshot, originals: ThrottleOriginals, wanted: _Wanted
) -> dict[int, Values]:
    """The originals, with those of the brokers and keys first touched now."""
    broker_originals = dict(originals.brokers)
    needs = [(b, REPLICATION_RATE_KEYS) for b in wanted.serving | wanted.receiving] + [
        (b, (config_keys.REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND,)) for b in wanted.moving_dirs
    ]
    for broker, keys in needs:
        have = broker_originals.get(broker, {})
        missing = [key for key in keys if key not in have]
        if missing:
            broker_originals[broker] = MappingProxyType(
                {**have, **{key: snapshot.broker_config(broker, key) for key in missing}}
            )
    return broker_originals


def _broker_rates(
    snapshot: ClusterSnapshot, limits: Limits, wanted: _Wanted, broker: int, original: Values
) -> Values:
    add = limits.operator_rate_policy == "add"
    metered = wanted.metered.get(broker, {})
    return MappingProxyType(
        {
            key: _rate(
                original.get(key),
                broker in users,
                None if ours is None else ours + math.ceil(metered.get(key, 0.0)),
                operator=_operator_rate(original.get(key), snapshot.cluster_configs.get(key))
                if add
                else None,
            )
            for key, users, ours in (
                (config_keys.LEADER_REPLICATION_THROTTLED_RATE, wanted.serving, limits.leader_throttled_rate),
                (
                    config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE,
                    wanted.receiving,
                    limits.follower_throttled_rate,
                ),
                (
                    config_keys.REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND,
                    wanted.moving_dirs,
                    limits.log_dir_throttled_rate,
                ),
            )
            if key in original
        }
    )


def split_entries(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def _is_wildcard(value: str | None) -> bool:
    return split_entries(value) == ["*"]


def _entry_key(entry: str) -> tuple[int, int]:
    partition, _, broker = entry.partition(":")
    return (int(partition), int(broker))


def _merged_list(original: str | None, ours: set[str]) -> str | None:
    if _is_wildcard(original):
        return original
    theirs = split_entries(original)
    theirs_set = set(theirs)
    extra = sorted((e for e in ours if e not in theirs_set), key=_entry_key)
    merged = theirs + extra
    if not extra:
        return original
    return ",".join(merged)


def leader_side_unthrottled(snapshot: ClusterSnapshot, move: Move) -> bool:
    """No leader-side entry for a partition while a replica of it that is not being moved is out of sync.

    KIP-73's leader throttle applies to every follower of a listed partition that is outside the ISR, so a
    listed leader would also throttle that replica's catch-up, which is not reassignment traffic (KIP-542:
    "throttle only reassignment traffic"). The moving replicas stay throttled on the follower side (their
    broker's follower rate); the leader's outbound for this partition is then unthrottled. A replica on a
    stopped broker fetches nothing, so it does not count (the leader side stays throttled meanwhile).
    """
    return bool(lagging_replicas(snapshot, move))


def lagging_replicas(snapshot: ClusterSnapshot, move: Move) -> list[int]:
    """Replicas of the move's partition, not being moved, that are out of sync on a running broker."""
    state = snapshot.partitions.get(move.tp)
    if state is None:
        return []
    moving = set(move.adding) | set(state.adding) | set(state.removing)
    return [b for b in state.replicas if b not in state.isr and b not in moving and snapshot.is_online(b)]


def _operator_rate(broker_value: str | None, cluster_default: str | None) -> int | None:
    """The operator's rate in force on a broker: its own dynamic value, else the cluster-wide default."""
    for value in (broker_value, cluster_default):
        if value is not None:
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _rate(original: str | None, in_use: bool, ours: int | None, *, operator: int | None = None) -> str | None:
    """The broker-level rate: the operator's when we do not use the broker; with our moves, ours, or with an
    operator's rate in force, theirs (`keep`) or theirs plus ours (`add`: `operator` is their rate)."""
    if not in_use or ours is None:
        return original
    if operator is not None:
        return str(min(operator + ours, LONG_MAX))
    if original is not None:
        return original  # keep: the operator's rate binds our moves too
    return str(ours)


def steadied(plan: ThrottlePlan, snapshot: ClusterSnapshot) -> ThrottlePlan:
    """The plan with a rate that includes in-sync replication left as it is where it is up to a quarter of
    that replication above the rate desired: produce rates are estimates that move a little every cycle,
    and each move would be a config write (and a journal entry). A rate below what is desired, or above by
    more, is written; with nothing metered the rate is exact."""
    brokers = dict(plan.brokers)
    changed = False
    for broker, metered in plan.metered.items():
        desired = dict(brokers.get(broker, {}))
        for key, extra in metered.items():
            want = _int(desired.get(key))
            have = _int(snapshot.broker_config(broker, key))
            if want is not None and have is not None and want < have <= want + extra // 4:
                desired[key] = str(have)
                changed = True
        brokers[broker] = MappingProxyType(desired)
    return replace(plan, brokers=MappingProxyType(brokers)) if changed else plan


def _int(value: str | None) -> int | None:
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


def config_writes(plan: ThrottlePlan, snapshot: ClusterSnapshot) -> tuple[ConfigWrite, ...]:
    """The operations that take the current configs to `plan`, touching only what differs."""
    writes: list[ConfigWrite] = []
    for topic, desired in sorted(plan.topics.items()):
        originals = plan.originals.topics.get(topic, {})
        for key in TOPIC_KEYS:
            writes.extend(
                _list_writes(
                    topic,
                    key,
                    current=snapshot.topic_config(topic, key),
                    desired=desired.get(key),
                    original=originals.get(key),
                    owned=plan.originals.partitions.get(topic, frozenset()),
                )
            )
    for broker, desired in sorted(plan.brokers.items()):
        originals = plan.originals.brokers.get(broker, {})
        for key in BROKER_KEYS:
            if key not in desired:
                continue
            current = snapshot.broker_config(broker, key)
            want = desired.get(key)
            if current == want:
                continue
            if want is None:
                writes.append(ConfigWrite("broker", str(broker), key, "DELETE"))
            else:
                writes.append(ConfigWrite("broker", str(broker), key, "SET", want))
    return tuple(writes)


def _list_writes(
    topic: str,
    key: str,
    *,
    current: str | None,
    desired: str | None,
    original: str | None,
    owned: frozenset[int],
) -> list[ConfigWrite]:
    if _is_wildcard(original) or _is_wildcard(current):
        return []  # `*` throttles everything already; it is the operator's, leave it alone
    if current == "" and original is None and desired is None:
        return [ConfigWrite("topic", topic, key, "DELETE")]  # what a SUBTRACT of all left: the key, empty
    have = split_entries(current)
    want = split_entries(desired)
    have_set, want_set = set(have), set(want)
    theirs = set(split_entries(original))
    append = [e for e in want if e not in have_set]
    subtract = [e for e in have if e not in want_set and e not in theirs and _owned(e, owned)]
    if not append and not subtract:
        return []
    if desired is None and current is not None and len(subtract) == len(have):
        return [ConfigWrite("topic", topic, key, "DELETE")]  # back to unset, exactly as it was
    writes = []
    if subtract:
        writes.append(ConfigWrite("topic", topic, key, "SUBTRACT", ",".join(subtract)))
    if append:
        writes.append(ConfigWrite("topic", topic, key, "APPEND", ",".join(append)))
    return writes


def _owned(entry: str, owned: frozenset[int]) -> bool:
    try:
        return _entry_key(entry)[0] in owned
    except ValueError:
        return False


def apply_writes(snapshot: ClusterSnapshot, writes: Iterable[ConfigWrite]) -> ClusterSnapshot:
    """What Kafka's IncrementalAlterConfigs would make of the configs (for dry runs and tests)."""
    topics = dict(snapshot.topics)
    brokers = {b: dict(c) for b, c in snapshot.broker_configs.items()}
    for write in writes:
        if write.resource == "broker":
            configs = brokers.setdefault(int(write.name), {})
            current = configs.get(write.key)
        else:
            info = topics[write.name]
            configs = dict(info.configs)
            current = configs.get(write.key)
        value = _applied(current, write)
        if value is None:
            configs.pop(write.key, None)
        else:
            configs[write.key] = value
        if write.resource == "topic":
            topics[write.name] = replace(topics[write.name], configs=configs)
    return replace(snapshot, topics=topics, broker_configs=brokers)


def calls_per_resource(writes: Iterable[ConfigWrite]) -> list[list[ConfigWrite]]:
    """One resource's writes split into the IncrementalAlterConfigs calls Kafka accepts: it refuses two
    operations on one key in one call (duplicate keys).

    When a list key both loses our finished entries and gains new ones, the SUBTRACT goes in a first call
    and the APPEND in a second: each keeps whatever else is in the list (a SET would overwrite an
    operator's concurrent change), and throttles are synced before new steps start, so the brief
    in-between state throttles nothing that is moving.
    """
    first: list[ConfigWrite] = []
    second: list[ConfigWrite] = []
    keys_in_first: set[str] = set()
    for write in sorted(writes, key=lambda w: (w.op == "APPEND", w.key)):
        if write.key in keys_in_first:
            second.append(write)
        else:
            first.append(write)
            keys_in_first.add(write.key)
    return [call for call in (first, second) if call]


def _applied(current: str | None, write: ConfigWrite) -> str | None:
    if write.op == "SET":
        return write.value
    if write.op == "DELETE":
        return None
    have = split_entries(current)
    items = split_entries(write.value)
    if write.op == "APPEND":
        have_set = set(have)
        return ",".join(have + [e for e in items if e not in have_set])
    if write.op == "SUBTRACT":
        removed = set(items)
        return ",".join(e for e in have if e not in removed)
    raise ValueError(f"unknown config operation {write.op!r}")
