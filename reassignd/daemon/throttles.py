"""Throttle hygiene: the I/O around the engine's throttle plans.

The engine says what the KIP-73 configs should be; this keeper makes it so, safely:
- the original value of every config is recorded in the store *before* our first write to it, so a crash
  at any point can still restore exactly what was there;
- only differences are written, offline brokers are skipped (and fixed when they return: the next diff
  still differs), and every write is checked on the next read;
- a value that changed under us since our last write is someone else's doing: reported, and only our own
  entries are put back (theirs stay);
- when nothing of ours is in flight, configs go back to their originals and the originals are forgotten.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reassignd.cluster.api import ClusterAdmin, ConfigOp, ConfigOpType
from reassignd.cluster.errors import ClusterCallError
from reassignd.daemon import failpoints
from reassignd.engine.limits import Limits
from reassignd.engine.throttle import (
    BROKER_KEYS,
    FOLLOWER_RATE,
    LEADER_RATE,
    TOPIC_KEYS,
    ConfigWrite,
    Move,
    ThrottleOriginals,
    ThrottlePlan,
    apply_writes,
    calls_per_resource,
    config_writes,
    split_entries,
    throttle_plan,
)
from reassignd.logs import get_logger
from reassignd.model import ClusterSnapshot
from reassignd.store.aio import AsyncStore
from reassignd.store.base import ConfigResource, Event, EventKind, OriginalValue, WriteBatch

log = get_logger("reassignd.throttles")

Key = tuple[str, str, str]  # (resource type, resource name, config key)


def originals_from_store(
    stored: Mapping[tuple[ConfigResource, str], OriginalValue],
    owned_partitions: Mapping[str, frozenset[int]] | None = None,
) -> ThrottleOriginals:
    topics: dict[str, dict[str, str | None]] = {}
    brokers: dict[int, dict[str, str | None]] = {}
    for (resource, key), original in stored.items():
        if resource.type == "topic" and key in TOPIC_KEYS:
            topics.setdefault(resource.name, {})[key] = original.value
        elif resource.type == "broker" and key in BROKER_KEYS:
            brokers.setdefault(int(resource.name), {})[key] = original.value
    return ThrottleOriginals(topics=topics, brokers=brokers, partitions=dict(owned_partitions or {}))


def _value(snapshot: ClusterSnapshot, key: Key) -> str | None:
    kind, name, config = key
    if kind == "topic":
        return snapshot.topic_config(name, config)
    return snapshot.broker_config(int(name), config)


@dataclass
class SyncResult:
    writes: tuple[ConfigWrite, ...] = ()
    skipped: tuple[ConfigWrite, ...] = ()
    foreign: tuple[Key, ...] = ()
    errors: tuple[str, ...] = ()
    restored: bool = False


@dataclass
class ThrottleKeeper:
    cluster: ClusterAdmin
    store: AsyncStore
    plan_id: str | None = None
    originals: ThrottleOriginals = field(default_factory=ThrottleOriginals)
    expected: dict[Key, str | None] = field(default_factory=dict)
    on_write: Any = None  # callable(action: str, count: int) for metrics
    guard: Any = None  # async callable awaited before each write (HA fencing)
    # (snapshot last synced against, that snapshot with our writes applied): a second sync in the same
    # cycle must not mistake our own writes for someone else's change.
    _synced: tuple[ClusterSnapshot, ClusterSnapshot] | None = None

    async def load(self, owned_partitions: Mapping[str, frozenset[int]] | None = None) -> None:
        self.originals = originals_from_store(await self.store.original_configs(), owned_partitions)

    def applied_rates(self) -> tuple[dict[int, float], dict[int, float]]:
        """(follower rate per receiving broker, leader rate per serving broker) we expect in force."""
        incoming: dict[int, float] = {}
        outgoing: dict[int, float] = {}
        for (kind, name, key), value in self.expected.items():
            if kind != "broker" or value is None:
                continue
            if key == FOLLOWER_RATE:
                incoming[int(name)] = float(value)
            elif key == LEADER_RATE:
                outgoing[int(name)] = float(value)
        return incoming, outgoing

    async def sync(
        self,
        snapshot: ClusterSnapshot,
        moves: Iterable[Move],
        limits: Limits,
        owned_partitions: Mapping[str, frozenset[int]],
        boosts: Mapping[int, Mapping[str, int]] | None = None,
    ) -> SyncResult:
        """Bring the throttle configs to what `moves` need; restore everything when there are none.

        `boosts` (auto-throttle) raise our rate on single brokers; an operator's rate is never touched.
        """
        moves = tuple(moves)
        given = snapshot
        if self._synced is not None and snapshot is self._synced[0]:
            snapshot = self._synced[1]  # read before our last writes: see it through them
        batch = WriteBatch()
        self._forget_deleted_topics(snapshot.deleted_topics, batch)
        foreign = self._foreign_changes(snapshot)
        if foreign:
            self._adopt(snapshot, foreign, batch)
        plan = _boosted(
            throttle_plan(snapshot, moves, limits, self.originals, owned_partitions), limits, boosts
        )
        for topic, values in plan.originals.topics.items():
            for config, value in values.items():
                if config not in self.originals.topics.get(topic, {}):
                    batch.record_original(ConfigResource("topic", topic), config, value)
        for broker, values in plan.originals.brokers.items():
            for config, value in values.items():
                if config not in self.originals.brokers.get(broker, {}):
                    batch.record_original(ConfigResource("broker", str(broker)), config, value)
        for key in foreign:
            batch.append(
                Event(
                    EventKind.FOREIGN_CHANGE,
                    plan_id=self.plan_id,
                    data={
                        "resource": key[0],
                        "name": key[1],
                        "config": key[2],
                        "expected": self.expected.get(key),
                        "found": _value(snapshot, key),
                    },
                )
            )
            log.warning("throttle changed by someone else", resource=key[0], name=key[1], config=key[2])
        if batch:
            await self.store.commit(batch)  # originals are durable before the first write that needs them
        self.originals = plan.originals

        online = snapshot.online_broker_ids()
        writes = config_writes(plan, snapshot)
        skipped = tuple(w for w in writes if w.resource == "broker" and int(w.name) not in online)
        to_apply = [w for w in writes if w not in skipped]
        errors = await self._apply(to_apply)
        applied = [w for w in to_apply if _resource_of(w) not in {e[0] for e in errors}]
        after = apply_writes(snapshot, applied)
        self._synced = (given, after)
        self._remember(after, plan.topics.keys(), plan.brokers.keys())
        if applied:
            await self._journal(applied)

        restored = False
        if not moves and not skipped and not errors:
            restored = await self._forget_if_restored(after)
        return SyncResult(
            writes=tuple(applied),
            skipped=skipped,
            foreign=tuple(foreign),
            errors=tuple(f"{kind} {name}: {message}" for (kind, name), message in errors),
            restored=restored,
        )

    def _forget_deleted_topics(self, deleted: frozenset[str], batch: WriteBatch) -> None:
        """A deleted topic's configs went with it: nothing is left to restore there, and its vanished
        throttles are nobody's change."""
        stale = [k for k in self.expected if k[0] == "topic" and k[1] in deleted]
        gone = sorted((deleted & set(self.originals.topics)) | {k[1] for k in stale})
        if not gone:
            return
        for key in stale:
            del self.expected[key]
        for topic in gone:
            for config in self.originals.topics.get(topic, {}):
                batch.forget_original(ConfigResource("topic", topic), config)
        self.originals = ThrottleOriginals(
            topics={t: v for t, v in self.originals.topics.items() if t not in deleted},
            brokers=self.originals.brokers,
            partitions={t: v for t, v in self.originals.partitions.items() if t not in deleted},
        )
        log.info("throttles of a deleted topic went with it", plan=self.plan_id, topics=gone)

    def _foreign_changes(self, snapshot: ClusterSnapshot) -> list[Key]:
        online = snapshot.online_broker_ids()
        changed = []
        for key, value in self.expected.items():
            if key[0] == "broker" and int(key[1]) not in online:
                continue
            if _value(snapshot, key) != value:
                changed.append(key)
        return changed

    def _adopt(self, snapshot: ClusterSnapshot, foreign: list[Key], batch: WriteBatch) -> None:
        """What another tool now has is theirs: recorded as the original, so we neither remove it now
        nor overwrite it later, and restore it at the end. Only entries we added stay ours."""
        topics = {t: dict(v) for t, v in self.originals.topics.items()}
        brokers = {b: dict(v) for b, v in self.originals.brokers.items()}
        for key in foreign:
            kind, name, config = key
            current = _value(snapshot, key)
            if kind == "topic":
                original = topics.setdefault(name, {}).get(config)
                added_by_us = set(split_entries(self.expected.get(key))) - set(split_entries(original))
                theirs = [e for e in split_entries(current) if e not in added_by_us]
                adopted = ",".join(theirs) if theirs else None
                topics[name][config] = adopted
            else:
                adopted = current
                brokers.setdefault(int(name), {})[config] = adopted
            resource = ConfigResource(kind, name)
            batch.forget_original(resource, config)
            batch.record_original(resource, config, adopted)
        self.originals = ThrottleOriginals(
            topics=topics, brokers=brokers, partitions=self.originals.partitions
        )

    def _remember(self, after: ClusterSnapshot, topics: Iterable[str], brokers: Iterable[int]) -> None:
        self.expected = {}
        for topic in topics:
            for key in TOPIC_KEYS:
                self.expected[("topic", topic, key)] = after.topic_config(topic, key)
        for broker in brokers:
            for key in BROKER_KEYS:
                self.expected[("broker", str(broker), key)] = after.broker_config(broker, key)

    async def _apply(self, writes: list[ConfigWrite]) -> list[tuple[tuple[str, str], str]]:
        grouped: dict[tuple[str, str], list[ConfigWrite]] = {}
        for write in writes:
            grouped.setdefault(_resource_of(write), []).append(write)
        errors = []
        for (kind, name), resource_writes in sorted(grouped.items()):
            try:
                for writes_in_call in calls_per_resource(resource_writes):
                    call = [ConfigOp(w.key, ConfigOpType[w.op], w.value) for w in writes_in_call]
                    if self.guard is not None:
                        await self.guard()
                    if kind == "topic":
                        await self.cluster.alter_topic_configs(name, call)
                    else:
                        await self.cluster.alter_broker_configs(int(name), call)
                    failpoints.hit("after_throttle_write")
            except ClusterCallError as exc:
                errors.append(((kind, name), str(exc)))
                log.warning(
                    "throttle write failed; retried next cycle", resource=kind, name=name, error=str(exc)
                )
        if self.on_write is not None and writes:
            self.on_write("write", len(writes) - sum(len(grouped[r]) for r, _ in errors))
        return errors

    async def _journal(self, applied: list[ConfigWrite]) -> None:
        batch = WriteBatch()
        for write in applied:
            kind = EventKind.THROTTLE_SET if write.op in ("SET", "APPEND") else EventKind.THROTTLE_RESTORED
            batch.append(
                Event(
                    kind,
                    plan_id=self.plan_id,
                    data={
                        "resource": write.resource,
                        "name": write.name,
                        "config": write.key,
                        "op": write.op,
                        "value": write.value,
                    },
                )
            )
        await self.store.commit(batch)

    async def _forget_if_restored(self, after: ClusterSnapshot) -> bool:
        """With nothing in flight and every config back at its original, the originals are done with."""
        batch = WriteBatch()
        for topic, values in self.originals.topics.items():
            owned = self.originals.partitions.get(topic, frozenset())
            for key, original in values.items():
                if _ours_left(after.topic_config(topic, key), original, owned):
                    return False
                batch.forget_original(ConfigResource("topic", topic), key)
        for broker, values in self.originals.brokers.items():
            for key, original in values.items():
                if after.broker_config(broker, key) == original or original is not None:
                    batch.forget_original(ConfigResource("broker", str(broker)), key)
                else:
                    return False
        if batch:
            await self.store.commit(batch)
        self.originals = ThrottleOriginals()
        self.expected = {}
        return True


def _boosted(
    plan: ThrottlePlan, limits: Limits, boosts: Mapping[int, Mapping[str, int]] | None
) -> ThrottlePlan:
    if not boosts:
        return plan
    ours = {LEADER_RATE: limits.leader_throttled_rate, FOLLOWER_RATE: limits.follower_throttled_rate}
    brokers = dict(plan.brokers)
    for broker, rates in boosts.items():
        desired = dict(brokers.get(broker, {}))
        for key, rate in rates.items():
            if desired.get(key) is not None and desired.get(key) == str(ours[key]):
                desired[key] = str(rate)
        brokers[broker] = desired
    return replace(plan, brokers=brokers)


def _resource_of(write: ConfigWrite) -> tuple[str, str]:
    return (write.resource, write.name)


def _ours_left(current: str | None, original: str | None, owned: frozenset[int]) -> bool:
    """Whether `current` still holds entries of ours: not the operator's, for partitions we moved."""
    theirs = set(split_entries(original))
    for entry in split_entries(current):
        if entry in theirs or entry == "*":
            continue
        partition = entry.split(":", 1)[0]
        if partition.isdigit() and int(partition) in owned:
            return True
    return False
