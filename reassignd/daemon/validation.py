"""Whole-plan validation against the live cluster, before anything is applied.

Pure: the caller passes what it read (snapshot, ongoing reassignments, the running plan). Every problem is
collected so the operator fixes the plan in one round; a plan with any problem is rejected whole. A
`PlanDraft` (a document that did not parse cleanly) brings its own problems, and the broker ids of its
broken entries are still checked against the cluster, so `[-1, 99]` is reported for both.

Two kinds of refusal (`plan_rejection`): a plan that is wrong (`422 invalid_plan`: unknown topics or
brokers, a replication-factor change not allowed, a bad document, or nothing to do: every partition is
already on its target) and a plan that is right but collides
with work in progress (`409 conflict`: its partitions belong to an unfinished plan or are being
reassigned by another tool). The second can be submitted again unchanged once that work is over.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from reassignd.daemon.service import ServiceError
from reassignd.engine.log_dir_moves import log_dir_problems
from reassignd.model import (
    EMPTY_PLAN,
    ClusterSnapshot,
    PartitionState,
    PlanDraft,
    Problem,
    ReassignmentPlan,
    TopicPartition,
)
from reassignd.store.base import PlanRecord

MAX_CONFLICT_PARTITIONS_LISTED = 20


@dataclass(frozen=True, slots=True)
class PlanConflict(Problem):
    """A partition the plan cannot take now: held by `plan_id`, or (None) reassigned by another tool."""

    plan_id: str | None = None
    partition: str = ""


def validate_plan(
    plan: ReassignmentPlan,
    snapshot: ClusterSnapshot,
    *,
    ongoing: Collection[TopicPartition],
    ours: Collection[TopicPartition] = (),
    busy: Mapping[TopicPartition, str] | None = None,
    allow_rf_change: bool = False,
) -> list[Problem]:
    """Problems with `plan` on this cluster.

    `ongoing`: partitions the cluster reports as reassigning; those not in `ours` belong to someone else.
    `busy`: partitions of plans already queued or running, with the plan id that holds them.
    """
    problems = _draft_problems(plan, snapshot)
    if not plan.targets and not problems:
        problems.append(EMPTY_PLAN)  # a plan built in code; a parsed document says so itself
    ours_set, busy = set(ours), busy or {}
    for tp in sorted(plan.targets):
        current = snapshot.partitions.get(tp)
        if current is None:
            problems.append(_missing(tp, snapshot))
            continue
        problems += _unknown_brokers(tp, plan.targets[tp], snapshot)
        if tp in busy:
            problems.append(
                PlanConflict(str(tp), "partition", f"already part of plan {busy[tp]}", busy[tp], str(tp))
            )
        elif tp in ongoing and tp not in ours_set:
            reason = "is being reassigned by someone else (ListPartitionReassignments)"
            problems.append(PlanConflict(str(tp), "partition", reason, None, str(tp)))
        elif len(plan.targets[tp]) != len(current.target_replicas) and not allow_rf_change:
            # not for a partition another plan or tool holds: in the middle of a step its replica list
            # holds the new replicas too, so its replication factor cannot be read off it
            problems.append(_rf_change(tp, plan.targets[tp], current))
    if not problems and _already_applied(plan, snapshot):
        problems.append(
            Problem(
                "plan",
                "partitions",
                f"every partition ({len(plan.targets)}) is already on its target replicas: nothing to do "
                "(`reassignd verify PLAN.json` checks a plan against the cluster)",
            )
        )
    problems += log_dir_problems(
        ReassignmentPlan(
            {tp: t for tp, t in plan.targets.items() if tp in snapshot.partitions},
            {tp: d for tp, d in plan.log_dirs.items() if tp in snapshot.partitions},
        ),
        snapshot,
    )
    return problems


def decommissioned_problems(
    plan: ReassignmentPlan, snapshot: ClusterSnapshot, decommissioned: Collection[int]
) -> list[Problem]:
    """A replica the plan adds on a decommissioned broker (`reassignd brokers decommission`), per
    partition, naming the broker. Replicas it already holds may stay: only receiving is refused."""
    if not decommissioned:
        return []
    banned = frozenset(decommissioned)
    problems = []
    for tp in sorted(plan.targets):
        current = snapshot.partitions.get(tp)
        held = set(current.replicas) if current is not None else set()
        added = sorted(b for b in plan.targets[tp] if b in banned and b not in held)
        if added:
            names = ", ".join(map(str, added))
            message = (
                f"adds a replica on decommissioned broker {names} ({list(plan.targets[tp])}): recommission "
                "it (`reassignd brokers recommission`) or submit with allow_decommissioned"
            )
            problems.append(Problem(str(tp), "replicas", message))
    return problems


def _draft_problems(plan: ReassignmentPlan, snapshot: ClusterSnapshot) -> list[Problem]:
    """A draft's own problems, and the unknown brokers its broken entries name."""
    if not isinstance(plan, PlanDraft):
        return []
    problems = list(plan.problems)
    for where, ids in sorted(plan.named_brokers.items()):
        unknown = sorted(b for b in ids if b not in snapshot.brokers)
        if unknown:
            message = f"unknown broker id(s) {unknown}: not in the cluster's metadata"
            problems.append(Problem(where, "replicas", message))
    return problems


def _missing(tp: TopicPartition, snapshot: ClusterSnapshot) -> Problem:
    if tp.topic in snapshot.topics:
        return Problem(str(tp), "partition", f"topic {tp.topic!r} has no partition {tp.partition}")
    return Problem(str(tp), "partition", f"unknown topic {tp.topic!r}")


def _unknown_brokers(tp: TopicPartition, target: tuple[int, ...], snapshot: ClusterSnapshot) -> list[Problem]:
    unknown = sorted(b for b in target if b not in snapshot.brokers)
    if not unknown:
        return []
    message = (
        f"unknown broker id(s) {unknown} in {list(target)}: not in the cluster's metadata "
        "(never registered, or offline now)"
    )
    return [Problem(str(tp), "replicas", message)]


def _rf_change(tp: TopicPartition, target: tuple[int, ...], current: PartitionState) -> Problem:
    rf, new_rf = len(current.target_replicas), len(target)
    message = (
        f"changes the replication factor from {rf} to {new_rf}; "
        "submit with allow_rf_change to do that on purpose"
    )
    return Problem(str(tp), "replicas", message)


def _already_applied(plan: ReassignmentPlan, snapshot: ClusterSnapshot) -> bool:
    """Every partition holds exactly its target replicas, in order, with no move under way, and the plan
    moves no replica between log dirs (what a dir holds is not in the snapshot: such a plan is never a
    no-op here). A plan like that would be queued and complete at once, having done nothing. A partition
    on its target whose preferred leader is in sync but not leading is not done: the plan ends in its
    preferred-leader election (self-healing's fix of an under-replicated partition is such a plan)."""
    for tp, target in plan.targets.items():
        current = snapshot.partitions.get(tp)
        if current is None or current.is_reassigning or current.replicas != target or tp in plan.log_dirs:
            return False
        if current.leader != target[0] and target[0] in current.isr:
            return False
    return bool(plan.targets)


def unfinished_partitions(records: Iterable[PlanRecord]) -> dict[TopicPartition, str]:
    """The partitions of every plan not finished yet (queued, running, paused, cancelling), by plan id: a new
    plan may not take any of them (409), whether or not their plan has started."""
    taken: dict[TopicPartition, str] = {}
    for record in records:
        if record.status.terminal:
            continue
        for entry in record.plan.get("partitions", ()):
            taken.setdefault(TopicPartition(str(entry["topic"]), int(entry["partition"])), record.id)
    return taken


def plan_rejection(problems: Sequence[Problem]) -> ServiceError:
    """409 conflict when every problem is a collision with work in progress, else 422 invalid_plan."""
    conflicts = [p for p in problems if isinstance(p, PlanConflict)]
    if conflicts and len(conflicts) == len(problems):
        holders = sorted({c.plan_id for c in conflicts if c.plan_id is not None})
        holder = holders[0] if len(holders) == 1 else None
        partitions = [c.partition for c in conflicts[:MAX_CONFLICT_PARTITIONS_LISTED]]
        who = f"unfinished plan {holder}" if holder else "work in progress"
        return ServiceError(
            "conflict",
            f"{len(conflicts)} partition(s) are taken by {who}; submit again once it is over",
            tuple(problems),
            details={"plan_id": holder, "partitions": partitions},
        )
    return ServiceError("invalid_plan", f"plan rejected: {len(problems)} problem(s)", tuple(problems))
