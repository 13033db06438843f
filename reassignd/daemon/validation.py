"""Whole-plan validation against the live cluster, before anything is applied.

Pure: the caller passes what it read (snapshot, ongoing reassignments, the running plan). Every problem is
collected so the operator fixes the plan in one round; a plan with any problem is rejected whole.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from reassignd.model import ClusterSnapshot, Problem, ReassignmentPlan, TopicPartition


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
    problems: list[Problem] = []
    if not plan.targets:
        problems.append(Problem("plan", "partitions", "is empty: nothing to reassign"))
    known_brokers = set(snapshot.brokers)
    ours_set = set(ours)
    busy = busy or {}
    for tp in sorted(plan.targets):
        target = plan.targets[tp]
        where = str(tp)
        current = snapshot.partitions.get(tp)
        if current is None:
            topic_known = tp.topic in snapshot.topics
            problems.append(
                Problem(
                    where,
                    "partition",
                    f"topic {tp.topic!r} has no partition {tp.partition}"
                    if topic_known
                    else f"unknown topic {tp.topic!r}",
                )
            )
            continue
        unknown = sorted(b for b in target if b not in known_brokers)
        if unknown:
            problems.append(
                Problem(
                    where,
                    "replicas",
                    f"unknown broker id(s) {unknown} in {list(target)}: not in the cluster's metadata "
                    "(never registered, or offline now)",
                )
            )
        if len(target) != len(current.target_replicas) and not allow_rf_change:
            problems.append(
                Problem(
                    where,
                    "replicas",
                    f"changes the replication factor from {len(current.target_replicas)} to {len(target)}; "
                    "submit with allow_rf_change to do that on purpose",
                )
            )
        if tp in busy:
            problems.append(Problem(where, "partition", f"already part of plan {busy[tp]}"))
        elif tp in ongoing and tp not in ours_set:
            problems.append(
                Problem(
                    where, "partition", "is being reassigned by someone else (ListPartitionReassignments)"
                )
            )
    return problems
