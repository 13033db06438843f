"""Cancelling a plan: every partition we moved ends on its pre-plan list or on its target, nothing between.

Kafka's own cancel (KIP-455) only reverts the reassignments in flight, and in its own order (the original
replicas without the added ones: `[6,3,5]` becomes `[3,5,6]`, so the preferred leader changes), and a
multi-step plan cancelled between two steps keeps its extra replicas for good. Here a cancel is a plan of
its own: each partition we touched gets a *goal*, whichever of its pre-plan list (order included) and its
target costs fewer copies from what it holds now, and the engine takes it there with the same steps,
limits, throttles and min.insync.replicas rules as any plan.

- Cost is the replicas the goal needs that the partition does not hold on an online broker (a replica
  being added holds nothing yet). On a tie the target wins: the work done is kept (a partition that holds
  all its target replicas finishes, dropping its extra one).
- A partition we never touched is left as it is, and so is one someone else is moving now; one at its
  target stays there; a dropped one is gone.
- A step in flight that is not the goal's next step is reverted at once (KIP-455 cancel); the partition
  then goes on from the replicas it had before that step. A step that is the goal's next step runs on.
- A revert keeps only the step's original replicas, so it waits while none of them is online and in sync
  (`unsafe_revert`): KRaft refuses such a revert (it would need an unclean election) and ZooKeeper mode
  accepts it and leaves the partition without a leader (docs/engine.md, "Controller modes").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from reassignd.engine.limits import Limits
from reassignd.engine.state import ENDED, MOVING, ExecutionState, PartitionProgress, Status
from reassignd.engine.steps import next_step
from reassignd.model import ClusterSnapshot, PartitionState, ReassignmentPlan, TopicPartition

Replicas = tuple[int, ...]


def touched(rec: PartitionProgress) -> bool:
    """Whether we changed the partition (or are changing it): a step started, or one that ended."""
    return rec.step > 0 or rec.status in MOVING


def cancel_goals(
    state: ExecutionState,
    snapshot: ClusterSnapshot,
    baseline: Mapping[TopicPartition, Replicas],
) -> dict[TopicPartition, Replicas]:
    """The list each partition we touched returns to; partitions already at their goal are left out
    unless a step of ours still runs on them."""
    online = snapshot.online_broker_ids()
    goals: dict[TopicPartition, Replicas] = {}
    for tp, rec in state.records.items():
        if rec.status in ENDED or rec.status is Status.EXTERNAL or not touched(rec):
            continue  # ended, never ours, or someone else's now: left as it is
        final = state.plan.targets[tp]
        before = baseline.get(tp, final)
        p = snapshot.partitions.get(tp)
        if p is None:  # unreadable now: undo, as a cancel asks, once it can be read
            goals[tp] = before
            continue
        held = {b for b in p.replicas if b not in p.adding and b in online}
        to_target = len(set(final) - held)
        to_before = len(set(before) - held)
        goal = final if to_target <= to_before else before
        if goal != p.replicas or rec.status in MOVING:
            goals[tp] = goal
    return goals


def cancel_state(
    state: ExecutionState,
    snapshot: ClusterSnapshot,
    goals: Mapping[TopicPartition, Replicas],
) -> ExecutionState:
    """The execution state of the cancel: the partitions with goals, their steps in flight kept as ours
    (`reverting` says which to revert), their step indexes continued."""
    plan = ReassignmentPlan(dict(goals))
    progress = {}
    for tp in goals:
        rec = state[tp]
        if rec.status in MOVING:
            progress[tp] = PartitionProgress(
                Status.IN_FLIGHT if rec.status is Status.IN_FLIGHT else Status.STARTING,
                rec.step,
                target=rec.target,
                source=rec.source,
                leader=rec.leader,
                moves_leadership=rec.moves_leadership,
            )
        else:
            progress[tp] = PartitionProgress(Status.PENDING, rec.step)
    return ExecutionState.initial(plan, snapshot, state.ordering, progress)


@dataclass(frozen=True, slots=True)
class Reverts:
    """What a cancel does this cycle with its steps in flight that do not lead to their goal."""

    now: tuple[TopicPartition, ...] = ()
    """To revert (KIP-455 cancel) in this cycle."""
    held: Mapping[TopicPartition, str] = field(default_factory=lambda: MappingProxyType({}))
    """Left running for now, with why (`unsafe_revert`); looked at again every cycle."""


def reverting(state: ExecutionState, snapshot: ClusterSnapshot, limits: Limits) -> Reverts:
    """Steps in flight in a cancel that do not lead to their goal: reverted now, or held while unsafe."""
    replica_count = limits.step_size
    online = snapshot.online_broker_ids()
    now: list[TopicPartition] = []
    held: dict[TopicPartition, str] = {}
    for tp, rec in state.in_flight():
        if rec.status is not Status.IN_FLIGHT:
            continue
        goal = state.plan.targets[tp]
        p = snapshot.partitions.get(tp)
        isr = p.isr if p is not None else rec.source
        step = next_step(rec.source, goal, isr, replica_count, snapshot.min_insync_replicas(tp.topic))
        if step is None or step.target != rec.target:
            why = unsafe_revert(rec.source, p, online)
            if why is None:
                now.append(tp)
            else:
                held[tp] = why
    return Reverts(tuple(now), MappingProxyType(held))


def unsafe_revert(original: Replicas, p: PartitionState | None, online: frozenset[int]) -> str | None:
    """Why reverting the reassignment of `p` now would cost it its leader, or None when it is safe.

    A revert keeps only the original replicas (the step's source: Kafka's replicas without the adding
    ones). With none of them online and in sync, KRaft refuses it with INVALID_REPLICA_ASSIGNMENT ("would
    require an unclean leader election", `ReplicationControlManager`/`PartitionReassignmentRevert`) unless
    the topic allows unclean elections, and ZooKeeper mode accepts it and leaves the partition without a
    leader until an unclean election (`KafkaController.onPartitionReassignment` stops the adding replicas,
    the leader among them). The step runs on meanwhile: an original replica rejoining the ISR makes the
    revert safe, and a step that completes ends the question (the cancel goes on from its target). A
    partition that cannot be read waits too, as its in-flight step does in `decide`.
    """
    if p is None:
        return "the partition cannot be read: its in-sync replicas are unknown"
    if not p.is_reassigning:
        return None
    if any(b in p.isr and b in online for b in original):
        return None
    return (
        f"reverting now would leave no leader: none of the original replicas {list(original)} is in sync "
        f"(in sync {sorted(p.isr)}); waiting for one to rejoin"
    )


OUTCOMES = ("target", "pre_plan", "unchanged", "dropped")


def outcome(
    final: Replicas, before: Replicas | None, now: Replicas | None, *, moved: bool, dropped: bool
) -> str:
    """Where a partition of a plan ended: on its `target`, back on its `pre_plan` list after we moved it,
    `unchanged` (never moved by us), or `dropped` with its topic."""
    if dropped:
        return "dropped"
    if now == final:
        return "target"
    if moved and now == before:
        return "pre_plan"
    return "unchanged"
