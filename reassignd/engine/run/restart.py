"""The restart part: a run's state rebuilt from what the store kept, checked against what Kafka shows.

The store keeps one row per partition (rows.py) and the plan's figures; the first observation of a run,
after a start, a restart or a failover, turns them and the snapshot into the execution state, the plan's
start (each partition's replicas and size before the plan), the cancel's goals and the progress figures.
Kafka's view wins where the two differ: the first decision reconciles every partition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from reassignd.engine.progress import source_size
from reassignd.engine.run.rows import PartitionRow, Replicas, decoded_rows
from reassignd.engine.state import ExecutionState
from reassignd.engine.tracking import Tracking, started
from reassignd.model import ClusterSnapshot, ReassignmentPlan, TopicPartition

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Stored:
    """What the store held of the run when it (re)started."""

    rows: Mapping[TopicPartition, Mapping[str, Any]] = field(default_factory=lambda: _EMPTY)
    summary: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, slots=True)
class PlanStart:
    """Each partition's replicas and size before the plan: where a cancel may return it, and the
    plan's fixed work (progress counts from it)."""

    baseline: Mapping[TopicPartition, Replicas] = field(default_factory=lambda: _EMPTY)
    sizes: Mapping[TopicPartition, int] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, slots=True)
class Rebuilt:
    execution: ExecutionState
    start: PlanStart
    goals: Mapping[TopicPartition, Replicas] | None
    rows: Mapping[TopicPartition, PartitionRow]
    started_at: Mapping[TopicPartition, float]
    tracking: Tracking


def rebuilt(
    stored: Stored, plan: ReassignmentPlan, full: ClusterSnapshot, ordering: tuple[str, ...], window: float
) -> Rebuilt:
    """`full`: the first snapshot, every size known; `window`: the stall window of the figures."""
    rows = decoded_rows(stored.rows, plan.targets)
    start = _plan_start(rows, plan, full)
    goals = {tp: row.goal for tp, row in rows.items() if row.goal is not None}
    if goals:
        progress = {tp: rows[tp].progress for tp in goals}
        execution = ExecutionState.initial(ReassignmentPlan(goals), full, ordering, progress)
    else:
        progress = {tp: row.progress for tp, row in rows.items()}
        execution = ExecutionState.initial(plan, full, ordering, progress)
    summary = stored.summary
    return Rebuilt(
        execution=execution,
        start=start,
        goals=MappingProxyType(goals) if goals else None,
        rows=MappingProxyType(rows),
        started_at=MappingProxyType({tp: r.started_at for tp, r in rows.items() if r.started_at is not None}),
        tracking=started(
            window,
            start.baseline,
            plan.targets,
            start.sizes,
            finished_bytes=int(summary.get("finished_bytes", 0)),
            moved_bytes=int(summary.get("bytes_moved", 0)),
            percent=float(summary.get("percent", 0.0)),
        ),
    )


def _plan_start(
    rows: Mapping[TopicPartition, PartitionRow], plan: ReassignmentPlan, full: ClusterSnapshot
) -> PlanStart:
    """As the rows kept it; for a partition without one that never moved, as Kafka shows it now."""
    baseline: dict[TopicPartition, Replicas] = {}
    sizes: dict[TopicPartition, int] = {}
    for tp in plan.targets:
        row = rows.get(tp)
        p = full.partitions.get(tp)
        if row is not None and row.baseline is not None:
            baseline[tp] = row.baseline
            sizes[tp] = row.start_size
        elif p is not None and (row is None or row.step == 0):
            baseline[tp] = p.original_replicas
            sizes[tp] = source_size(p)
    return PlanStart(MappingProxyType(baseline), MappingProxyType(sizes))
