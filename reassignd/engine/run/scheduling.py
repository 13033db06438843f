"""The run's scheduling part: the steps decided, and the rows they change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reassignd.engine.actions import StartStep
from reassignd.engine.run.rows import PartitionRow
from reassignd.engine.run.state import RunState
from reassignd.engine.state import ExecutionState
from reassignd.model import TopicPartition


def row_of(run: RunState, state: ExecutionState, tp: TopicPartition, now: float) -> PartitionRow:
    began = run.step_started_at.get(tp)
    return PartitionRow.of(
        tp,
        state[tp],
        baseline=run.baseline.get(tp),
        start_size=run.start_sizes.get(tp, 0),
        goal=None if run.goals is None else run.goals.get(tp),
        started_at=now if began is None else began,
    )


def changed_rows(
    run: RunState,
    state: ExecutionState,
    previous: ExecutionState,
    *,
    changed: set[TopicPartition] | None,
    report: Mapping[str, tuple[Any, ...]],
    now: float,
    starts: tuple[StartStep, ...],
) -> dict[TopicPartition, PartitionRow]:
    """Rows to write: a record changes only where the decision reconciled (changed) or acted."""
    if changed is None or not run.rows:
        touched_now = set(state.plan.targets)
    else:
        touched_now = set(changed).union(
            (s.tp for s in starts),
            report["completed"],
            report["aborted"],
            report["dropped"],
            report["recovered"],
        )
        touched_now |= {tp for tp in state.in_flight_set if tp not in previous.in_flight_set}
    out: dict[TopicPartition, PartitionRow] = {}
    for tp in touched_now:
        if tp not in state.rank_of:
            continue
        row = row_of(run, state, tp, now)
        if run.rows.get(tp) != row:
            out[tp] = row
    return out
