"""A run's figures, as status shows them and the store keeps them once the plan ended."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reassignd.engine.broker_summary import broker_moves, throttle_peaks
from reassignd.engine.cancel import OUTCOMES, outcome, touched
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.run.state import OUTCOMES_LISTED, RunState
from reassignd.engine.state import (
    Status,
)


def worth_saving(saved: Mapping[str, Any] | None, summary: Mapping[str, Any]) -> bool:
    if saved is None:
        return True
    for key in ("state", "partitions_done", "partitions_dropped", "bytes_total", "throttles_peak"):
        if saved.get(key) != summary.get(key):
            return True
    return abs(float(saved.get("percent") or 0) - float(summary.get("percent") or 0)) >= 0.5


def summary_of(run: RunState) -> dict[str, Any]:
    """The plan's figures, as status shows them and the store keeps them once the plan has ended."""
    t = run.progress.tracking
    execution = run.execution
    counts = execution.counts if execution is not None else {}
    total = len(run.plan)
    if run.cancel.goals is None:
        done = counts.get(Status.DONE, 0)
        dropped = counts.get(Status.DROPPED, 0)
    else:
        done = int((run.progress.saved_summary or {}).get("partitions_done", 0))
        dropped = len(t.dropped) + counts.get(Status.DROPPED, 0)
    in_flight = len(execution.in_flight_set) if execution is not None else 0
    dirs = run.log_dirs
    if dirs.wanted and execution is not None:
        # a partition is done when its dirs are too; a log-dir move in flight is a partition in flight
        pending = dirs.pending
        if run.cancel.goals is None:
            done -= sum(1 for tp in pending if execution[tp].status is Status.DONE)
        in_flight += len(dirs.in_flight_partitions() - execution.in_flight_set)
    summary: dict[str, Any] = {
        "state": run.status.value,
        "partitions_total": total,
        "partitions_done": done,
        "partitions_dropped": dropped,
        "partitions_in_flight": in_flight,
        "partitions_waiting": execution.waiting_count if execution is not None else 0,
        "bytes_total": t.total_bytes,
        "bytes_done": t.done_bytes,
        "bytes_moved": t.moved_bytes,
        "bytes_remaining": t.remaining_bytes,
        "bytes_grown": t.grown_bytes,
        "bytes_dropped": int(t.dropped_bytes),
        "percent": round(t.percent, 2),
        "rate_bytes_per_sec": t.rate,
        "eta_seconds": t.eta,
        "eta_reason": t.eta_reason,
        "finished_bytes": t.finished_bytes,
        "throttles_peak": throttle_peaks(run.progress.saved_summary, *run.throttles.applied_rates()),
    }
    if dirs.wanted:
        summary["log_dir_moves"] = dirs.to_json()
    if run.status.terminal:
        summary["partitions_in_flight"] = 0
        summary["partitions_waiting"] = 0
        summary["bytes_remaining"] = 0 if run.status is PlanStatus.COMPLETED else t.remaining_bytes
        summary["eta_seconds"] = 0.0 if run.status is PlanStatus.COMPLETED else None
        summary["rate_bytes_per_sec"] = None
        summary["outcome"] = {
            **outcomes(run),
            "brokers": broker_moves(run.start.baseline, run.reading.replicas_now, run.start.sizes),
            "throttles": summary["throttles_peak"],
        }
    if run.cancel.goals is not None:
        summary["cancel"] = {
            "partitions": len(run.cancel.goals),
            "to_target": sum(1 for tp, g in run.cancel.goals.items() if g == run.plan.targets[tp]),
            "to_pre_plan": sum(1 for tp, g in run.cancel.goals.items() if g != run.plan.targets[tp]),
            "remaining": 0
            if execution is None
            else len(execution.plan) - execution.counts[Status.DONE] - execution.counts[Status.DROPPED],
        }
    return summary


def outcomes(run: RunState) -> dict[str, Any]:
    """Where each partition ended: counts, and the partitions listed (up to OUTCOMES_LISTED each)."""
    lists: dict[str, list[str]] = {name: [] for name in OUTCOMES}
    execution = run.execution
    for tp, final in sorted(run.plan.targets.items()):
        row = run.schedule.rows.get(tp)
        moved = row is not None and row.step > 0
        status = None if row is None else row.status
        if execution is not None and tp in execution.rank_of:
            rec = execution[tp]
            moved = moved or touched(rec)
            status = rec.status if rec.status is Status.DROPPED else status
        where = outcome(
            final,
            run.start.baseline.get(tp),
            run.reading.replicas_now.get(tp),
            moved=moved,
            dropped=status is Status.DROPPED or tp in run.progress.tracking.dropped,
        )
        lists[where].append(str(tp))
    return {
        "counts": {name: len(items) for name, items in lists.items()},
        "partitions": {name: items[:OUTCOMES_LISTED] for name, items in lists.items() if name != "target"},
    }


def summary_line(run: RunState) -> str:
    """The run in one line, for the cycle's log."""
    execution = run.execution
    if execution is None:
        return "waiting for the first read"
    counts = execution.counts
    moving = counts[Status.IN_FLIGHT] + counts[Status.STARTING]
    line = (
        f"in flight {moving}, pending {counts[Status.PENDING]}, blocked {counts[Status.BLOCKED]}, "
        f"external {counts[Status.EXTERNAL]}, done {counts[Status.DONE]}/{len(execution.plan)}"
    )
    if counts[Status.DROPPED]:
        line += f", dropped {counts[Status.DROPPED]} (topic deleted)"
    dirs = run.log_dirs
    if dirs.wanted:
        line += f"; log dirs: in flight {dirs.in_flight}, waiting {dirs.waiting}, done {len(dirs.done)}"
    if run.cancel.goals is not None:
        line = f"cancel: {line}"
    return f"{line}; {run.progress.tracking.percent:.1f}%"
