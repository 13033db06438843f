"""Execution state: where each partition of a plan stands, as an immutable value.

Each partition is a small state machine (the plan's own lifecycle is lifecycle.py's);
`PARTITION_TRANSITIONS` is its table and every change is checked against it (`check_partition_change`),
so an illegal move is a bug that raises, never a silent state::

    PENDING ──start──> STARTING ──Kafka accepted──> IN_FLIGHT ──replicas == step target──> PENDING (next
       ^  │               │  (committed before the       │  │                               step) or DONE
       │  │               │   reassignment is sent)      │  └──reverted (cancelled)──> PENDING (next index)
       │  │               └──refused, or never sent──> PENDING (same index)
       │  ├──unsafe / offline──> BLOCKED ──partition or broker changes──> PENDING
       │  └──reassigned by someone else──> EXTERNAL ──their move ends──> PENDING or DONE
       └──────────────────────────────────────────────────────────────────────────────────────────┘
    PENDING, BLOCKED or EXTERNAL ──Kafka moves it exactly as our next step would──> IN_FLIGHT (adopted)
    any state but DONE ──topic deleted──> DROPPED

`step` is the index of the partition's next step: a step that ends, completed or reverted, uses its index
up, so (partition, step) names one start and the journal records each start once. STARTING exists for
crashes: a step is written to the store as STARTING before its reassignment is sent, and after a restart
the cluster tells whether it was sent (Kafka moves the partition to its target) or not (it starts again,
under the same index: it never began).

What survives a restart is small: per partition its status, step and, for a step in flight, the step's
target, source and leader (run/rows.py). The rest (queues, counters, ranks) is rebuilt by `initial`, and
the first decision after it reconciles everything against the snapshot (in-flight moves show in
`adding`/`removing`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from reassignd.engine.limits import DEFAULT_ORDERING
from reassignd.engine.ordering import compute_ranks
from reassignd.engine.persistent import ChunkedBytes, ChunkedMap, SortedInts
from reassignd.engine.sources import Server, assign_servers
from reassignd.model import (
    NO_LEADER,
    ClusterSnapshot,
    ReassignmentPlan,
    TopicPartition,
)


class Status(StrEnum):
    PENDING = "pending"
    STARTING = "starting"
    IN_FLIGHT = "in_flight"
    BLOCKED = "blocked"
    EXTERNAL = "external"
    DONE = "done"
    DROPPED = "dropped"


MOVING: Final = frozenset({Status.STARTING, Status.IN_FLIGHT})
"""A step of ours is (about to be) in Kafka: it holds slots against the limits and throttles."""
ENDED: Final = frozenset({Status.DONE, Status.DROPPED})

PARTITION_TRANSITIONS: Final[Mapping[Status, frozenset[Status]]] = MappingProxyType(
    {
        Status.PENDING: frozenset(
            {
                Status.PENDING,
                Status.STARTING,
                Status.IN_FLIGHT,  # adopted: Kafka moves it exactly as our next step would
                Status.BLOCKED,
                Status.EXTERNAL,
                Status.DONE,
                Status.DROPPED,
            }
        ),
        Status.STARTING: frozenset({Status.IN_FLIGHT, Status.PENDING, Status.EXTERNAL, Status.DROPPED}),
        Status.IN_FLIGHT: frozenset(
            {Status.IN_FLIGHT, Status.PENDING, Status.DONE, Status.EXTERNAL, Status.DROPPED}
        ),
        Status.BLOCKED: frozenset(
            {Status.PENDING, Status.BLOCKED, Status.IN_FLIGHT, Status.EXTERNAL, Status.DONE, Status.DROPPED}
        ),
        Status.EXTERNAL: frozenset(
            {Status.PENDING, Status.EXTERNAL, Status.IN_FLIGHT, Status.DONE, Status.DROPPED}
        ),
        Status.DONE: frozenset({Status.DONE}),
        Status.DROPPED: frozenset({Status.DROPPED}),
    }
)


class IllegalTransition(ValueError):
    """A partition was asked to change state in a way the table does not allow: a bug, never input."""


def check_partition_change(tp: TopicPartition, old: PartitionProgress, new: PartitionProgress) -> None:
    if new.status not in PARTITION_TRANSITIONS[old.status]:
        raise IllegalTransition(f"{tp}: {old.status.value} -> {new.status.value} is not a valid transition")
    if new.step < old.step:
        raise IllegalTransition(f"{tp}: step index {old.step} -> {new.step} goes back")


class WaitReason(StrEnum):
    OFFLINE_TARGET = "offline_target"
    PARTITION_OFFLINE = "partition_offline"
    MIN_INSYNC = "min_insync"
    LIMITS = "limits"
    EXTERNAL = "external"
    MISSING = "missing"
    REFUSED = "refused"
    """Kafka refused the step's reassignment; it is sent again."""
    THROTTLE = "throttle"
    """The step's throttle could not be written (or its configs read): it is not sent until it can be."""
    UNSAFE_REVERT = "unsafe_revert"
    """Cancelling: the step in flight is not reverted yet, as no original replica is in sync (cancel.py)."""


@dataclass(frozen=True, slots=True)
class PartitionProgress:
    """One partition's place in the plan; `step` counts the steps it has completed."""

    status: Status = Status.PENDING
    step: int = 0
    target: tuple[int, ...] = ()
    source: tuple[int, ...] = ()
    leader: int = NO_LEADER
    moves_leadership: bool = False
    reason: WaitReason | None = None
    detail: str = ""
    blocked_on: tuple[int, ...] = ()
    copied: bool = False
    """Every replica the step adds is in sync: it copies nothing more and holds no movement slot, though
    Kafka only completes it once the replicas it keeps are in sync too (a stopped broker that stays waits
    for its return; PartitionReassignmentReplicas.maybeCompleteReassignment)."""

    @property
    def adding(self) -> tuple[int, ...]:
        held = set(self.source)
        return tuple(b for b in self.target if b not in held)


_EMPTY_LOAD: Mapping[int, int] = MappingProxyType({})
_PENDING = PartitionProgress()


@dataclass(frozen=True, slots=True)
class Load:
    """What our in-flight steps hold against the limits."""

    partitions: int = 0
    leader_moves: int = 0
    replica_moves: int = 0
    incoming: Mapping[int, int] = field(default_factory=lambda: _EMPTY_LOAD)
    outgoing: Mapping[int, int] = field(default_factory=lambda: _EMPTY_LOAD)

    @staticmethod
    def of(records: Iterable[PartitionProgress]) -> Load:
        load = _MutableLoad()
        for rec in records:
            if rec.status in MOVING:
                load.add(rec, +1)
        return load.freeze()


class _MutableLoad:
    def __init__(self, base: Load | None = None) -> None:
        base = base or Load()
        self.partitions = base.partitions
        self.leader_moves = base.leader_moves
        self.replica_moves = base.replica_moves
        self.incoming = dict(base.incoming)
        self.outgoing = dict(base.outgoing)

    def add(self, rec: PartitionProgress, sign: int) -> None:
        self.partitions += sign
        self.leader_moves += sign * rec.moves_leadership
        if rec.copied:
            return
        adding = rec.adding
        self.replica_moves += sign * len(adding)
        for broker in adding:
            self.incoming[broker] = self.incoming.get(broker, 0) + sign
        if adding:
            self.outgoing[rec.leader] = self.outgoing.get(rec.leader, 0) + sign * len(adding)

    def freeze(self) -> Load:
        return Load(
            self.partitions,
            self.leader_moves,
            self.replica_moves,
            MappingProxyType({b: n for b, n in self.incoming.items() if n}),
            MappingProxyType({b: n for b, n in self.outgoing.items() if n}),
        )


QUEUE_NAMES: Final = ("urgent", "leader", "other")
QUEUE_ID: Final = {name: index + 1 for index, name in enumerate(QUEUE_NAMES)}  # 0: in no queue


@dataclass(frozen=True, slots=True)
class Queues:
    """Ready partitions by priority rank: urgent (under min.insync), leader-moving, others.

    `member[rank]` says which queue holds a rank (QUEUE_ID, 0 for none), so membership is O(1).
    """

    urgent: SortedInts = field(default_factory=SortedInts)
    leader: SortedInts = field(default_factory=SortedInts)
    other: SortedInts = field(default_factory=SortedInts)
    member: ChunkedBytes = field(default_factory=ChunkedBytes)

    def __len__(self) -> int:
        return len(self.urgent) + len(self.leader) + len(self.other)


@dataclass(frozen=True, slots=True, eq=False)
class ExecutionState:
    """Immutable; `decide` returns a new one sharing everything it did not change."""

    plan: ReassignmentPlan
    ordering: tuple[str, ...]
    ranked: tuple[TopicPartition, ...]
    rank_of: Mapping[TopicPartition, int]
    records: ChunkedMap[TopicPartition, PartitionProgress]
    queues: Queues
    load: Load
    blocked_by_broker: Mapping[int, frozenset[TopicPartition]]
    online: frozenset[int]
    counts: Mapping[Status, int]
    in_flight_set: frozenset[TopicPartition] = frozenset()
    """Partitions with a step starting or in flight: bounded by the limits, so kept as a plain set."""
    held_by: str | None = None
    """The limit that stopped the last decision's scheduling before it reached every ready partition:
    what the partitions it did not examine wait for."""
    servers: Mapping[TopicPartition, Server] = field(default_factory=lambda: MappingProxyType({}))
    """Partitions whose copies another in-sync replica than their leader serves (sources.py)."""

    @classmethod
    def initial(
        cls,
        plan: ReassignmentPlan,
        snapshot: ClusterSnapshot,
        ordering: tuple[str, ...] = DEFAULT_ORDERING,
        progress: Mapping[TopicPartition, PartitionProgress] | None = None,
    ) -> ExecutionState:
        """Every partition pending (or as `progress` says); run `decide` with changed=None next."""
        ranked = compute_ranks(plan, snapshot, ordering)
        records = dict.fromkeys(ranked, _PENDING)
        records.update((tp, rec) for tp, rec in (progress or {}).items() if tp in records)
        return cls._assemble(plan, ordering, ranked, records, snapshot)

    @classmethod
    def _assemble(
        cls,
        plan: ReassignmentPlan,
        ordering: tuple[str, ...],
        ranked: tuple[TopicPartition, ...],
        records: Mapping[TopicPartition, PartitionProgress],
        snapshot: ClusterSnapshot,
    ) -> ExecutionState:
        rank_of = MappingProxyType({tp: i for i, tp in enumerate(ranked)})
        buckets: dict[str, list[int]] = {"urgent": [], "leader": [], "other": []}
        member = bytearray(len(ranked))
        counts: dict[Status, int] = dict.fromkeys(Status, 0)
        blocked: dict[int, set[TopicPartition]] = {}
        min_insync = MinInsync(snapshot)
        done: list[TopicPartition] = []
        for rank, tp in enumerate(ranked):
            rec = records[tp]
            counts[rec.status] += 1
            if rec.status in ENDED:
                done.append(tp)
            if rec.status is Status.PENDING:
                name = queue_name(tp, plan, snapshot, min_insync)
                buckets[name].append(rank)
                member[rank] = QUEUE_ID[name]
            for broker in rec.blocked_on:
                blocked.setdefault(broker, set()).add(tp)
        return cls(
            plan=plan,
            ordering=tuple(ordering),
            ranked=ranked,
            rank_of=rank_of,
            records=ChunkedMap(records),
            queues=Queues(
                urgent=SortedInts(buckets["urgent"]),
                leader=SortedInts(buckets["leader"]),
                other=SortedInts(buckets["other"]),
                member=ChunkedBytes(member),
            ),
            load=Load.of(records.values()),
            blocked_by_broker=MappingProxyType({b: frozenset(s) for b, s in blocked.items()}),
            online=snapshot.online_broker_ids(),
            counts=MappingProxyType(counts),
            in_flight_set=frozenset(tp for tp, rec in records.items() if rec.status in MOVING),
            servers=assign_servers(plan, snapshot, frozenset(done)),
        )

    def retargeted(
        self,
        plan: ReassignmentPlan,
        records: Mapping[TopicPartition, PartitionProgress],
        snapshot: ClusterSnapshot,
    ) -> ExecutionState:
        """The same run towards `plan` (the same partitions, some with new targets; run/retarget.py), with
        `records` replacing those partitions' progress; ranks kept, queues rebuilt on `snapshot`."""
        if plan.targets.keys() != self.plan.targets.keys():
            raise ValueError("a re-targeted plan has the same partitions")
        for tp, rec in records.items():
            check_partition_change(tp, self.records[tp], rec)
        merged = dict(self.records.items())
        merged.update(records)
        return self._assemble(plan, self.ordering, self.ranked, merged, snapshot)

    def reordered(self, ordering: tuple[str, ...], snapshot: ClusterSnapshot) -> ExecutionState:
        """The same progress under another `reassignment.ordering` (ranks recomputed once)."""
        ranked = compute_ranks(self.plan, snapshot, ordering)
        return self._assemble(self.plan, ordering, ranked, dict(self.records.items()), snapshot)

    # -- reading -------------------------------------------------------------------------------------

    def __getitem__(self, tp: TopicPartition) -> PartitionProgress:
        return self.records[tp]

    def in_flight(self) -> Iterator[tuple[TopicPartition, PartitionProgress]]:
        """Steps starting or in flight, in rank order; costs what is in flight, not the plan."""
        for tp in sorted(self.in_flight_set, key=self.rank_of.__getitem__):
            yield tp, self.records[tp]

    def offline_waits(self) -> dict[TopicPartition, tuple[int, ...]]:
        """Partitions that cannot finish while brokers are stopped, with those brokers: moves blocked on
        them, and steps in flight that keep one (Kafka completes a step once its whole target is in sync).
        Costs what is blocked and in flight, not the plan."""
        waits: dict[TopicPartition, tuple[int, ...]] = {}
        for broker, parts in sorted(self.blocked_by_broker.items()):
            if broker not in self.online:
                for tp in parts:
                    waits[tp] = (*waits.get(tp, ()), broker)
        for tp, rec in self.in_flight():
            down = tuple(b for b in rec.target if b not in self.online)
            if down:
                waits[tp] = down
        return waits

    def waiting(self) -> Iterator[tuple[TopicPartition, PartitionProgress]]:
        """Partitions with a step to take that is not running, in rank order (walks the whole plan): the
        pending ones (with the limit that held them back, when the scheduler got to them), the blocked and
        the external ones."""
        for tp in self.ranked:
            rec = self.records[tp]
            if rec.status in (Status.PENDING, Status.BLOCKED, Status.EXTERNAL):
                yield tp, rec

    @property
    def waiting_count(self) -> int:
        counts = self.counts
        return counts[Status.PENDING] + counts[Status.BLOCKED] + counts[Status.EXTERNAL]

    @property
    def finished(self) -> bool:
        """Every partition ended: at its target, or dropped with its topic."""
        return self.counts[Status.DONE] + self.counts[Status.DROPPED] == len(self.plan)

    def with_changes(
        self,
        records: Mapping[TopicPartition, PartitionProgress],
        queues: Queues,
        load: Load,
        blocked_by_broker: Mapping[int, frozenset[TopicPartition]],
        online: frozenset[int],
        *,
        held_by: str | None = None,
    ) -> ExecutionState:
        counts = dict(self.counts)
        entered: set[TopicPartition] = set()
        left: set[TopicPartition] = set()
        for tp, rec in records.items():
            old = self.records[tp].status
            counts[old] -= 1
            counts[rec.status] += 1
            if rec.status in MOVING and old not in MOVING:
                entered.add(tp)
            elif old in MOVING and rec.status not in MOVING:
                left.add(tp)
        in_flight_set = (self.in_flight_set - left) | entered if entered or left else self.in_flight_set
        return replace(
            self,
            records=self.records.updated(records),
            queues=queues,
            load=load,
            blocked_by_broker=blocked_by_broker,
            online=online,
            counts=MappingProxyType(counts),
            in_flight_set=in_flight_set,
            held_by=held_by,
        )


class MinInsync(dict[str, int]):
    """min.insync.replicas per topic, looked up once per decision."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def __missing__(self, topic: str) -> int:
        value = self[topic] = self.snapshot.min_insync_replicas(topic)
        return value


def queue_name(
    tp: TopicPartition, plan: ReassignmentPlan, snapshot: ClusterSnapshot, min_insync: MinInsync
) -> str:
    """Which ready queue a pending partition waits in, from what its next step will do."""
    state = snapshot.partitions.get(tp)
    if state is None:
        return "other"
    final = plan.targets[tp]
    if len(state.isr) < min(min_insync[tp.topic], len(final)):
        return "urgent"
    # Every step's target starts with FTR[0] (docs/engine.md), so it moves leadership iff the leader differs.
    return "leader" if final[0] != state.leader else "other"
