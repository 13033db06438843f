"""The reading part: what each cycle reads of the plan's partitions, and what the run keeps of it.

Log-dir sizes cost one DescribeLogDirs per broker, and most of a plan sits still between its steps: the
sizes of all partitions are read every `size_refresh_cycles` cycles (progress, ordering, produce rates),
those in flight every cycle from their leader and adding replicas only. Between full reads the sizes last
read stand in for the rest (`sized`). Each observation becomes a `Sight`: the snapshot as the engine's
decisions see it (`view`: sizes only where bytes move, so unchanged partitions compare equal and cost
nothing downstream), the same with every size known (`full`), and what changed since the last view.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final

from reassignd import config_keys
from reassignd.engine import cluster_clock
from reassignd.engine.cluster_clock import CLOCK_KEYS, ClusterTime
from reassignd.engine.decide import changed_partitions
from reassignd.engine.progress import source_size
from reassignd.engine.run.effects import Log
from reassignd.engine.run.outbox import Outbox
from reassignd.engine.state import ExecutionState
from reassignd.engine.throttle import BROKER_KEYS, TOPIC_KEYS
from reassignd.engine.tracking import produce_rates
from reassignd.model import ClusterSnapshot, ReassignmentPlan, TopicPartition, copy_of

SNAPSHOT_TOPIC_KEYS: Final = (*TOPIC_KEYS, config_keys.MIN_INSYNC_REPLICAS)
SIZE_REFRESH_CYCLES: Final = 30
Replicas = tuple[int, ...]
_EMPTY: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ReadRequest:
    """What the next observation must read (the executor's snapshot call)."""

    partitions: tuple[TopicPartition, ...]
    with_sizes: bool | Mapping[TopicPartition, tuple[int, ...]]
    """True: every replica's size; a mapping: the leader's and these brokers' only (copies in flight)."""
    full: bool = False
    """Every partition's size is read (each from its leader): a full read, every `size_refresh_cycles`."""
    broker_config_keys: tuple[str, ...] = (*BROKER_KEYS, *CLOCK_KEYS)
    topic_config_keys: tuple[str, ...] = SNAPSHOT_TOPIC_KEYS
    min_insync_topics: tuple[str, ...] = ()
    """Topics whose effective min.insync.replicas (static broker configs included) is still unknown."""


@dataclass(frozen=True, slots=True)
class Observed:
    now: float
    snapshot: ClusterSnapshot
    request: ReadRequest
    min_insync: Mapping[str, str] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, slots=True)
class Reading:
    """What the run keeps of its reads between cycles."""

    cycles: int = 0
    sizes: Mapping[TopicPartition, tuple[int, Mapping[int, int]]] = field(default_factory=lambda: _EMPTY)
    """The last sizes read of each partition: (size_bytes, replica_sizes)."""
    readings: Mapping[TopicPartition, tuple[float, int]] = field(default_factory=lambda: _EMPTY)
    """(time, source size) of each partition at the last full read; produce rates come from two."""
    produce: Mapping[TopicPartition, float] = field(default_factory=lambda: _EMPTY)
    """Produce rates: the same object until read again, so the ETA keeps its terms while it is."""
    min_insync: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    """Each topic's effective min.insync.replicas, once read."""
    deleted_topics: frozenset[str] = frozenset()
    fresh: frozenset[TopicPartition] = frozenset()
    """The partitions whose sizes the last read carried."""
    last_view: ClusterSnapshot | None = None
    replicas_now: Mapping[TopicPartition, Replicas] = field(default_factory=lambda: _EMPTY)
    """Each plan partition's replica list at the last read."""
    under_min_isr: frozenset[TopicPartition] = frozenset()
    clock: ClusterTime | None = None
    """The cluster's clock at the last read (cluster_clock.py)."""


@dataclass(frozen=True, slots=True)
class Sight:
    """One observation as the parts see it."""

    now: float
    read: ClusterSnapshot
    """As read: its configs are what the throttle book compares."""
    view: ClusterSnapshot
    full: ClusterSnapshot
    changed: set[TopicPartition] | None
    """Partitions whose view changed since the last one (None: all of them, e.g. at the first)."""
    full_read: bool
    """Every size was read this cycle."""
    clock: ClusterTime
    """The cluster's clock at this read: rates are measured on it (`now` is the wall clock's stamp)."""


def request(
    reading: Reading,
    plan: ReassignmentPlan,
    execution: ExecutionState | None,
    log_dirs_running: Mapping[TopicPartition, tuple[int, ...]],
    refresh_cycles: int,
) -> ReadRequest:
    targets = plan.targets
    deleted = reading.deleted_topics
    polled = tuple(tp for tp in targets if tp.topic not in deleted) if deleted else tuple(targets)
    missing = tuple(sorted(t for t in plan.topics() if t not in reading.min_insync))
    moving = {} if execution is None else {tp: rec.adding for tp, rec in execution.in_flight()}
    for tp, brokers in log_dirs_running.items():  # their dirs, each cycle
        moving[tp] = (*moving.get(tp, ()), *brokers)
    if execution is None or not reading.sizes or reading.cycles % refresh_cycles == 0:
        full = _full_read(polled, plan, reading, moving)
        return ReadRequest(polled, full, full=True, min_insync_topics=missing)
    return ReadRequest(polled, MappingProxyType(moving), min_insync_topics=missing)


def _full_read(
    polled: tuple[TopicPartition, ...],
    plan: ReassignmentPlan,
    reading: Reading,
    moving: Mapping[TopicPartition, tuple[int, ...]],
) -> Mapping[TopicPartition, tuple[int, ...]]:
    """Every partition's size from its leader (what progress, ETA, ordering and produce rates use: a
    follower's size is only read where it copies), and every replica of a partition the plan names log
    dirs for (its replicas' dirs). Every replica of 100,000 partitions was 300,000 sizes on 1,000 brokers,
    a third of a first cycle at the largest clusters (bench_daemon's million)."""
    asked: dict[TopicPartition, tuple[int, ...]] = dict.fromkeys(polled, ())
    asked.update(moving)
    for tp in plan.log_dirs:
        if tp in asked:
            asked[tp] = tuple({*asked[tp], *plan.targets[tp], *reading.replicas_now.get(tp, ())})
    return MappingProxyType(asked)


def observed(
    reading: Reading,
    event: Observed,
    plan: ReassignmentPlan,
    moving: frozenset[TopicPartition],
    out: Outbox,
    *,
    first: bool,
) -> tuple[Reading, Sight]:
    """What the snapshot shows, with the sizes kept where it carries none; `moving`: the partitions in
    flight before this observation; `first`: no execution state yet (everything counts as changed)."""
    min_insync = {**reading.min_insync, **event.min_insync}
    clock = cluster_clock.read(event.snapshot, event.now, reading.clock)
    read = cluster_clock.without_clock(event.snapshot)
    snapshot = _with_min_insync(stopped_out_of_sync(read), min_insync)
    deleted = reading.deleted_topics
    if snapshot.deleted_topics - deleted:
        deleted = deleted | snapshot.deleted_topics
        out.before.append(
            Log("warning", "topics of the plan were deleted", {"topics": sorted(snapshot.deleted_topics)})
        )
    full_read = event.request.full
    fresh = frozenset(plan.targets) if full_read else moving
    reading = replace(
        _sizes_read(reading, snapshot, fresh, clock.now, full_read=full_read),
        clock=clock,
        min_insync=MappingProxyType(min_insync),
        deleted_topics=deleted,
        fresh=fresh,
        cycles=reading.cycles + 1,
    )
    view = _stripped(snapshot, moving) if full_read else snapshot
    last = reading.last_view
    changed = None if first or last is None else changed_partitions(last, view)
    full = snapshot if full_read else sized(view, reading, changed)
    return reading, Sight(event.now, read, view, full, changed, full_read, clock)


def stopped_out_of_sync(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """The snapshot with every broker the cluster lists as stopped taken out of the ISRs.

    Kafka's controller takes a stopped broker out of every ISR as it fences it (KRaft:
    `ReplicationControlManager.handleBrokerFenced`; ZooKeeper mode:
    `KafkaController.onReplicasBecomeOffline`), but brokers' Metadata shows that a moment later, while the
    broker list may already lack it. Read as in sync, the stopped broker was kept by a step as a replica
    that costs nothing to keep, and the step then waited for its return although the plan's target drops it
    (rule 1 of steps.py: an out-of-sync replica leaves with the new preferred leader)."""
    stopped = {b for b, broker in snapshot.brokers.items() if not broker.online}
    if not stopped:
        return snapshot
    fixed = [
        replace(p, isr=tuple(b for b in p.isr if b not in stopped))
        for p in snapshot.partitions.values()
        if not stopped.isdisjoint(p.isr)
    ]
    return snapshot.with_partitions(fixed) if fixed else snapshot


def _with_min_insync(snapshot: ClusterSnapshot, min_insync: Mapping[str, str]) -> ClusterSnapshot:
    """min.insync.replicas of each topic as its effective value (static broker configs included)."""
    topics = {
        name: replace(info, configs={**info.configs, config_keys.MIN_INSYNC_REPLICAS: min_insync[name]})
        for name, info in snapshot.topics.items()
        if name in min_insync and config_keys.MIN_INSYNC_REPLICAS not in info.configs
    }
    return replace(snapshot, topics={**snapshot.topics, **topics}) if topics else snapshot


def _sizes_read(
    reading: Reading,
    snapshot: ClusterSnapshot,
    fresh: frozenset[TopicPartition],
    now: float,
    *,
    full_read: bool,
) -> Reading:
    sizes = copy_of(reading.sizes)
    readings = copy_of(reading.readings)
    now_readings = {}
    for tp in fresh:
        p = snapshot.partitions.get(tp)
        if p is not None and p.has_sizes:
            sizes[tp] = (p.size_bytes, p.replica_sizes)
            now_readings[tp] = (now, source_size(p))
    produce = reading.produce  # the same object until read again: the ETA keeps its terms while it is
    if full_read:
        produce = MappingProxyType(copy_of(reading.produce) | produce_rates(readings, now_readings))
        readings.update(now_readings)
    return replace(
        reading, sizes=MappingProxyType(sizes), readings=MappingProxyType(readings), produce=produce
    )


def _stripped(snapshot: ClusterSnapshot, moving: frozenset[TopicPartition]) -> ClusterSnapshot:
    """The engine's view of a full read: sizes only on the partitions in flight."""
    stripped = [
        p.with_sizes(0, {})
        for tp, p in snapshot.partitions.items()
        if tp not in moving and (p.size_bytes or p.replica_sizes)
    ]
    return snapshot.with_partitions(stripped) if stripped else snapshot


def sized(
    view: ClusterSnapshot, reading: Reading, changed: Collection[TopicPartition] | None
) -> ClusterSnapshot:
    """Between full reads, the view with the last sizes read put back where they are read this cycle: the
    partitions that changed (the moving ones carry their own, read now). Put back on all 100,000
    partitions of a big plan, they cost more than the rest of a quiet cycle."""
    sizes, fresh = reading.sizes, reading.fresh
    keys = view.partitions if changed is None else changed
    patched = [
        view.partitions[tp].with_sizes(*sizes[tp])
        for tp in keys
        if tp in sizes and tp not in fresh and tp in view.partitions
    ]
    return view.with_partitions(patched) if patched else view


def every_size(reading: Reading, sight: Sight) -> ClusterSnapshot:
    """The view with every partition's size (ranks by size need them all)."""
    return sight.full if sight.full_read or sight.changed is None else sized(sight.view, reading, None)


def seen(
    reading: Reading, sight: Sight, plan: ReassignmentPlan, changed: Collection[TopicPartition] | None
) -> Reading:
    """The reading once the cycle has used it: this view is the last, the replica lists are updated where
    the view changed (`changed`; None: everywhere) and the partitions under min.insync.replicas known."""
    return replace(
        reading,
        last_view=sight.view,
        replicas_now=_replicas_now(reading.replicas_now, sight.full, plan, changed),
        under_min_isr=_under_min_isr(reading.under_min_isr, sight.view, changed),
    )


def _replicas_now(
    before: Mapping[TopicPartition, Replicas],
    full: ClusterSnapshot,
    plan: ReassignmentPlan,
    changed: Collection[TopicPartition] | None,
) -> Mapping[TopicPartition, Replicas]:
    if changed is None or not before:
        keys: Iterable[TopicPartition] = plan.targets
    else:
        keys = (tp for tp in changed if tp in plan.targets)
    updated = [(tp, p.replicas) for tp in keys if (p := full.partitions.get(tp)) is not None]
    if not updated and before:
        return before
    return MappingProxyType(copy_of(before) | dict(updated))


def _under_min_isr(
    before: frozenset[TopicPartition], view: ClusterSnapshot, changed: Collection[TopicPartition] | None
) -> frozenset[TopicPartition]:
    under = set(before)
    for tp in view.partitions if changed is None else changed:
        p = view.partitions.get(tp)
        if p is not None and len(p.isr) < view.min_insync_replicas(tp.topic):
            under.add(tp)
        else:
            under.discard(tp)
    under &= set(view.partitions)
    return frozenset(under)
