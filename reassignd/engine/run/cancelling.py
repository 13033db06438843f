"""The cancel part: a cancelled plan becomes a plan of its own, towards each partition's goal (cancel.py
has the rules).

The first observation after the cancel command makes the plan's last decision (nothing new starts), gives
each partition it touched a goal and starts the cancel's state towards them (`opened`). From then on each
cycle reverts the steps in flight that do not lead to their goal, or holds them while reverting would cost
the partition its leader (`reverts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from reassignd.engine.cancel import Reverts, cancel_goals, cancel_state, reverting
from reassignd.engine.decide import decide
from reassignd.engine.limits import Limits
from reassignd.engine.run.effects import Answered, Log
from reassignd.engine.run.outbox import Outbox
from reassignd.engine.run.reading import Sight
from reassignd.engine.run.rows import Replicas
from reassignd.engine.run.scheduling import Opening, Round, settling
from reassignd.engine.state import ExecutionState
from reassignd.model import ReassignmentPlan, TopicPartition

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Cancel:
    goals: Mapping[TopicPartition, Replicas] | None = None
    """Each touched partition's goal, once the cancel has started (None: not cancelling, or not yet)."""
    held: Mapping[TopicPartition, str] = field(default_factory=lambda: _EMPTY)
    """Steps to revert that are left running for now, with why (cancel.unsafe_revert)."""


def opened(
    execution: ExecutionState,
    sight: Sight,
    limits: Limits,
    out: Outbox,
    *,
    plan: ReassignmentPlan,
    baseline: Mapping[TopicPartition, Replicas],
    started_at: Mapping[TopicPartition, float] = _EMPTY,
) -> Opening:
    """The cancel's start: the plan's last decision, then a goal for each partition it touched
    (`started_at`: when each step in flight started, scheduling.settling)."""
    view = sight.view
    nothing_new = replace(limits, parallel_partition_count=0)
    changed, recent = settling(execution, started_at, sight, sight.changed)
    settled = decide(view, execution.plan, execution, nothing_new, changed, recent=recent)
    goals = cancel_goals(settled.state, view, baseline)
    to_target = sum(1 for tp, g in goals.items() if g == plan.targets[tp])
    out.before.append(
        Log(
            "info",
            "cancelling: partitions return to their pre-plan list or their target",
            {"plan": out.plan_id, "partitions": len(goals), "to_target": to_target},
        )
    )
    cancel = cancel_state(settled.state, view, goals)
    return Opening(Round(settled, execution), MappingProxyType(goals), cancel)


def reverts(state: ExecutionState, sight: Sight, limits: Limits, out: Outbox) -> Reverts:
    """The steps in flight to revert now (sent with this cycle's reassignments) and those held."""
    found = reverting(state, sight.view, limits)
    out.reassign.update(dict.fromkeys(found.now))
    return found


def held(cancel: Cancel, found: Reverts, out: Outbox) -> Cancel:
    """Each step newly held back is said once."""
    for tp, why in found.held.items():
        if tp not in cancel.held:
            fields = {"plan": out.plan_id, "partition": str(tp), "why": why}
            out.say(Log("warning", "revert held back", fields))
    return replace(cancel, held=found.held)


def answered(
    reverted: tuple[TopicPartition, ...], answer: Answered, out: Outbox
) -> tuple[TopicPartition, ...]:
    """A revert Kafka refused is sent again next cycle (one already ended needs none). Returns the reverts
    Kafka accepted: their partitions read back on the step's source are reverted, not Metadata lagging
    behind the step's start (scheduling.settling)."""
    results = answer.reassign or {}
    accepted: list[TopicPartition] = []
    for tp in reverted:
        error = results.get(tp)
        if error is None:
            accepted.append(tp)
        elif "NO_REASSIGNMENT_IN_PROGRESS" not in str(error):
            fields = {"plan": out.plan_id, "partition": str(tp), "error": str(error)}
            out.say(Log("warning", "revert refused; retried", fields))
    return tuple(accepted)
