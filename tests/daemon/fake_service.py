"""An in-memory ControllerService: a small behaving cluster and plan executor for API and CLI tests.

It keeps the protocol's contract (validation up front with every problem, one running plan and a queue,
pause/resume/cancel transitions, all-or-nothing limit and throttle changes, leader/standby, readiness) and
moves bytes in virtual time when a test calls `tick(seconds)`, so progress, ETA and stalls are real numbers
computed from sizes, throttle rates and produce rates, not constants. The end-to-end tests of the daemon run
the real controller; this fake only lets the front ends be tested without a cluster.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from reassignd.daemon import foreign, roles
from reassignd.daemon.service import JSON, ServiceError
from reassignd.engine.anomalies import Anomaly, AnomalyBook, AnomalyKind, AnomalyState
from reassignd.engine.limits import LIMIT_KEYS, Limits
from reassignd.model import (
    EMPTY_PLAN,
    Broker,
    ClusterSnapshot,
    InvalidInputError,
    PartitionState,
    PlanDraft,
    Problem,
    ReassignmentPlan,
    TopicPartition,
    assignment_document,
)
from reassignd.placement.api import create_replica_placement
from reassignd.store.base import DECOMMISSIONED, BrokerRole

LEADER_RATE = "leader.reassignment.throttled.rate"
FOLLOWER_RATE = "follower.reassignment.throttled.rate"
LOG_DIR_RATE = "log.dir.reassignment.throttled.rate"  # no log-dir moves here: configured, never applied
INCOMING = "reassignment.max.incoming.replica.movements.per.broker"
OUTGOING = "reassignment.max.outgoing.replica.movements.per.broker"
FAKE_LIMITS = {
    "reassignment.parallel.replica.count": 2,
    "reassignment.parallel.partition.count": 4,
    "reassignment.max.concurrent.replica.movements": 8,
    INCOMING: 2,
    OUTGOING: 2,
    LEADER_RATE: 50_000_000,
    FOLLOWER_RATE: 50_000_000,
}
LIMIT_NAMES = frozenset(key.name for key in LIMIT_KEYS)
TERMINAL = frozenset({"completed", "cancelled"})


@dataclass
class _Move:
    tp: TopicPartition
    current: tuple[int, ...]
    target: tuple[int, ...]
    size: int
    produce: float
    moved: int = 0
    state: str = "waiting"  # waiting -> moving -> done | reverted

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.current)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.current if b not in self.target)

    @property
    def total(self) -> int:
        return self.size * len(self.adding)

    @property
    def source(self) -> int:
        return self.current[0]


@dataclass
class _Plan:
    plan_id: str
    submitted_at: float
    moves: dict[TopicPartition, _Move]
    state: str = "queued"
    started_at: float | None = None
    finished_at: float | None = None
    name: str | None = None
    last_rate: float | None = None
    waiting: dict[TopicPartition, str] = field(default_factory=dict)


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat()


STORE_OK: JSON = {"available": True, "since": None, "error": None, "findings": []}


class FakeControllerService:
    """Implements reassignd.daemon.service.ControllerService over an in-memory cluster."""

    def __init__(
        self,
        brokers: Iterable[Broker],
        partitions: Iterable[PartitionState],
        *,
        clock: Callable[[], float] = lambda: 1_700_000_000.0,
        limits: Mapping[str, Any] | None = None,
        link_bytes_per_sec: int = 100_000_000,
    ) -> None:
        self.brokers = {b.id: b for b in brokers}
        self.partitions = {p.tp: p for p in partitions}
        self.clock = clock
        self.link = link_bytes_per_sec
        self._limits = Limits.from_mapping({**FAKE_LIMITS, **(limits or {})})
        self.plans: dict[str, _Plan] = {}
        self.calls: list[tuple[str, Any]] = []
        self.ready = True
        self.roles: dict[int, BrokerRole] = {}
        self.leader_address: str | None = None  # set to play a standby that forwards operators there
        self.cluster_error: str | None = None  # set to play a cluster that does not answer, since `clock()`
        self.anomaly_book = AnomalyBook((_proposed_fix(clock()),))

    # --- plans -----------------------------------------------------------------------------------------
    async def submit_plan(
        self,
        plan: ReassignmentPlan,
        *,
        dry_run: bool = False,
        allow_rf_change: bool = False,
        name: str | None = None,
        allow_decommissioned: bool = False,
    ) -> JSON:
        self.calls.append(("submit_plan", {"partitions": len(plan), "dry_run": dry_run}))
        self._require_ready()
        if not dry_run:
            self._require_leader()
        moves = self._validate(plan, allow_rf_change)
        busy = {tp: p.plan_id for p in self.plans.values() if p.state not in TERMINAL for tp in p.moves}
        overlap = sorted(tp for tp in moves if tp in busy)
        if overlap:
            raise ServiceError(
                "conflict",
                f"{len(overlap)} partition(s) belong to unfinished plan {busy[overlap[0]]}",
                details={"plan_id": busy[overlap[0]], "partitions": [str(tp) for tp in overlap[:20]]},
            )
        per_step = self._limits.parallel_replica_count
        steps = [math.ceil(len(m.adding) / per_step) or 1 for m in moves.values() if m.adding or m.removing]
        summary: JSON = {
            "plan_id": None,
            "state": "dry_run" if dry_run else "queued",
            "partitions": len(moves),
            "replicas_to_move": sum(len(m.adding) for m in moves.values()),
            "bytes_to_move": sum(m.total for m in moves.values()),
            "steps": {"total": sum(steps), "max_per_partition": max(steps, default=0)},
            "rollback": assignment_document({tp: self.partitions[tp].replicas for tp in moves}),
        }
        if dry_run:
            return summary
        plan_id = f"plan-{len(self.plans) + 1}"
        self.plans[plan_id] = _Plan(plan_id, self.clock(), moves, name=name)
        self._start_next()
        named = {"name": name} if name else {}
        return {**summary, "plan_id": plan_id, "state": self.plans[plan_id].state, **named}

    def _validate(self, plan: ReassignmentPlan, allow_rf_change: bool) -> dict[TopicPartition, _Move]:
        problems: list[Problem] = []
        moves: dict[TopicPartition, _Move] = {}
        topics = {tp.topic for tp in self.partitions}
        if isinstance(plan, PlanDraft):  # as the controller does (daemon/validation.py)
            problems += plan.problems
            for where, ids in sorted(plan.named_brokers.items()):
                unknown = sorted(set(ids) - set(self.brokers))
                if unknown:
                    problems.append(Problem(where, "replicas", f"unknown broker id(s) {unknown}"))
        if not plan.targets and not problems:
            problems.append(EMPTY_PLAN)
        for tp, target in sorted(plan.targets.items()):
            where = str(tp)
            state = self.partitions.get(tp)
            if state is None:
                fld, what = ("partition", "partition") if tp.topic in topics else ("topic", "topic")
                problems.append(
                    Problem(where, fld, f"unknown {what} {tp if what == 'partition' else tp.topic}")
                )
                continue
            unknown = sorted(set(target) - set(self.brokers))
            if unknown:
                problems.append(Problem(where, "replicas", f"unknown broker id(s) {unknown}"))
            if len(set(target)) != len(target):
                problems.append(Problem(where, "replicas", f"duplicate broker ids in {list(target)}"))
            if len(target) != len(state.replicas) and not allow_rf_change:
                problems.append(
                    Problem(
                        where,
                        "replicas",
                        f"changes the replication factor from {len(state.replicas)} to {len(target)}; "
                        "pass allow_rf_change to mean it",
                    )
                )
            if state.is_reassigning:
                problems.append(Problem(where, "partition", "is being reassigned by another tool"))
            moves[tp] = _Move(tp, state.replicas, target, state.size_bytes, state.produce_bytes_per_sec)
        if problems:
            raise ServiceError(
                "invalid_plan", f"plan rejected with {len(problems)} problem(s)", tuple(problems)
            )
        return moves

    def list_plans(self) -> list[JSON]:
        self.calls.append(("list_plans", None))
        ordered = sorted(self.plans.values(), key=lambda p: (p.submitted_at, p.plan_id), reverse=True)
        return [
            {
                "plan_id": p.plan_id,
                "state": p.state,
                "submitted_at": _iso(p.submitted_at),
                "started_at": None if p.started_at is None else _iso(p.started_at),
                "finished_at": None if p.finished_at is None else _iso(p.finished_at),
                "name": p.name,
                "partitions": len(p.moves),
                "progress": self._progress(p),
            }
            for p in ordered
        ]

    def plan_status(self, plan_id: str | None = None) -> JSON:
        self.calls.append(("plan_status", plan_id))
        return self._status(self._plan(plan_id))

    def daemon_status(self) -> JSON:
        self.calls.append(("daemon_status", None))
        try:
            return self._status(self._plan(None))
        except ServiceError:
            return {
                "cluster": self._cluster(None),
                "store": STORE_OK,
                "plan_id": None,
                "state": "idle",
                "last_cycle": "idle",
            }

    def _cluster(self, since: float | None) -> JSON:
        return {
            "reachable": self.cluster_error is None,
            "since": _iso(since if self.cluster_error is None else self.clock()),
            "unreachable_brokers": sorted(b for b, broker in self.brokers.items() if not broker.online),
            "error": self.cluster_error,
        }

    async def pause(self, plan_id: str | None = None) -> JSON:
        self.calls.append(("pause", plan_id))
        return self._transition(plan_id, {"running"}, "paused", "pause")

    async def resume(self, plan_id: str | None = None) -> JSON:
        self.calls.append(("resume", plan_id))
        return self._transition(plan_id, {"paused"}, "running", "resume")

    async def cancel(self, plan_id: str | None = None) -> JSON:
        self.calls.append(("cancel", plan_id))
        status = self._transition(plan_id, {"queued", "running", "paused"}, "cancelled", "cancel")
        self._start_next()
        return status

    def _transition(self, plan_id: str | None, allowed: set[str], to: str, verb: str) -> JSON:
        self._require_leader()
        try:
            plan = self._plan(plan_id)
        except ServiceError:
            if plan_id is None:
                raise ServiceError("conflict", f"nothing to {verb}: no plan is running") from None
            raise
        if plan.state not in allowed:
            raise ServiceError("conflict", f"cannot {verb} plan {plan.plan_id}: it is {plan.state}")
        plan.state = to
        if to == "cancelled":
            for move in plan.moves.values():
                if move.state in ("moving", "waiting"):
                    move.state, move.moved = "reverted", 0
            plan.finished_at = self.clock()
        return self._status(plan)

    def _plan(self, plan_id: str | None) -> _Plan:
        if plan_id is None:
            for plan in self.plans.values():
                if plan.state in ("running", "paused"):
                    return plan
            raise ServiceError("not_found", "no plan is running")
        if plan_id not in self.plans:
            raise ServiceError("not_found", f"no plan with id {plan_id!r}", details={"plan_id": plan_id})
        return self.plans[plan_id]

    # --- brokers' roles and re-targets: the daemon's own checks (daemon/roles.py), kept in memory -------
    async def broker_roles(self) -> JSON:
        self.calls.append(("broker_roles", None))
        snapshot = ClusterSnapshot.build(self.brokers.values(), self.partitions.values())
        return roles.roles_json(self.roles, snapshot)

    async def decommission(self, broker: Any, request: Mapping[str, Any]) -> JSON:
        self.calls.append(("decommission", broker))
        broker_id = roles.broker_id(broker)
        drain, reason = roles.decommission_options(request)
        self._require_leader()
        roles.check_known(broker_id, ClusterSnapshot.build(self.brokers.values(), self.partitions.values()))
        changed = broker_id not in self.roles
        self.roles[broker_id] = BrokerRole(broker_id, DECOMMISSIONED, self.clock(), reason)
        answer: JSON = {"broker": broker_id, "role": DECOMMISSIONED, "changed": changed}
        if drain:
            answer["drain"] = {"plan_id": None, "partitions": 0, "detail": "the fake plans no drain"}
        return answer

    async def recommission(self, broker: Any) -> JSON:
        self.calls.append(("recommission", broker))
        broker_id = roles.broker_id(broker)
        self._require_leader()
        changed = self.roles.pop(broker_id, None) is not None
        return {"broker": broker_id, "role": "member", "changed": changed}

    # --- self-healing --------------------------------------------------------------------------------
    def anomalies(self) -> JSON:
        self.calls.append(("anomalies", None))
        return {"mode": "propose", "anomalies": [a.to_json() for a in self.anomaly_book.anomalies]}

    async def approve_anomaly(self, anomaly_id: str) -> JSON:
        self.calls.append(("approve_anomaly", anomaly_id))
        self._require_leader()
        anomaly = self.anomaly_book.get(anomaly_id)
        if anomaly is None:
            raise ServiceError("not_found", f"no anomaly {anomaly_id!r}")
        if anomaly.state is not AnomalyState.PROPOSED:
            raise ServiceError("conflict", f"anomaly {anomaly_id} is {anomaly.state.value}")
        now = self.clock()
        approved = anomaly.to(AnomalyState.APPROVED, now)
        executing = approved.to(AnomalyState.EXECUTING, now, plan_id="plan-heal")
        self.anomaly_book = self.anomaly_book.with_anomaly(executing)
        return executing.to_json()

    async def retarget(self, plan_id: str | None = None) -> JSON:
        self.calls.append(("retarget", plan_id))
        self._require_leader()
        plan = self._plan(plan_id)
        return {"plan_id": plan.plan_id, "gone": [], "retargeted": [], "unplaced": []}

    # --- live tuning -----------------------------------------------------------------------------------
    def limits(self) -> JSON:
        self.calls.append(("limits", None))
        return self._limits_view()

    def _limits_view(self) -> JSON:
        return {
            **self._limits.to_mapping(),
            "auto.throttle.enable": False,
            "auto.throttle.step.bytes.per.second": 10 * 1024 * 1024,
            "auto.throttle.max.bytes.per.second": 200 * 1024 * 1024,
        }

    async def set_limits(self, changes: Mapping[str, Any]) -> JSON:
        self.calls.append(("set_limits", dict(changes)))
        self._require_leader()
        self._limits = self._changed(changes, LIMIT_NAMES, "limits")
        return self._limits_view()

    async def reset_limits(self, keys: list[str] | None = None) -> JSON:
        self.calls.append(("reset_limits", keys))
        self._require_leader()
        self._limits = Limits.from_mapping(FAKE_LIMITS)
        return self._limits_view()

    def throttles(self) -> JSON:
        self.calls.append(("throttles", None))
        return self._throttles()

    def _rate(self, key: str) -> int | None:
        value = self._limits.to_mapping()[key]
        return value if isinstance(value, int) else None

    def _throttles(self) -> JSON:
        applied: dict[str, dict[str, int]] = {}
        leader, follower = self._rate(LEADER_RATE), self._rate(FOLLOWER_RATE)
        for plan in self.plans.values():
            for move in plan.moves.values():
                if move.state == "moving":
                    if leader is not None:
                        applied.setdefault(str(move.source), {})["leader"] = leader
                    for broker in move.adding if follower is not None else ():
                        applied.setdefault(str(broker), {})["follower"] = follower
        ordered = dict(sorted(applied.items(), key=lambda kv: int(kv[0])))
        return {LEADER_RATE: leader, FOLLOWER_RATE: follower, LOG_DIR_RATE: self._rate(LOG_DIR_RATE)} | {
            "applied": ordered
        }

    async def set_throttles(self, changes: Mapping[str, Any]) -> JSON:
        self.calls.append(("set_throttles", dict(changes)))
        self._require_leader()
        self._limits = self._changed(changes, {LEADER_RATE, FOLLOWER_RATE, LOG_DIR_RATE}, "throttles")
        return self._throttles()

    def _changed(self, changes: Mapping[str, Any], known: frozenset[str] | set[str], where: str) -> Limits:
        """All-or-nothing: the engine's own validation, plus unknown keys (which it leaves to others)."""
        problems = [
            Problem(where, key, f"unknown key; known: {sorted(known)}") for key in changes if key not in known
        ]
        if not changes:
            problems.append(Problem(where, "(body)", "no changes given"))
        try:
            known_changes = {key: value for key, value in changes.items() if key in known}
            updated = Limits.from_mapping({**self._limits.to_mapping(), **known_changes})
        except InvalidInputError as exc:
            problems += exc.problems
            updated = self._limits
        if problems:
            raise ServiceError(
                "invalid_request", f"{where} unchanged: {len(problems)} problem(s)", tuple(problems)
            )
        return updated

    # --- journal ---------------------------------------------------------------------------------------
    async def journal(self, query: Mapping[str, Any]) -> JSON:
        """What the fake did, as journal entries (the real paging is tested on a real store)."""
        self.calls.append(("journal", dict(query)))
        entries = [
            {
                "seq": seq,
                "at": 1.7e9 + seq,
                "kind": "plan.submitted" if call == "submit_plan" else "limits.changed",
                "plan_id": None,
                "partition": None,
                "step": None,
                "by": {"via": "self"},
                "data": {},
            }
            for seq, (call, _) in enumerate(self.calls, start=1)
            if call in ("submit_plan", "set_limits") and seq > int(query.get("after") or 0)
        ]
        return {"entries": entries[: int(query.get("limit") or 100)], "next_after": None}

    # --- cluster view ----------------------------------------------------------------------------------
    async def cluster_reassignments(self) -> list[JSON]:
        self.calls.append(("cluster_reassignments", None))
        out: list[JSON] = []
        for p in sorted(self.partitions.values(), key=lambda p: p.tp):
            if p.is_reassigning:
                entry = {"replicas": list(p.replicas), "adding": list(p.adding), "removing": list(p.removing)}
                out.append({"topic": p.tp.topic, "partition": p.tp.partition, **entry, "owner": "foreign"})
                out[-1]["plan_id"] = None
        for plan in self.plans.values():
            for m in plan.moves.values():
                if m.state == "moving":
                    replicas = [*m.target, *m.removing]
                    out.append(
                        {"topic": m.tp.topic, "partition": m.tp.partition, "replicas": replicas}
                        | {"adding": list(m.adding), "removing": list(m.removing)}
                        | {"owner": "reassignd", "plan_id": plan.plan_id}
                    )
        return out

    async def recover(self, request: Mapping[str, Any]) -> JSON:
        """As the controller with a store that found nothing wrong: nothing to recover."""
        self.calls.append(("recover", dict(request)))
        self._require_ready()
        self._require_leader()
        if request.get("mode") not in ("adopt", "cleanup"):
            raise ServiceError(
                "invalid_request", f"mode: must be 'adopt' or 'cleanup', got {request.get('mode')!r}"
            )
        raise ServiceError("conflict", "nothing to recover: the store found nothing wrong at start")

    async def cancel_foreign(self, request: Mapping[str, Any]) -> JSON:
        """As the controller: the shared selection (daemon/foreign.py); a cancelled foreign reassignment
        leaves its partition on its replicas without the adding ones (KIP-455)."""
        self.calls.append(("cancel_foreign", dict(request)))
        self._require_ready()
        self._require_leader()
        selection = foreign.parse_request(request)
        foreign_ongoing = {tp: p for tp, p in self.partitions.items() if p.is_reassigning}
        ours = {
            tp: plan.plan_id
            for plan in self.plans.values()
            if plan.state in ("running", "paused")
            for tp, m in plan.moves.items()
            if m.state == "moving"
        }
        chosen, skipped = foreign.select(selection, {*foreign_ongoing, *ours}, ours)
        cancelled = []
        for tp in chosen:
            p = foreign_ongoing[tp]
            cancelled.append(
                {"topic": tp.topic, "partition": tp.partition, "replicas": list(p.replicas)}
                | {"adding": list(p.adding), "removing": list(p.removing)}
            )
            back = p.original_replicas
            self.partitions[tp] = replace(p, replicas=back, isr=back, adding=(), removing=())
        skipped_view = [{"topic": tp.topic, "partition": tp.partition, "plan_id": ours[tp]} for tp in skipped]
        return {"cancelled": cancelled, "failed": [], "skipped": skipped_view}

    async def place(self, request: Mapping[str, Any]) -> JSON:
        """KIP-879 CreateReplicaPlacement over the current view, by the placement package itself."""
        self.calls.append(("place", dict(request)))
        self._require_ready()
        snapshot = ClusterSnapshot.build(self.brokers.values(), self.partitions.values())
        try:
            return create_replica_placement(snapshot, request)
        except InvalidInputError as exc:
            raise ServiceError("invalid_request", f"invalid {exc.what}", exc.problems) from None

    # --- health ----------------------------------------------------------------------------------------
    def health(self) -> JSON:
        self.calls.append(("health", None))
        return {"status": "ok", "plans": len(self.plans)}

    def readiness(self) -> JSON:
        self.calls.append(("readiness", None))
        role = "leader" if self.leader_address is None else "standby"
        reason = "cluster contact established" if self.ready else "no cluster contact yet"
        return {"ready": self.ready, "reason": reason, "role": role, "leader": self.leader_address}

    def _require_ready(self) -> None:
        if not self.ready:
            raise ServiceError("unavailable", "no cluster contact yet")

    def _require_leader(self) -> None:
        if self.leader_address is not None:
            raise ServiceError(
                "not_leader", "this daemon is a standby", details={"leader": self.leader_address}
            )

    # --- virtual time ----------------------------------------------------------------------------------
    def set_broker_online(self, broker: int, online: bool) -> None:
        b = self.brokers[broker]
        self.brokers[broker] = Broker(b.id, b.rack, online)

    def tick(self, seconds: float) -> None:
        """Move bytes for `seconds` of virtual time: start what the limits allow, finish what caught up."""
        self._start_next()
        for plan in self.plans.values():
            if plan.state not in ("running", "paused"):
                continue
            if plan.state == "running":
                self._start_moves(plan)
            before = sum(m.moved for m in plan.moves.values())
            for move in plan.moves.values():
                if move.state == "moving":
                    net = min(self._rate(FOLLOWER_RATE) or self.link, self._rate(LEADER_RATE) or self.link)
                    net = min(net, self.link) - move.produce
                    move.moved = min(move.total, move.moved + int(max(net, 0.0) * seconds))
                    if move.moved >= move.total:
                        self._finish(move)
            plan.last_rate = (
                (sum(m.moved for m in plan.moves.values()) - before) / seconds if seconds else None
            )
            if all(m.state == "done" for m in plan.moves.values()):
                plan.state, plan.finished_at = "completed", self.clock()
        self._start_next()

    def _finish(self, move: _Move) -> None:
        move.state = "done"
        old = self.partitions[move.tp]
        self.partitions[move.tp] = PartitionState(
            move.tp, move.target, move.target, move.target[0], size_bytes=old.size_bytes,
            produce_bytes_per_sec=old.produce_bytes_per_sec,
        )  # fmt: skip

    def _start_next(self) -> None:
        if any(p.state in ("running", "paused") for p in self.plans.values()):
            return
        queued = sorted((p for p in self.plans.values() if p.state == "queued"), key=lambda p: p.submitted_at)
        if queued:
            queued[0].state, queued[0].started_at = "running", self.clock()

    def _start_moves(self, plan: _Plan) -> None:
        limits = self._limits
        in_flight = [m for m in plan.moves.values() if m.state == "moving"]
        load = self._broker_load(plan)
        plan.waiting.clear()
        for move in plan.moves.values():
            if move.state != "waiting":
                continue
            if not move.adding:
                self._finish(move)
                continue
            offline = [b for b in move.target if not self.brokers[b].online]
            full_in = [b for b in move.adding if load.get(b, (0, 0))[0] >= limits.max_incoming_per_broker]
            full_out = load.get(move.source, (0, 0))[1] >= limits.max_outgoing_per_broker
            if offline:
                plan.waiting[move.tp] = f"broker {offline[0]} is offline"
            elif len(in_flight) >= limits.parallel_partition_count:
                plan.waiting[move.tp] = "reassignment.parallel.partition.count reached"
            elif (
                sum(len(m.adding) for m in in_flight) + len(move.adding)
                > limits.max_concurrent_replica_movements
            ):
                plan.waiting[move.tp] = "reassignment.max.concurrent.replica.movements reached"
            elif full_in:
                plan.waiting[move.tp] = f"{INCOMING} (broker {full_in[0]})"
            elif full_out:
                plan.waiting[move.tp] = f"{OUTGOING} (broker {move.source})"
            else:
                move.state = "moving"
                in_flight.append(move)
                load = self._broker_load(plan)

    @staticmethod
    def _broker_load(plan: _Plan) -> dict[int, tuple[int, int]]:
        load: dict[int, list[int]] = {}
        for m in plan.moves.values():
            if m.state == "moving":
                for b in m.adding:
                    load.setdefault(b, [0, 0])[0] += 1
                load.setdefault(m.source, [0, 0])[1] += 1
        return {b: (i, o) for b, (i, o) in load.items()}

    # --- status ----------------------------------------------------------------------------------------
    def _progress(self, plan: _Plan) -> JSON:
        moves = plan.moves.values()
        total = sum(m.total for m in moves if m.state != "reverted")
        moved = sum(m.moved for m in moves if m.state != "reverted")
        remaining = total - moved
        rate = plan.last_rate if plan.state == "running" else None
        return {
            "partitions_total": len(plan.moves),
            "partitions_done": sum(m.state == "done" for m in moves),
            "partitions_in_flight": sum(m.state == "moving" for m in moves),
            "partitions_waiting": sum(m.state == "waiting" for m in moves),
            "bytes_total": total,
            "bytes_done": moved,
            "bytes_moved": moved,
            "bytes_remaining": remaining,
            "rate_bytes_per_sec": rate,
            "eta_seconds": 0.0 if remaining == 0 else (remaining / rate if rate else None),
            "partitions_dropped": 0,
            "percent": round(100.0 * moved / total, 2) if total else 100.0,
        }

    def _status(self, plan: _Plan) -> JSON:
        load = self._broker_load(plan)
        applied = self._throttles()["applied"]
        brokers = [
            {
                "broker": b,
                "moves_in": load.get(b, (0, 0))[0],
                "moves_out": load.get(b, (0, 0))[1],
                "limit_in": self._limits.max_incoming_per_broker,
                "limit_out": self._limits.max_outgoing_per_broker,
                "leader_throttle": applied.get(str(b), {}).get("leader"),
                "follower_throttle": applied.get(str(b), {}).get("follower"),
                "log_dir_throttle": applied.get(str(b), {}).get("log_dir"),
                "online": self.brokers[b].online,
            }
            for b in sorted(self.brokers)
        ]
        follower = self._rate(FOLLOWER_RATE) or self.link
        stalled = [
            {"topic": m.tp.topic, "partition": m.tp.partition, "broker": b}
            | {"catchup_bytes_per_sec": float(follower), "produce_bytes_per_sec": m.produce}
            for m in plan.moves.values()
            if m.state == "moving" and follower <= m.produce
            for b in m.adding
        ]
        return {
            "cluster": self._cluster(plan.submitted_at),
            "store": STORE_OK,
            "plan_id": plan.plan_id,
            "state": plan.state,
            "submitted_at": _iso(plan.submitted_at),
            "started_at": _iso(plan.started_at),
            "finished_at": _iso(plan.finished_at),
            "partitions": len(plan.moves),
            "progress": self._progress(plan),
            "brokers": brokers,
            "limits": self._limits.to_mapping(),
            "throttles": {key: self._rate(key) for key in (LEADER_RATE, FOLLOWER_RATE, LOG_DIR_RATE)},
            "stalled": stalled,
            "waiting": [
                {"topic": tp.topic, "partition": tp.partition, "reason": reason}
                for tp, reason in sorted(plan.waiting.items())
                if plan.moves[tp].state == "waiting"
            ],
        }


def small_cluster(**kwargs: Any) -> FakeControllerService:
    """Six brokers on three racks in two data centres; `orders` (6 partitions, RF 3, 1 GB each) and `logs`
    (2 partitions, one being reassigned by another tool)."""
    brokers = [Broker(b, f"/dc{1 + (b - 1) // 3}/rack{(b - 1) % 3 + 1}") for b in range(1, 7)]
    partitions = [
        PartitionState(
            TopicPartition("orders", p),
            replicas := tuple(1 + (p + i) % 3 for i in range(3)),
            replicas,
            replicas[0],
            size_bytes=1_000_000_000,
            produce_bytes_per_sec=1_000_000.0,
        )
        for p in range(6)
    ]
    partitions += [
        PartitionState(TopicPartition("logs", 0), (1, 2), (1, 2), 1, size_bytes=10_000_000),
        PartitionState(
            TopicPartition("logs", 1), (4, 2, 3), (2, 3), 2, adding=(4,), removing=(3,), size_bytes=10_000_000
        ),
    ]
    return FakeControllerService(brokers, partitions, **kwargs)


def drain_plan(broker: int = 1, to: int = 4, topic: str = "orders", count: int = 6) -> dict[str, Any]:
    """Kafka reassignment JSON moving `topic`'s replicas off `broker` onto `to`."""
    fake = small_cluster()
    entries = []
    for p in range(count):
        current = fake.partitions[TopicPartition(topic, p)].replicas
        entries.append(
            {"topic": topic, "partition": p, "replicas": [to if b == broker else b for b in current]}
        )
    return {"version": 1, "partitions": entries}


def _proposed_fix(now: float) -> Anomaly:
    """A broker 4 offline long enough: its drain proposed, as self-healing lists it."""
    plan = {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [1, 2]}]}
    rehearsal = {
        "finished": True,
        "partitions": 1,
        "bytes_to_move": 1_000_000,
        "predicted_duration_seconds": 95.0,
        "rack_spread_worse": 0,
    }
    return Anomaly(
        f"broker-failure-4-{int(now)}",
        AnomalyKind.BROKER_FAILURE,
        (4,),
        now - 700,
        now,
        AnomalyState.PROPOSED,
        proposal={"plan": plan, "rehearsal": rehearsal, "unrecoverable": []},
    )
