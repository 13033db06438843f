"""A pure, instant stand-in for Kafka's reassignment behaviour, for dry runs, tests and benchmarks.

It follows KRaft's PartitionReassignmentReplicas (apache/kafka metadata/.../controller): while a move runs
the replica list is the target followed by the removing replicas, adding = target - current, removing =
current - target; on completion replicas = target, the removing replicas leave the ISR and a leader
outside the target is replaced by the first target replica in the ISR. Here every added replica joins
the ISR at once when `complete` is called, which is what "when joins happen" means in the tests.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, replace

from reassignd.engine.actions import Decision, ElectLeader, StartStep
from reassignd.engine.decide import decide
from reassignd.engine.limits import Limits
from reassignd.engine.state import ExecutionState
from reassignd.model import ClusterSnapshot, PartitionState, ReassignmentPlan, TopicPartition


def apply_starts(snapshot: ClusterSnapshot, starts: Iterable[StartStep]) -> ClusterSnapshot:
    updated: list[PartitionState] = []
    for start in starts:
        p = snapshot.partitions[start.tp]
        target = start.target
        held = set(target)
        removing = tuple(b for b in p.replicas if b not in held)
        adding = tuple(b for b in target if b not in set(p.replicas))
        if not adding and not removing:
            updated.append(replace(p, replicas=target))
            continue
        updated.append(replace(p, replicas=target + removing, adding=adding, removing=removing))
    return snapshot.with_partitions(updated)


def complete(snapshot: ClusterSnapshot, tps: Collection[TopicPartition] | None = None) -> ClusterSnapshot:
    """Every added replica catches up and joins the ISR; the moves of `tps` (default: all) finish."""
    updated: list[PartitionState] = []
    for tp, p in snapshot.partitions.items():
        if not p.is_reassigning or (tps is not None and tp not in tps):
            continue
        target = p.target_replicas
        isr = tuple(b for b in target if b in set(p.isr) | set(p.adding))
        leader = p.leader if p.leader in target else next(iter(isr), target[0])
        sizes = dict(p.replica_sizes)
        for broker in p.adding:
            sizes[broker] = p.size_bytes
        for broker in p.removing:
            sizes.pop(broker, None)
        updated.append(
            replace(p, replicas=target, isr=isr, leader=leader, adding=(), removing=(), replica_sizes=sizes)
        )
    return snapshot.with_partitions(updated)


def elect(snapshot: ClusterSnapshot, elections: Iterable[ElectLeader]) -> ClusterSnapshot:
    updated = []
    for election in elections:
        p = snapshot.partitions[election.tp]
        preferred = p.replicas[0]
        if preferred in p.isr and p.leader != preferred:
            updated.append(replace(p, leader=preferred))
    return snapshot.with_partitions(updated)


@dataclass
class DryRun:
    """The replica lists each partition passed through, and the decisions that got it there."""

    steps: dict[TopicPartition, list[tuple[tuple[int, ...], bool, int]]] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)
    final: ClusterSnapshot | None = None
    state: ExecutionState | None = None

    @property
    def cycles(self) -> int:
        return len(self.decisions)


def dry_run(
    snapshot: ClusterSnapshot, plan: ReassignmentPlan, limits: Limits, max_cycles: int = 100_000
) -> DryRun:
    """Drive `decide` against the instant fake until the plan is done or nothing more can start."""
    state = ExecutionState.initial(plan, snapshot, tuple(limits.ordering))
    result = DryRun()
    for tp in plan.targets:
        p = snapshot.partitions.get(tp)
        if p is not None:
            result.steps[tp] = [(p.replicas, False, -1)]
    changed: set[TopicPartition] | None = None
    for cycle in range(max_cycles):
        decision = decide(snapshot, plan, state, limits, changed)
        result.decisions.append(decision)
        state = decision.state
        snapshot = apply_starts(snapshot, decision.start)  # as the daemon does: reassignments, then elections
        snapshot = elect(snapshot, decision.elect)
        for start in decision.start:
            result.steps[start.tp].append((start.target, start.moves_leadership, cycle))
        idle = not decision.start and not decision.elect and not decision.completed
        if state.finished or (idle and not any(True for _ in state.in_flight())):
            break
        in_flight = {tp for tp, _ in state.in_flight()}
        snapshot = complete(snapshot, in_flight)
        changed = in_flight | {e.tp for e in decision.elect} | {s.tp for s in decision.start}
    result.final = snapshot
    result.state = state
    return result
