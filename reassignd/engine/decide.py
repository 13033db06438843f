"""`decide`: one daemon cycle's decision, a pure function of (snapshot, plan, state, limits, changed).

Cost: reconciling looks only at `changed` partitions (plus those blocked on a broker that came back),
and scheduling walks the ready queues in rank order for at most a budget proportional to the free slots.
`changed=None` reconciles the whole plan: use it for the first decision and after a restart.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import replace
from heapq import merge

from reassignd import config_keys
from reassignd.engine.actions import Decision, ElectLeader, StartStep, Waiting
from reassignd.engine.limits import Limits
from reassignd.engine.sources import serving_replica
from reassignd.engine.state import (
    ENDED,
    MOVING,
    QUEUE_ID,
    QUEUE_NAMES,
    ExecutionState,
    Load,
    MinInsync,
    PartitionProgress,
    Queues,
    Status,
    WaitReason,
    _MutableLoad,
    check_partition_change,
    queue_name,
)
from reassignd.engine.steps import Step, next_step
from reassignd.model import NO_LEADER, ClusterSnapshot, PartitionState, ReassignmentPlan, TopicPartition

__all__ = ["Decision", "ElectLeader", "StartStep", "Waiting", "acknowledge", "changed_partitions", "decide"]

TOPIC_DELETED = "topic deleted"
SCAN_PER_SLOT = 8
SCAN_MINIMUM = 256


def decide(
    snapshot: ClusterSnapshot,
    plan: ReassignmentPlan,
    state: ExecutionState,
    limits: Limits,
    changed: Collection[TopicPartition] | None = None,
    *,
    recent: Collection[TopicPartition] = (),
) -> Decision:
    """`recent`: partitions whose step in flight Kafka accepted too recently for brokers' Metadata to be
    sure to show it: read as their step's source and not listed as moving, they are read again rather than
    taken as reverted (the step may have completed before Metadata showed it start)."""
    if state.plan is not plan and state.plan != plan:
        raise ValueError("the execution state belongs to another plan")
    if tuple(limits.ordering) != state.ordering:
        state = state.reordered(tuple(limits.ordering), snapshot)
    cycle = _Cycle(snapshot, state, limits, recent)
    online = cycle.online
    if changed is None:
        cycle.reconcile_all()
    else:
        back = online - state.online
        todo = dict.fromkeys(
            [tp for tp in changed if tp in state.rank_of]
            + [tp for b in back for tp in state.blocked_by_broker.get(b, ())]
        )
        for tp in todo:
            cycle.reconcile(tp)
    if limits.scheduling_mode != "batch" or cycle.load.partitions == 0:
        cycle.schedule()
    return cycle.decision()


def acknowledge(
    snapshot: ClusterSnapshot,
    state: ExecutionState,
    limits: Limits,
    refused: Mapping[TopicPartition, str],
    held: Mapping[TopicPartition, str] | None = None,
) -> ExecutionState:
    """Kafka's answer to the steps a decision started: accepted ones are in flight, refused ones pending
    again under the same index (they never began), with Kafka's reason; `held` ones were not sent, as
    their throttle could not be written (why), and are pending again too."""
    cycle = _Cycle(snapshot, state, limits)
    held = held or {}
    for tp in state.in_flight_set:
        rec = cycle.record(tp)
        if rec.status is not Status.STARTING:
            continue
        if tp in held:
            cycle.put(
                tp, PartitionProgress(Status.PENDING, rec.step, reason=WaitReason.THROTTLE, detail=held[tp])
            )
        elif tp in refused:
            detail = f"refused by Kafka: {refused[tp]}"
            cycle.put(
                tp, PartitionProgress(Status.PENDING, rec.step, reason=WaitReason.REFUSED, detail=detail)
            )
        else:
            cycle.put(tp, replace(rec, status=Status.IN_FLIGHT))
    return cycle.decision().state


def changed_partitions(before: ClusterSnapshot | None, after: ClusterSnapshot) -> set[TopicPartition]:
    """Partitions whose state differs between two snapshots (all of them when there is no `before`).

    Unchanged states are usually the same objects (`with_partitions` shares them), so most checks are
    identity checks; removed partitions are looked for only when some of `before` went unmatched.
    """
    if before is None:
        return set(after.partitions)
    old = before.partitions
    found = old.get
    changed = {tp for tp, p in after.partitions.items() if found(tp) is not p}
    changed -= {tp for tp in changed if (o := found(tp)) is not None and o == after.partitions[tp]}
    added = sum(1 for tp in changed if tp not in old)
    if len(after.partitions) - added != len(old):  # some of `before` are gone
        changed.update(set(old) - set(after.partitions))
    return changed


class _WorkQueue:
    def __init__(self, base: Queues, name: str) -> None:
        self.base = getattr(base, name)
        self.removed: set[int] = set()
        self.added: set[int] = set()

    def add(self, rank: int) -> None:
        self.added.add(rank)

    def remove(self, rank: int) -> None:
        self.added.discard(rank)
        self.removed.add(rank)

    def ranks(self) -> Iterator[int]:
        extra = sorted(self.added)
        for rank in merge(self.base, extra):
            if rank in self.removed and rank not in self.added:
                continue
            yield rank


class _Cycle:
    """The working copies of one decision; frozen into a new state at the end."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        state: ExecutionState,
        limits: Limits,
        recent: Collection[TopicPartition] = (),
    ) -> None:
        self.snapshot = snapshot
        self.recent = recent
        self.state = state
        self.limits = limits
        self.plan = state.plan
        self.online = snapshot.online_broker_ids()
        self.min_insync = MinInsync(snapshot)
        self.changes: dict[TopicPartition, PartitionProgress] = {}
        self.queues = {name: _WorkQueue(state.queues, name) for name in QUEUE_NAMES}
        self.member: dict[int, int] = {}
        self.load = _MutableLoad(state.load)
        self.blocked: dict[int, frozenset[TopicPartition] | set[TopicPartition]] = dict(
            state.blocked_by_broker
        )
        self.blocked_copied: set[int] = set()
        self.start: list[StartStep] = []
        self.elect: list[ElectLeader] = []
        self.waiting: list[Waiting] = []
        self.completed: list[TopicPartition] = []
        self.finished: list[TopicPartition] = []
        self.external: list[TopicPartition] = []
        self.aborted: list[TopicPartition] = []
        self.dropped: list[TopicPartition] = []
        self.recovered: list[TopicPartition] = []
        self.held_by: str | None = state.held_by
        self.examined = 0
        self.electing: set[TopicPartition] = set()
        self.transient: dict[int, int] = {}
        """Copies a broker serves only until this cycle's elections run (steps started with one)."""
        self.replica_count = limits.step_size

    # -- bookkeeping ---------------------------------------------------------------------------------

    def record(self, tp: TopicPartition) -> PartitionProgress:
        return self.changes.get(tp) or self.state.records[tp]

    def put(self, tp: TopicPartition, new: PartitionProgress) -> None:
        old = self.record(tp)
        check_partition_change(tp, old, new)
        if old.status in MOVING:
            self.load.add(old, -1)
        if new.status in MOVING:
            self.load.add(new, +1)
        for broker in old.blocked_on:
            self.blocked_set(broker).discard(tp)
        for broker in new.blocked_on:
            self.blocked_set(broker).add(tp)
        rank = self.state.rank_of[tp]
        current = self.queue_of(rank)
        if current:
            self.queues[QUEUE_NAMES[current - 1]].remove(rank)
        if new.status is Status.PENDING:
            name = queue_name(tp, self.plan, self.snapshot, self.min_insync)
            self.queues[name].add(rank)
            self.member[rank] = QUEUE_ID[name]
        elif current:
            self.member[rank] = 0
        self.changes[tp] = new

    def blocked_set(self, broker: int) -> set[TopicPartition]:
        if broker not in self.blocked_copied:
            self.blocked[broker] = set(self.blocked.get(broker, ()))
            self.blocked_copied.add(broker)
        members = self.blocked[broker]
        assert isinstance(members, set)
        return members

    def hold(self, tp: TopicPartition, refusal: str) -> None:
        """A ready partition a limit holds back: it stays pending, with the limit as its reason."""
        self.waiting.append(Waiting(tp, WaitReason.LIMITS, refusal))
        rec = self.record(tp)
        if rec.reason is not WaitReason.LIMITS or rec.detail != refusal:
            self.put(
                tp, PartitionProgress(Status.PENDING, rec.step, reason=WaitReason.LIMITS, detail=refusal)
            )

    def block(self, tp: TopicPartition, reason: WaitReason, detail: str, on: tuple[int, ...] = ()) -> None:
        rec = self.record(tp)
        self.put(tp, PartitionProgress(Status.BLOCKED, rec.step, reason=reason, detail=detail, blocked_on=on))
        self.waiting.append(Waiting(tp, reason, detail))

    def mark_external(self, tp: TopicPartition, p: PartitionState) -> None:
        rec = self.record(tp)
        detail = f"reassigning to {list(p.target_replicas)} by someone else"
        self.put(tp, PartitionProgress(Status.EXTERNAL, rec.step, reason=WaitReason.EXTERNAL, detail=detail))
        self.external.append(tp)
        self.waiting.append(Waiting(tp, WaitReason.EXTERNAL, detail))

    def mark_done(self, tp: TopicPartition, p: PartitionState) -> None:
        self.put(tp, PartitionProgress(Status.DONE, self.record(tp).step))
        self.finished.append(tp)
        self._elect_finished(tp, p)

    def _elect_finished(self, tp: TopicPartition, p: PartitionState) -> None:
        preferred = p.replicas[0]
        if self.limits.elect_after_finish and p.leader != preferred and preferred in p.isr:
            self.elect.append(ElectLeader(tp, preferred, "finished"))

    def missing(self, tp: TopicPartition) -> None:
        """A partition the snapshot lacks: dropped when Kafka says its topic is gone (Kafka ends a deleted
        topic's reassignment with it), else waited for, since a read may have failed."""
        rec = self.record(tp)
        if tp.topic in self.snapshot.deleted_topics:
            self.put(tp, PartitionProgress(Status.DROPPED, rec.step, detail=TOPIC_DELETED))
            self.dropped.append(tp)
        elif rec.status is Status.STARTING:
            self.put(tp, PartitionProgress(Status.PENDING, rec.step))  # never sent; waited for below
            self.block(tp, WaitReason.MISSING, "partition not in the cluster")
        elif rec.status is not Status.IN_FLIGHT:
            self.block(tp, WaitReason.MISSING, "partition not in the cluster")
        # in flight: the step stays ours until the partition is readable again

    # -- reconciling with the snapshot ---------------------------------------------------------------

    def reconcile_all(self) -> None:
        """Reconcile the whole plan; pending partitions already in the right queue cost a few lookups."""
        partitions, targets, rank_of = self.snapshot.partitions, self.plan.targets, self.state.rank_of
        member = self.state.queues.member
        urgent, leader, other = (QUEUE_ID[name] for name in QUEUE_NAMES)
        for tp, rec in self.state.records.items():
            if rec.status is Status.PENDING:
                p = partitions.get(tp)
                final = targets[tp]
                if p is not None and not p.is_reassigning and p.replicas != final:
                    if len(p.isr) < min(self.min_insync[tp.topic], len(final)):
                        expected = urgent
                    else:
                        expected = leader if final[0] != p.leader else other
                    if member[rank_of[tp]] == expected:
                        continue
            self.reconcile(tp)

    def reconcile(self, tp: TopicPartition) -> None:
        rec = self.record(tp)
        p = self.snapshot.partitions.get(tp)
        if p is None:
            if rec.status not in ENDED:
                self.missing(tp)
            return
        if rec.status in ENDED:
            if rec.status is Status.DONE and not p.is_reassigning and p.replicas == self.plan.targets[tp]:
                # its preferred leader may have been down when it finished, or died since: elected once it
                # is back in sync, while the plan runs (a real KRaft broker killed right after its step)
                self._elect_finished(tp, p)
            return
        if rec.status is Status.STARTING:  # only after a restart: was the reassignment sent?
            sent = p.replicas == rec.target or (p.is_reassigning and p.target_replicas == rec.target)
            if not sent:
                self.put(tp, PartitionProgress(Status.PENDING, rec.step))
                rec = self.record(tp)
            else:
                self.recovered.append(tp)
                self.put(tp, replace(rec, status=Status.IN_FLIGHT))
                rec = self.record(tp)
        if rec.status is Status.IN_FLIGHT:
            if p.is_reassigning:
                if p.target_replicas == rec.target:
                    adding = rec.adding
                    if adding and not rec.copied and set(adding) <= set(p.isr):
                        # its copies are done; it waits for a replica it keeps (e.g. a stopped broker)
                        self.put(tp, replace(rec, copied=True))
                    self._elect_when_in_sync(tp, rec, p)
                else:
                    self.mark_external(tp, p)
                return
            if p.replicas == rec.target:
                if any(b in self.online and b not in p.isr for b in rec.adding):
                    # The other torn read: Kafka completes a move only once its whole target is in sync, so
                    # Metadata with an added replica still out of the ISR is older than the reassignments
                    # read (real KRaft brokers replay the controller's records a moment later). Read again:
                    # taken as complete, the step's new preferred leader was never elected.
                    return
                self.completed.append(tp)
                self.put(tp, PartitionProgress(Status.PENDING, rec.step + 1))
                if rec.target == self.plan.targets[tp]:
                    self.mark_done(tp, p)
                else:
                    self._elect_when_in_sync(tp, rec, p)
                return
            if p.replicas == rec.source and tp in self.recent:
                # Metadata older than the step: a broker shows the controller's change a moment later (real
                # KRaft: up to ~0.35 s measured), and a quick step completes in between, so the listing no
                # longer has it either. Read again: taken as reverted, a step that completed was journaled
                # as cancelled and sent again under the next index.
                return
            if set(p.replicas) == set(rec.target) | set(rec.source) and set(rec.target) != set(rec.source):
                # A torn read: the metadata still lists the replicas being removed, the reassignments read a
                # moment later no longer shows the move (it completed in between). Still ours: read again.
                return
            self.aborted.append(tp)  # reverted (cancelled), or moved elsewhere: the step's index is used up
            self.put(tp, PartitionProgress(Status.PENDING, rec.step + 1))
        if rec.status is Status.EXTERNAL and p.is_reassigning:
            return
        if rec.status is Status.PENDING and not p.is_reassigning and p.replicas != self.plan.targets[tp]:
            expected = QUEUE_ID[queue_name(tp, self.plan, self.snapshot, self.min_insync)]
            if self.queue_of(self.state.rank_of[tp]) == expected:
                return  # already waiting in the right queue
        self._reconcile_idle(tp, p)

    def queue_of(self, rank: int) -> int:
        current = self.member.get(rank)
        return self.state.queues.member[rank] if current is None else current

    def _reconcile_idle(self, tp: TopicPartition, p: PartitionState) -> None:
        rec = self.record(tp)
        final = self.plan.targets[tp]
        if p.is_reassigning:
            step = next_step(
                p.original_replicas,
                final,
                p.isr,
                self.replica_count,
                self.min_insync[tp.topic],
            )
            if step is not None and step.target == p.target_replicas:
                adopted = PartitionProgress(
                    Status.IN_FLIGHT,
                    rec.step,
                    target=step.target,
                    source=p.original_replicas,
                    leader=p.leader,
                    moves_leadership=step.target[0] != p.leader,
                )
                self.put(tp, adopted)  # ours, started before a restart lost the record
            else:
                self.mark_external(tp, p)
        elif p.replicas == final:
            self.mark_done(tp, p)
        else:  # (re)queue: what its next step does may have changed with the partition
            self.put(tp, PartitionProgress(Status.PENDING, rec.step))

    def _elect_when_in_sync(self, tp: TopicPartition, rec: PartitionProgress, p: PartitionState) -> None:
        preferred = rec.target[0]
        if preferred not in rec.source and preferred in p.isr and p.leader != preferred:
            self.elect.append(ElectLeader(tp, preferred, "step"))
            self.electing.add(tp)

    # -- scheduling ----------------------------------------------------------------------------------

    def free_slots(self) -> int:
        limits, load = self.limits, self.load
        incoming = sum(max(0, limits.max_incoming_per_broker - load.incoming.get(b, 0)) for b in self.online)
        return min(
            limits.parallel_partition_count - load.partitions,
            limits.max_concurrent_replica_movements - load.replica_moves,
            incoming,
        )

    def schedule(self) -> None:
        self.held_by = None
        free = self.free_slots()
        if free <= 0:
            self.held_by = self.full_limit()
            return
        budget = SCAN_PER_SLOT * free + SCAN_MINIMUM
        ordering = self.limits.ordering
        passes: list[Iterator[int]] = []
        general = ["leader", "other"]
        if "under_min_isr" in ordering:
            passes.append(self.queues["urgent"].ranks())
        else:
            general.append("urgent")
        if "leader_moves" in ordering:
            passes.append(self.queues["leader"].ranks())
            general.remove("leader")
        passes.append(merge(*(self.queues[name].ranks() for name in general)))
        deferred: list[TopicPartition] = []
        for index, ranks in enumerate(passes):
            leader_pass = "leader_moves" in ordering and index == len(passes) - 2
            for rank in _take(ranks, budget - self.examined):
                if self.full() or (leader_pass and self.leaders_full()):
                    break
                self.examined += 1
                tp = self.state.ranked[rank]
                if self.record(tp).reason is WaitReason.THROTTLE:
                    deferred.append(tp)  # its throttle could not be written: tried after the others
                    continue
                self.try_start(tp)
            if self.full():
                self.held_by = self.full_limit()
                return
            if self.examined >= budget:
                self.held_by = f"not examined yet: the scheduler looks at {budget} ready partitions a cycle"
                return
        for tp in deferred:  # with the slots the others left: a refused throttle write holds no one else up
            if self.full():
                self.held_by = self.full_limit()
                return
            self.try_start(tp)

    def full_limit(self) -> str:
        """Which limit leaves no free slot (what every partition not examined waits for)."""
        limits, load = self.limits, self.load
        if load.partitions >= limits.parallel_partition_count:
            return config_keys.REASSIGNMENT_PARALLEL_PARTITION_COUNT
        if load.replica_moves >= limits.max_concurrent_replica_movements:
            return config_keys.REASSIGNMENT_MAX_CONCURRENT_REPLICA_MOVEMENTS
        return "reassignment.max.incoming.replica.movements.per.broker (every online broker)"

    def full(self) -> bool:
        limits, load = self.limits, self.load
        return (
            load.partitions >= limits.parallel_partition_count
            or load.replica_moves >= limits.max_concurrent_replica_movements
        )

    def leaders_full(self) -> bool:
        return self.load.leader_moves >= self.limits.parallel_leader_movements

    def try_start(self, tp: TopicPartition) -> None:
        ready = self.next_safe_step(tp)
        if ready is not None:
            self.start_step(tp, *ready)

    def next_safe_step(self, tp: TopicPartition) -> tuple[PartitionState, Step] | None:
        """The partition's next step when it may start now; else the partition is marked for why not."""
        p = self.snapshot.partitions.get(tp)
        if p is None:
            self.missing(tp)
            return None
        if p.is_reassigning:
            self.mark_external(tp, p)
            return None
        final = self.plan.targets[tp]
        if p.replicas == final:
            self.mark_done(tp, p)
            return None
        online = self.online
        if p.leader == NO_LEADER or p.leader not in online:
            down = tuple(b for b in p.replicas if b not in online)
            self.block(tp, WaitReason.PARTITION_OFFLINE, "partition has no online leader", down)
            return None
        min_insync = self.min_insync[tp.topic]
        step = next_step(p.replicas, final, p.isr, self.replica_count, min_insync)
        if step is None:  # pragma: no cover - replicas != final always yields a step
            return None
        if step.blocked:
            detail = (
                f"in sync {sorted(p.isr)}, min.insync.replicas {min_insync}: waiting for replicas to join"
            )
            self.block(tp, WaitReason.MIN_INSYNC, detail)
            return None
        # Kafka completes a step once its whole target is in sync, so one that keeps a stopped broker waits
        # for its return; it still starts when it copies something, so the copy overlaps the outage (and
        # frees its movement slots once copied: PartitionProgress.copied). Nothing can be sent to a broker
        # that is down, nor is a step that only waits worth a slot.
        offline = tuple(b for b in step.target if b not in online)
        if offline and (not step.adding or any(b in step.adding for b in offline)):
            self.block(tp, WaitReason.OFFLINE_TARGET, f"target broker(s) {list(offline)} offline", offline)
            return None
        return p, step

    def start_step(self, tp: TopicPartition, p: PartitionState, step: Step) -> None:
        """Start `step` if the limits allow (else it waits for them), served by the balanced source."""
        # A step after an election this cycle starts with it: the daemon sends the reassignment first and
        # the election right after, so the new leader serves the step's copies (and, for that instant, the
        # old one: `transient`).
        leader = p.replicas[0] if tp in self.electing else p.leader
        serving = serving_replica(
            self.state.servers.get(tp),
            p,
            step,
            final=self.plan.targets[tp],
            leader=leader,
            limits=self.limits,
            online=self.online,
            electing=tp in self.electing,
        )
        if serving != leader:
            self.start_leadership_step(tp, p, serving)
            return
        moves = step.moves_leadership(leader)
        refusal = self.refusal(step.adding, leader, moves, step.min_insync_extra, p.leader)
        if refusal is not None:
            self.hold(tp, refusal)
            return
        rec = self.record(tp)
        started = PartitionProgress(
            Status.STARTING,
            rec.step,
            target=step.target,
            source=p.replicas,
            leader=leader,
            moves_leadership=moves,
        )
        self.put(tp, started)
        if leader != p.leader and step.adding:
            self.transient[p.leader] = self.transient.get(p.leader, 0) + len(step.adding)
        self.start.append(
            StartStep(
                tp,
                step.target,
                rec.step,
                moves,
                p.replicas,
                step.adding,
                step.removing,
                leader,
                step.min_insync_extra,
            )
        )

    def start_leadership_step(self, tp: TopicPartition, p: PartitionState, serving: int) -> None:
        """Make `serving` the leader before the copies start: reorder the replicas, elect it (sources.py).

        The reordering adds and removes nothing, so Kafka applies it at once and the election in the same
        cycle sees `serving` first; no copy runs from the old leader meanwhile. It takes no copy slot, so
        it is done as soon as the partition is reached, and its copies start when slots allow.
        """
        refusal = self.refusal((), serving, True, 0)
        if refusal is not None:
            self.hold(tp, refusal)
            return
        rec = self.record(tp)
        target = (serving, *(b for b in p.replicas if b != serving))
        started = PartitionProgress(
            Status.STARTING,
            rec.step,
            target=target,
            source=p.replicas,
            leader=p.leader,
            moves_leadership=True,
        )
        self.put(tp, started)
        self.start.append(StartStep(tp, target, rec.step, True, p.replicas, (), (), p.leader))
        self.elect.append(ElectLeader(tp, serving, "source"))

    def refusal(
        self, adding: tuple[int, ...], leader: int, moves: bool, extra: int, current: int | None = None
    ) -> str | None:
        """Which limit a step would break, or None; a min.insync step may exceed R-sized caps alone.

        `current` is the partition's leader until this cycle's election makes `leader` lead: it serves the
        copies for that instant, so they must fit under its limit too.
        """
        limits, load = self.limits, self.load
        if load.partitions + 1 > limits.parallel_partition_count:
            return config_keys.REASSIGNMENT_PARALLEL_PARTITION_COUNT
        if moves and load.leader_moves + 1 > limits.parallel_leader_movements:
            return config_keys.REASSIGNMENT_PARALLEL_LEADER_MOVEMENTS
        if not adding:
            return None
        n = len(adding)
        if load.replica_moves + n > limits.max_concurrent_replica_movements and not (
            extra and load.replica_moves == 0
        ):
            return config_keys.REASSIGNMENT_MAX_CONCURRENT_REPLICA_MOVEMENTS
        for broker in adding:
            if load.incoming.get(broker, 0) + 1 > limits.max_incoming_per_broker:
                return f"reassignment.max.incoming.replica.movements.per.broker (broker {broker})"
        for broker in (leader,) if current in (None, leader) else (leader, current):
            out = load.outgoing.get(broker, 0) + self.transient.get(broker, 0)
            if out + n > limits.max_outgoing_per_broker and not (extra and out == 0):
                return f"reassignment.max.outgoing.replica.movements.per.broker (broker {broker})"
        return None

    # -- result --------------------------------------------------------------------------------------

    def decision(self) -> Decision:
        base = self.state.queues
        updated = {
            name: getattr(base, name).update(remove=q.removed - q.added, add=q.added)
            for name, q in self.queues.items()
        }
        queues = Queues(
            urgent=updated["urgent"],
            leader=updated["leader"],
            other=updated["other"],
            member=base.member.updated(self.member),
        )
        blocked = {b: s if isinstance(s, frozenset) else frozenset(s) for b, s in self.blocked.items() if s}
        state = self.state.with_changes(
            self.changes, queues, self._load(), blocked, self.online, held_by=self.held_by
        )
        return Decision(
            state=state,
            start=tuple(self.start),
            elect=tuple(self.elect),
            waiting=tuple(self.waiting),
            completed=tuple(self.completed),
            finished=tuple(self.finished),
            external=tuple(self.external),
            aborted=tuple(self.aborted),
            dropped=tuple(self.dropped),
            recovered=tuple(self.recovered),
            examined=self.examined,
        )

    def _load(self) -> Load:
        return self.load.freeze()


def _take(ranks: Iterator[int], count: int) -> Iterator[int]:
    for index, rank in enumerate(ranks):
        if index >= count:
            return
        yield rank
