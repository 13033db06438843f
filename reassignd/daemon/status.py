"""Status views of the controller, in the JSON shapes of reassignd/daemon/openapi.json.

Synchronous and read-only: built from what the controller already holds (the plan records refreshed each
cycle, the running plan's engine state, its progress view), never from a fresh cluster call.
"""

from __future__ import annotations

import datetime
import itertools
from typing import TYPE_CHECKING, Any

from reassignd.daemon.service import JSON, ServiceError
from reassignd.engine import Status
from reassignd.store.base import PlanRecord, PlanStatus

if TYPE_CHECKING:
    from reassignd.daemon.controller import Controller, PlanRun

LEADER_RATE_KEY = "leader.reassignment.throttled.rate"
FOLLOWER_RATE_KEY = "follower.reassignment.throttled.rate"
RATE_KEYS = (LEADER_RATE_KEY, FOLLOWER_RATE_KEY)
WAITING_SHOWN = 200


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).isoformat().replace("+00:00", "Z")


def _current_run(controller: Controller, record: PlanRecord) -> PlanRun | None:
    run = controller.run
    return run if run is not None and run.plan_id == record.id and run.state is not None else None


def _progress(controller: Controller, record: PlanRecord) -> JSON:
    partitions = len(record.plan.get("partitions", []))
    run = _current_run(controller, record)
    if (run is None or run.state is None) and record.id in controller.final_progress:
        return {"partitions_total": partitions, **controller.final_progress[record.id]}
    if run is None or run.state is None:
        done = partitions if record.status is PlanStatus.COMPLETED else 0
        return {
            "partitions_total": partitions,
            "partitions_done": done,
            "partitions_in_flight": 0,
            "partitions_waiting": 0,
            "bytes_total": None,
            "bytes_moved": None,
            "bytes_remaining": 0 if record.status is PlanStatus.COMPLETED else None,
            "rate_bytes_per_sec": None,
            "eta_seconds": 0.0 if record.status is PlanStatus.COMPLETED else None,
        }
    counts = run.state.counts
    view = run.view
    return {
        "partitions_total": partitions,
        "partitions_done": counts[Status.DONE],
        "partitions_in_flight": counts[Status.IN_FLIGHT],
        "partitions_waiting": counts[Status.BLOCKED] + counts[Status.EXTERNAL],
        "bytes_total": view.total_bytes,
        "bytes_moved": view.moved_bytes,
        "bytes_remaining": view.remaining_bytes,
        "rate_bytes_per_sec": view.bytes_per_sec,
        "eta_seconds": view.eta_seconds,
    }


def _summary(controller: Controller, record: PlanRecord) -> JSON:
    return {
        "plan_id": record.id,
        "state": record.status.value,
        "submitted_at": _iso(record.submitted_at),
        "partitions": len(record.plan.get("partitions", [])),
        "progress": _progress(controller, record),
    }


def list_plans_view(controller: Controller) -> list[JSON]:
    ordered = sorted(controller.records.values(), key=lambda r: (r.submitted_at, r.id), reverse=True)
    return [_summary(controller, r) for r in ordered]


def _record(controller: Controller, plan_id: str | None) -> PlanRecord:
    if plan_id is not None:
        record = controller.records.get(plan_id)
        if record is None:
            raise ServiceError("not_found", f"no plan {plan_id!r}")
        return record
    if controller.run is not None:
        return controller.records.get(controller.run.plan_id, controller.run.record)
    active = [r for r in controller.records.values() if not r.status.terminal]
    if not active:
        raise ServiceError("not_found", "no plan is running or queued")
    return min(active, key=lambda r: (r.submitted_at, r.id))


def plan_status_view(controller: Controller, plan_id: str | None) -> JSON:
    record = _record(controller, plan_id)
    limits = controller.limits_in_force
    run = _current_run(controller, record)
    status = {
        **_summary(controller, record),
        "started_at": _iso(record.started_at),
        "finished_at": _iso(record.finished_at),
        "error": record.error,
        "limits": limits.to_mapping(),
        "throttles": {
            LEADER_RATE_KEY: limits.leader_throttled_rate,
            FOLLOWER_RATE_KEY: limits.follower_throttled_rate,
        },
        "brokers": [],
        "stalled": [],
        "waiting": [],
        "last_cycle": controller.last_status,
    }
    if run is None or run.state is None:
        return status
    incoming, outgoing = controller.keeper.applied_rates()
    load = run.state.load
    snapshot = run.last_snapshot
    broker_ids = sorted(set(snapshot.brokers) if snapshot else set(load.incoming) | set(load.outgoing))
    status["brokers"] = [
        {
            "broker": b,
            "moves_in": load.incoming.get(b, 0),
            "moves_out": load.outgoing.get(b, 0),
            "limit_in": limits.max_incoming_per_broker,
            "limit_out": limits.max_outgoing_per_broker,
            "leader_throttle": outgoing.get(b),
            "follower_throttle": incoming.get(b),
            "online": snapshot.brokers[b].online if snapshot and b in snapshot.brokers else None,
        }
        for b in broker_ids
    ]
    status["stalled"] = [m.to_json() for m in run.view.stalled]
    # From the state, not the last decision: decisions are incremental and list only what they examined.
    status["waiting"] = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "reason": rec.reason.value if rec.reason else "external",
            "detail": rec.detail,
        }
        for tp, rec in itertools.islice(run.state.waiting(), WAITING_SHOWN)
    ]
    return status


def throttles_view(controller: Controller) -> JSON:
    limits = controller.limits_in_force
    incoming, outgoing = controller.keeper.applied_rates()
    applied: dict[str, dict[str, Any]] = {}
    for broker, rate in outgoing.items():
        applied.setdefault(str(broker), {})["leader"] = rate
    for broker, rate in incoming.items():
        applied.setdefault(str(broker), {})["follower"] = rate
    return {
        LEADER_RATE_KEY: limits.leader_throttled_rate,
        FOLLOWER_RATE_KEY: limits.follower_throttled_rate,
        "applied": dict(sorted(applied.items(), key=lambda kv: int(kv[0]))),
    }
