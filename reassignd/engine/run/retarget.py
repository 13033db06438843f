"""The re-target part: partitions of a running plan that wait on a broker that is gone get new targets,
swapped into the run without restarting it (`reassignd retarget`).

The daemon finds what waits (`gone_waits`), asks the placer for new targets (placement/retarget.py) and
hands them here (`swapped`): the plan's targets change, a partition waiting to start is queued again
towards its new target, and a step in flight that cannot complete (it adds or keeps a gone broker) is
withdrawn: each cycle reverts it (a KIP-455 cancel, as a plan's cancel reverts its steps, and held the
same way while reverting would cost the partition its leader, `withdrawals`) until Kafka has, and then
the partition starts again under its next step index, towards the new target.

What lasts: one `plan.retarget` journal entry per swap, with every partition's old and new target and
the step withdrawn. A restarted or failed-over daemon replays them onto the submitted plan (`replayed`),
so the run goes on where it was; the submitted plan's body is never rewritten.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from reassignd.engine.cancel import Reverts, unsafe_revert
from reassignd.engine.journal import Event, EventKind
from reassignd.engine.run.effects import Log, Notify
from reassignd.engine.run.outbox import Outbox
from reassignd.engine.run.reading import Sight
from reassignd.engine.run.state import RunState, Transition
from reassignd.engine.state import ENDED, MOVING, ExecutionState, PartitionProgress, Status
from reassignd.model import ClusterSnapshot, ReassignmentPlan, TopicPartition

Replicas = tuple[int, ...]


def gone_waits(run: RunState, alive: Collection[int]) -> dict[TopicPartition, Replicas]:
    """The partitions of the run that cannot finish without a broker that is not `alive` (stopped or no
    longer registered): their target names one, or their step in flight adds or keeps one. Each with
    those brokers."""
    execution = run.execution
    live = frozenset(alive)
    waits: dict[TopicPartition, Replicas] = {}
    for tp, final in run.plan.targets.items():
        rec = execution[tp] if execution is not None else None
        if rec is not None and rec.status in ENDED:
            continue
        named = set(final) | (set(rec.target) if rec is not None and rec.status in MOVING else set())
        down = tuple(sorted(b for b in named if b not in live))
        if down:
            waits[tp] = down
    return dict(sorted(waits.items()))


def swapped(
    run: RunState, targets: Mapping[TopicPartition, Replicas], view: ClusterSnapshot, gone: Collection[int]
) -> Transition:
    """The run with `targets` in its plan (each must be a partition of the plan, not ended), journaled.

    `view`: the cluster now (the plan's partitions and every broker), to queue what waits again;
    `gone`: the brokers the re-target works around (a step in flight naming one is withdrawn)."""
    execution = run.execution
    unknown = sorted(str(tp) for tp in targets if tp not in run.plan.targets)
    if unknown:
        raise ValueError(f"not partitions of plan {run.plan_id}: {', '.join(unknown)}")
    gone_set = frozenset(gone)
    plan = ReassignmentPlan(
        {**run.plan.targets, **targets},
        {tp: dirs for tp, dirs in run.plan.log_dirs.items() if tp not in targets},
    )
    withdraw = dict(run.withdraw)
    entries = []
    records: dict[TopicPartition, PartitionProgress] = {}
    for tp in sorted(targets):
        rec = execution[tp] if execution is not None else None
        entry: dict[str, Any] = {
            "topic": tp.topic,
            "partition": tp.partition,
            "from": list(run.plan.targets[tp]),
            "to": list(targets[tp]),
        }
        if rec is not None and rec.status in MOVING:
            if gone_set & set(rec.target) or not set(rec.adding) <= set(targets[tp]):
                withdraw[tp] = rec.step
                entry["withdraw_step"] = rec.step
        elif rec is not None and rec.status not in ENDED:
            records[tp] = PartitionProgress(Status.PENDING, rec.step)
        entries.append(entry)
    if execution is not None:
        execution = execution.retargeted(plan, records, view)
    out = Outbox(run.plan_id)
    out.journal(
        Event(EventKind.PLAN_RETARGETED, run.plan_id, data={"gone": sorted(gone_set), "partitions": entries})
    )
    withdrawn = sum(1 for e in entries if "withdraw_step" in e)
    fields = {
        "plan": run.plan_id,
        "partitions": len(entries),
        "withdrawn": withdrawn,
        "gone": sorted(gone_set),
    }
    out.say(
        Notify(
            "plan.retargeted", {"plan_id": run.plan_id, "partitions": len(entries), "gone": sorted(gone_set)}
        ),
        Log("info", "plan re-targeted", fields),
    )
    schedule = replace(run.schedule, execution=execution)
    swapped_run = replace(run, plan=plan, schedule=schedule, withdraw=MappingProxyType(withdraw))
    return Transition(swapped_run, out.effects())


def withdrawals(
    withdraw: Mapping[TopicPartition, int], state: ExecutionState, sight: Sight, out: Outbox
) -> tuple[Reverts, Mapping[TopicPartition, int]]:
    """The withdrawn steps still in flight, reverted now (sent with this cycle's reassignments) or held
    while reverting would cost the partition its leader; and the withdrawals still to watch."""
    if not withdraw:
        return Reverts(), withdraw
    online = sight.view.online_broker_ids()
    now: list[TopicPartition] = []
    held: dict[TopicPartition, str] = {}
    left: dict[TopicPartition, int] = {}
    for tp, step in sorted(withdraw.items()):
        rec = state[tp]
        if rec.status not in MOVING or rec.step != step:
            continue  # reverted and moved on (its step's index is used up), or ended
        left[tp] = step
        if rec.status is not Status.IN_FLIGHT:
            continue
        why = unsafe_revert(rec.source, sight.view.partitions.get(tp), online)
        if why is None:
            now.append(tp)
        else:
            held[tp] = why
    out.reassign.update(dict.fromkeys(now))
    return Reverts(tuple(now), MappingProxyType(held)), MappingProxyType(left)


def replayed(
    plan: ReassignmentPlan, entries: Iterable[Mapping[str, Any]]
) -> tuple[ReassignmentPlan, Mapping[TopicPartition, int]]:
    """The submitted plan with the journal's re-targets applied in order (`plan.retarget` entries' data),
    and the steps they withdrew. Entries naming a partition that is not the plan's are ignored."""
    targets = dict(plan.targets)
    dirs = dict(plan.log_dirs)
    withdraw: dict[TopicPartition, int] = {}
    for data in entries:
        for item in data.get("partitions", ()):
            tp = TopicPartition(str(item["topic"]), int(item["partition"]))
            if tp not in targets:
                continue
            targets[tp] = tuple(int(b) for b in item["to"])
            dirs.pop(tp, None)
            if "withdraw_step" in item:
                withdraw[tp] = int(item["withdraw_step"])
    if not withdraw and targets == dict(plan.targets):
        return plan, MappingProxyType({})
    return ReassignmentPlan(targets, dirs), MappingProxyType(withdraw)
