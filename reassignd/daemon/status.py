"""Status views of the controller, in the JSON shapes of reassignd/daemon/openapi.json.

Synchronous and read-only: built from the view the controller publishes (daemon/view.py: the plan
records, the running plan's run state), never from a fresh cluster call. A plan that is not running shows
the figures the store keeps for it (`PlanRecord.summary`, written by the plan-run machine), so a finished
plan shows the same figures after a restart or a failover as before.
"""

from __future__ import annotations

import itertools
from typing import Any

from reassignd import config_keys
from reassignd.daemon.service import JSON, ServiceError
from reassignd.daemon.view import ControllerView, cluster_view, iso_time, store_view
from reassignd.engine import Status, WaitReason
from reassignd.engine.limits import Limits
from reassignd.engine.run import RunState, summary_of
from reassignd.engine.throttle import lagging_replicas, moves_in_flight
from reassignd.store.base import PlanSummary

RATE_KEYS = (
    config_keys.LEADER_REASSIGNMENT_THROTTLED_RATE,
    config_keys.FOLLOWER_REASSIGNMENT_THROTTLED_RATE,
    config_keys.LOG_DIR_REASSIGNMENT_THROTTLED_RATE,
)
WAITING_SHOWN = 200
_PROGRESS_KEYS = (
    "partitions_done",
    "partitions_in_flight",
    "partitions_waiting",
    "partitions_dropped",
    "bytes_total",
    "bytes_done",
    "bytes_moved",
    "bytes_remaining",
    "bytes_grown",
    "bytes_dropped",
    "percent",
    "rate_bytes_per_sec",
    "eta_seconds",
    "eta_reason",
)


def _current_run(view: ControllerView, record: PlanSummary) -> RunState | None:
    run = view.run
    return run if run is not None and run.plan_id == record.id and run.execution is not None else None


def _figures(view: ControllerView, record: PlanSummary) -> dict[str, Any]:
    run = _current_run(view, record)
    if run is not None:
        return summary_of(run)
    return dict(record.summary or {})


def _progress(view: ControllerView, record: PlanSummary) -> JSON:
    partitions = record.partitions
    figures = _figures(view, record)
    progress: JSON = {"partitions_total": partitions}
    for key in _PROGRESS_KEYS:
        progress[key] = figures.get(key)
    if progress["bytes_done"] is None and figures.get("bytes_total") is not None:
        # a record saved before the figure existed: tracking.done_bytes, from what it kept
        work = max(0.0, figures["bytes_total"] - float(figures.get("bytes_dropped") or 0))
        progress["bytes_done"] = round(float(figures.get("percent") or 0) / 100.0 * work)
    if not figures:  # never started (queued, or cancelled before it ran)
        progress.update(
            partitions_done=0, partitions_in_flight=0, partitions_waiting=0, partitions_dropped=0, percent=0.0
        )
    if "log_dir_moves" in figures:
        progress["log_dir_moves"] = figures["log_dir_moves"]
    if "cancel" in figures:
        progress["cancel"] = figures["cancel"]
    if "outcome" in figures:
        progress["outcome"] = figures["outcome"]
    return progress


def _state(view: ControllerView, record: PlanSummary) -> str:
    run = _current_run(view, record)
    return run.status.value if run is not None else record.status.value


def _summary(view: ControllerView, record: PlanSummary) -> JSON:
    return {
        "plan_id": record.id,
        "state": _state(view, record),
        "submitted_at": iso_time(record.submitted_at),
        "started_at": iso_time(record.started_at) if record.started_at is not None else None,
        "finished_at": iso_time(record.finished_at) if record.finished_at is not None else None,
        "name": record.options.get("name"),
        "partitions": record.partitions,
        "progress": _progress(view, record),
    }


def list_plans_view(view: ControllerView) -> list[JSON]:
    ordered = sorted(view.records.values(), key=lambda r: (r.submitted_at, r.id), reverse=True)
    return [_summary(view, r) for r in ordered]


def _record(view: ControllerView, plan_id: str | None) -> PlanSummary:
    if plan_id is not None:
        record = view.records.get(plan_id)
        if record is None:
            raise ServiceError("not_found", f"no plan {plan_id!r}")
        return record
    if view.run is not None:
        known = view.records.get(view.run.plan_id)
        if known is not None:
            return known
    active = [r for r in view.records.values() if not r.status.terminal]
    if not active:
        raise ServiceError("not_found", "no plan is running or queued")
    return min(active, key=lambda r: (r.submitted_at, r.id))


def _waiting(run: RunState) -> list[JSON]:
    """Moves not started, each with what holds it: a limit (and the broker), a blocked state, someone
    else's reassignment, or, for those the scheduler did not reach, the limit that stopped it; first, in a
    cancel, the steps whose revert waits (`unsafe_revert`)."""
    assert run.execution is not None
    held_by = "paused" if run.status.value == "paused" else run.execution.held_by
    out = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "reason": WaitReason.UNSAFE_REVERT.value,
            "detail": why,
        }
        for tp, why in itertools.islice(run.cancel.held.items(), WAITING_SHOWN)
    ]
    for tp, rec in itertools.islice(run.execution.waiting(), WAITING_SHOWN - len(out)):
        if rec.status is Status.PENDING and rec.reason is None:
            reason, detail = WaitReason.LIMITS.value, held_by or "queued: next in the ordering"
        else:
            reason = rec.reason.value if rec.reason else "external"
            detail = rec.detail
        out.append({"topic": tp.topic, "partition": tp.partition, "reason": reason, "detail": detail})
    return out


def _writer(view: ControllerView) -> JSON:
    """Who holds the cluster's writer right (docs/ha.md), when this daemon takes part in the writer group."""
    return {} if view.writer is None else {"writer": dict(view.writer)}


def idle_status_view(view: ControllerView) -> JSON:
    """The daemon's status while no plan runs or waits: the cluster first, as in a plan's status."""
    return {
        "cluster": cluster_view(view.cluster),
        "store": store_view(view.store, view.findings),
        **_writer(view),
        "plan_id": None,
        "state": "idle",
        "decommissioned_brokers": list(view.decommissioned),
        "last_cycle": view.last_status,
    }


def daemon_status_view(view: ControllerView) -> JSON:
    """`GET /v1/status`: the plan in progress (else the first queued one), or the idle status."""
    try:
        return plan_status_view(view, None)
    except ServiceError as exc:
        if exc.code != "not_found":
            raise
        return idle_status_view(view)


def plan_status_view(view: ControllerView, plan_id: str | None) -> JSON:
    """A plan's status; the cluster's reachability first, whatever the plan's state."""
    record = _record(view, plan_id)
    limits = view.limits
    run = _current_run(view, record)
    status = {
        "cluster": cluster_view(view.cluster),
        "store": store_view(view.store, view.findings),
        **_writer(view),
        **_summary(view, record),
        "started_at": iso_time(record.started_at),
        "finished_at": iso_time(record.finished_at),
        "error": record.error,
        "limits": limits.to_mapping(),
        "throttles": _rates(limits),
        "brokers": [],
        "stalled": [],
        "waiting": [],
        "offline_waits": {"partitions": 0, "brokers": [], "shown": []},
        "decommissioned_brokers": list(view.decommissioned),
        "last_cycle": view.last_status,
    }
    if run is None or run.execution is None or run.ended:
        return status
    incoming, outgoing = run.throttles.applied_rates()
    log_dir = run.throttles.applied_log_dir_rates()
    load = run.execution.load
    snapshot = run.reading.last_view
    broker_ids = sorted(set(snapshot.brokers) if snapshot else set(load.incoming) | set(load.outgoing))
    offline = set(view.cluster.offline_brokers)  # in an outage every broker, whatever the last read saw
    status["brokers"] = [
        {
            "broker": b,
            "moves_in": load.incoming.get(b, 0),
            "moves_out": load.outgoing.get(b, 0),
            "limit_in": limits.max_incoming_per_broker,
            "limit_out": limits.max_outgoing_per_broker,
            "leader_throttle": outgoing.get(b),
            "follower_throttle": incoming.get(b),
            "log_dir_throttle": log_dir.get(b),
            "online": b not in offline if snapshot and b in snapshot.brokers else None,
        }
        for b in broker_ids
    ]
    status["stalled"] = [m.to_json() for m in run.progress.tracking.stalled]
    status["waiting"] = _waiting(run)
    status["offline_waits"] = _offline_waits(run)
    status["leader_unthrottled"] = _leader_unthrottled(run)
    return status


def _offline_waits(run: RunState) -> JSON:
    """What cannot finish while brokers are stopped, so an operator knows what to re-target."""
    assert run.execution is not None
    execution = run.execution
    waits = execution.offline_waits()
    shown = sorted(waits, key=execution.rank_of.__getitem__)[:WAITING_SHOWN]
    return {
        "partitions": len(waits),
        "brokers": sorted({b for down in waits.values() for b in down}),
        "shown": [
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "brokers": list(waits[tp]),
                "in_flight": tp in execution.in_flight_set,
            }
            for tp in shown
        ],
    }


def _leader_unthrottled(run: RunState) -> list[JSON]:
    """Moves whose partition has no leader-side throttle entry now (throttle.py, lagging_replicas):
    a replica not being moved is out of sync, and the leader throttle would slow its catch-up too."""
    snapshot = run.reading.last_view
    if snapshot is None or run.execution is None:
        return []
    out = []
    for move in moves_in_flight(run.execution):
        lagging = lagging_replicas(snapshot, move)
        if lagging:
            out.append({"topic": move.tp.topic, "partition": move.tp.partition, "out_of_sync": lagging})
    return out


def _rates(limits: Limits) -> JSON:
    """The configured rates, by the names PATCH /v1/throttles takes."""
    return {
        config_keys.LEADER_REASSIGNMENT_THROTTLED_RATE: limits.leader_throttled_rate,
        config_keys.FOLLOWER_REASSIGNMENT_THROTTLED_RATE: limits.follower_throttled_rate,
        config_keys.LOG_DIR_REASSIGNMENT_THROTTLED_RATE: limits.log_dir_throttled_rate,
    }


def throttles_view(view: ControllerView) -> JSON:
    incoming, outgoing = view.throttles.applied_rates()
    applied: dict[str, dict[str, Any]] = {}
    for broker, rate in outgoing.items():
        applied.setdefault(str(broker), {})["leader"] = rate
    for broker, rate in incoming.items():
        applied.setdefault(str(broker), {})["follower"] = rate
    for broker, log_dir_rate in view.throttles.applied_log_dir_rates().items():
        applied.setdefault(str(broker), {})["log_dir"] = log_dir_rate
    return {**_rates(view.limits), "applied": dict(sorted(applied.items(), key=lambda kv: int(kv[0])))}
