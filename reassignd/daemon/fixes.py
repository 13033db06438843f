"""Each anomaly kind's fix, as a plan (self-healing, daemon/healing.py): the planner goal it maps to, run
on the snapshot the proposal is made from, nothing ever onto an excluded broker (decommissioned, offline).

| kind | fix |
|---|---|
| `broker_failure` | the planner's drain of the broker |
| `new_broker` | the planner's fill of the broker |
| `rack_spread` | the uneven partitions re-placed (placement/respread.py), the rest of each kept |
| `replica_balance`, `leader_balance` | that planner goal's plan at `self.healing.balance.threshold` |
| `byte_balance` | the planner's size-aware replica balance (its byte goal) at the byte threshold |
| `disk_capacity` | the planner's hard disk goal at the disk threshold (its replica band the widest) |
| `under_replicated` | a preferred-leader election where the preferred is in sync and not leading; else none |
| `log_dir_offline` | the dir's partitions re-targeted off its broker (placement/retarget.py, as `retarget`) |

The election is a plan whose target is the partition's replicas as they are: it moves nothing, and ends
in the preferred-leader election every plan makes when a partition's target is reached.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from reassignd.daemon.roles import drain_plan, goal_plan
from reassignd.engine.anomalies import Anomaly, AnomalyKind, HealingSettings
from reassignd.engine.detectors import disk_limits, elections, urp_advice
from reassignd.model import ClusterSnapshot, ReassignmentPlan
from reassignd.placement.respread import respread_targets
from reassignd.placement.retarget import replacement_targets

WIDEST_BAND = 0.99
"""The replica goal's threshold in the disk-capacity fix: the planner's hard disk goal sheds the bytes,
and the replica balance after it moves nothing a band this wide allows."""


@dataclass(frozen=True, slots=True)
class Fix:
    plan: ReassignmentPlan | None
    note: str = ""
    """What the fix leaves as it is, and why (said in the anomaly's reason)."""


async def fix_of(
    anomaly: Anomaly, snapshot: ClusterSnapshot, excluded: Collection[int], settings: HealingSettings
) -> Fix:
    """The fix's plan (None: nothing to do); a ServiceError when the planner refuses."""
    kind = anomaly.kind
    if kind is AnomalyKind.BROKER_FAILURE:
        return Fix(await drain_plan(snapshot, anomaly.brokers[0], excluded))
    if kind is AnomalyKind.NEW_BROKER:
        return Fix(await goal_plan(snapshot, kind.goal, anomaly.brokers[0], excluded))
    if kind in (AnomalyKind.REPLICA_BALANCE, AnomalyKind.LEADER_BALANCE):
        return Fix(await goal_plan(snapshot, kind.goal, None, excluded, settings.balance_threshold))
    if kind is AnomalyKind.BYTE_BALANCE:  # the planner's byte goal: replica balance, size-aware
        threshold, byte_threshold = settings.balance_threshold, settings.byte_balance_threshold
        plan = await goal_plan(
            snapshot, "replica-balance", None, excluded, threshold, byte_threshold=byte_threshold
        )
        return Fix(plan)
    if kind is AnomalyKind.DISK_CAPACITY:  # the hard disk goal; the replica goal's band at its widest
        limits = disk_limits(snapshot, settings.disk_capacity_threshold)
        plan = await goal_plan(snapshot, "replica-balance", None, excluded, WIDEST_BAND, disk_limits=limits)
        return Fix(plan)
    if kind is AnomalyKind.RACK_SPREAD:
        return _respread(anomaly, snapshot, excluded)
    if kind is AnomalyKind.LOG_DIR_OFFLINE:
        return _off_dir(anomaly, snapshot, excluded)
    elect, checks = elections(snapshot, anomaly.partitions)
    return Fix(ReassignmentPlan(elect) if elect else None, urp_advice(checks) if checks else "")


def _respread(anomaly: Anomaly, snapshot: ClusterSnapshot, excluded: Collection[int]) -> Fix:
    wanted = set(anomaly.partitions)
    targets = {tp: p.replicas for tp, p in snapshot.partitions.items() if str(tp) in wanted}
    load = snapshot.replicas_per_broker()
    racks = {b: broker.rack for b, broker in snapshot.brokers.items()}
    eligible = snapshot.online_broker_ids() - frozenset(excluded)
    found = respread_targets(targets, racks, eligible, load)
    named = "; ".join(f"{tp}: {why}" for tp, why in sorted(found.unplaced.items())[:5])
    note = f"left as they are: {named}" if named else ""
    return Fix(ReassignmentPlan(found.targets) if found.targets else None, note)


def _off_dir(anomaly: Anomaly, snapshot: ClusterSnapshot, excluded: Collection[int]) -> Fix:
    """The replicas of a failed log dir moved to other brokers: Kafka answers KAFKA_STORAGE_ERROR to a
    move to another dir of the broker and cannot delete them (sim/log_dirs.py), so each partition's
    replica on the broker is replaced, in its place in the list, by the placer's choice (as `reassignd
    retarget` replaces a gone broker: rack spread kept, nothing onto an excluded broker). A partition with
    no leader has no replica to copy from: left as it is, said in the note."""
    broker = anomaly.brokers[0]
    wanted = set(anomaly.partitions)
    held = {tp: p for tp, p in snapshot.partitions.items() if str(tp) in wanted and broker in p.replicas}
    leaderless = sorted(str(tp) for tp, p in held.items() if not p.has_leader)
    targets = {tp: p.replicas for tp, p in held.items() if p.has_leader}
    load = snapshot.replicas_per_broker()
    racks = {b: info.rack for b, info in snapshot.brokers.items()}
    eligible = snapshot.online_broker_ids() - frozenset(excluded) - {broker}
    found = replacement_targets(targets, (broker,), racks, eligible, load)
    notes = [f"{tp}: {why}" for tp, why in sorted(found.unplaced.items())]
    notes += [f"{tp}: no leader, no replica to copy from" for tp in leaderless]
    named = "; ".join(notes[:5]) + (f"; and {len(notes) - 5} more" if len(notes) > 5 else "")
    note = f"left as they are: {named}" if notes else ""
    return Fix(ReassignmentPlan(found.targets) if found.targets else None, note)


def fix_name(anomaly: Anomaly) -> str:
    """The fix's plan's name, as `reassignd status` shows it."""
    goal = anomaly.kind.goal
    if anomaly.kind is AnomalyKind.LOG_DIR_OFFLINE:
        broker, _, dir_slug = anomaly.subject.partition("_")
        count = len(anomaly.partitions)
        path = anomaly.log_dir or dir_slug  # the slug only for an anomaly stored without its path
        dirs = "dirs" if "," in path else "dir"
        return f"self-healing: {goal} {count} partition(s) off broker {broker}'s log {dirs} {path}"
    if not anomaly.kind.about_partitions:
        return f"self-healing: {goal} broker {anomaly.brokers[0]}"
    if anomaly.partitions:
        return f"self-healing: {goal} {len(anomaly.partitions)} partition(s)"
    return f"self-healing: {goal}"
