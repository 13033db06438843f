"""Brokers' lasting roles and re-targets, as the controller serves them (`reassignd brokers`,
`reassignd retarget`, their API routes and MQTT commands).

Decommission marks a broker in the state store (it survives restarts and failovers, journaled with who
did it). From then on it never receives a replica: proposals exclude it (`exclude_brokers`), a submitted
plan that adds a replica on it is refused naming it (unless `allow_decommissioned`), a drain plan made
with `--drain` sends its replicas elsewhere, and `retarget` never picks it. Marking moves nothing by
itself; `drain: true` also queues a drain plan of the broker (planned now, in-process, by the same core
as `reassignd plan --goal drain`), in the same commit as the mark, so either both are kept or neither is.
Recommission takes the role away; the broker's replicas are not moved back (a balance plan does that).

Re-target: the partitions of the running plan that wait on a broker that is gone get new targets from
the placer and are swapped into the run (engine/run/retarget.py), journaled; the plan goes on.

Bad input (an id that is not an integer) is refused naming the field and the value (400), a broker the
cluster does not know with 404; nothing is written.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from reassignd.cluster.api import ClusterAdmin
from reassignd.cluster.errors import ClusterCallError
from reassignd.daemon.service import JSON, ServiceError
from reassignd.engine.run import RunState
from reassignd.engine.run.retarget import gone_waits
from reassignd.model import (
    INT32_MAX,
    ClusterSnapshot,
    InvalidInputError,
    Problem,
    ReassignmentPlan,
    TopicPartition,
    shown,
)
from reassignd.placement.retarget import replacement_targets
from reassignd.store.base import DECOMMISSIONED, BrokerRole

REASON: Final = re.compile(r"[^\x00-\x1f\x7f]{0,200}")
DECOMMISSION_FIELDS: Final = frozenset({"drain", "reason"})


def broker_id(raw: Any, where: str = "broker") -> int:
    """A broker id from a path or a command: an integer 0..2^31-1, else a 400 naming it."""
    value = raw
    if isinstance(raw, str) and raw.strip().isdigit():
        value = int(raw.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT32_MAX:
        message = f"must be a broker id (an integer from 0 to {INT32_MAX}), got {shown(raw)}"
        raise ServiceError("invalid_request", f"{where}: {message}", (Problem("request", where, message),))
    return value


def decommission_options(body: Mapping[str, Any]) -> tuple[bool, str]:
    """(drain, reason) from a decommission request's body; every problem named at once."""
    problems = [
        Problem("request", str(k)[:80], "unknown field") for k in sorted(set(body) - DECOMMISSION_FIELDS)
    ]
    drain = body.get("drain", False)
    if not isinstance(drain, bool):
        problems.append(Problem("request", "drain", f"must be true or false, got {shown(drain)}"))
    reason = body.get("reason", "")
    if not isinstance(reason, str) or not REASON.fullmatch(reason):
        message = f"must be a line of text of at most 200 characters, got {shown(reason)[:80]}"
        problems.append(Problem("request", "reason", message))
    if problems:
        raise ServiceError("invalid_request", "invalid decommission request", tuple(problems))
    return bool(drain), str(reason)


def decommissioned(roles: Mapping[int, BrokerRole]) -> frozenset[int]:
    return frozenset(b for b, r in roles.items() if r.role == DECOMMISSIONED)


def roles_json(roles: Mapping[int, BrokerRole], snapshot: ClusterSnapshot | None) -> JSON:
    """`GET /v1/brokers`: every broker the cluster or the store knows, with its role and what it holds."""
    held: dict[int, int] = {}
    if snapshot is not None:
        for p in snapshot.partitions.values():
            for b in p.replicas:
                held[b] = held.get(b, 0) + 1
    known = set(roles) | (set(snapshot.brokers) if snapshot is not None else set())
    brokers = []
    for b in sorted(known):
        broker = snapshot.brokers.get(b) if snapshot is not None else None
        role = roles.get(b)
        brokers.append(
            {
                "id": b,
                "rack": broker.rack if broker is not None else None,
                "state": "unknown" if snapshot is None else _state(broker),
                "role": role.role if role is not None else "member",
                "since": role.since if role is not None else None,
                "reason": role.reason if role is not None else None,
                "by": dict(role.by) if role is not None and role.by is not None else None,
                "replicas": held.get(b) if snapshot is not None else None,
            }
        )
    return {"brokers": brokers, "decommissioned": sorted(decommissioned(roles))}


@dataclass(frozen=True, slots=True)
class RetargetChoice:
    targets: dict[TopicPartition, tuple[int, ...]]
    """Each partition to swap, with its new target (its old one when only its step in flight waits)."""
    gone: tuple[int, ...]
    unplaced: dict[TopicPartition, str]


def retarget_choice(run: RunState, snapshot: ClusterSnapshot, banned: Collection[int]) -> RetargetChoice:
    """What `retarget` swaps into `run`: the partitions waiting on a broker that is not online (stopped,
    or no longer registered), re-placed among the online brokers that are not decommissioned, rack
    spread kept (placement/retarget.py). A partition that names log dirs is left for the operator."""
    alive = snapshot.online_broker_ids()
    waits = gone_waits(run, alive)
    gone = tuple(sorted({b for down in waits.values() for b in down}))
    unplaced: dict[TopicPartition, str] = {}
    candidates: dict[TopicPartition, tuple[int, ...]] = {}
    for tp in waits:
        if tp in run.plan.log_dirs:
            unplaced[tp] = "its plan names log dirs: submit a plan for it instead"
        else:
            candidates[tp] = run.plan.targets[tp]
    load = snapshot.replicas_per_broker()
    racks = {b: broker.rack for b, broker in snapshot.brokers.items()}
    found = replacement_targets(candidates, gone, racks, alive - frozenset(banned), load)
    unplaced.update(found.unplaced)
    step_only = {tp: t for tp, t in candidates.items() if not set(t) & set(gone)}
    return RetargetChoice({**step_only, **found.targets}, gone, unplaced)


def retarget_json(run: RunState, before: ReassignmentPlan, choice: RetargetChoice) -> JSON:
    return {
        "plan_id": run.plan_id,
        "gone": list(choice.gone),
        "retargeted": [
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "from": list(before.targets[tp]),
                "to": list(target),
                "withdrawn": tp in run.withdraw,
            }
            for tp, target in sorted(choice.targets.items())
        ],
        "unplaced": [
            {"topic": tp.topic, "partition": tp.partition, "reason": why}
            for tp, why in sorted(choice.unplaced.items())
        ],
    }


def _state(broker: Any) -> str:
    if broker is None:
        return "not registered"
    return "online" if broker.online else "offline"


async def cluster_view(cluster: ClusterAdmin) -> ClusterSnapshot:
    try:
        return await cluster.snapshot(with_sizes=True)
    except ClusterCallError as exc:
        raise ServiceError("unavailable", f"cannot read the cluster: {exc}") from None


def check_known(broker: int, snapshot: ClusterSnapshot) -> None:
    if broker not in snapshot.brokers:
        message = f"broker {broker} is not in the cluster's metadata (known: {sorted(snapshot.brokers)})"
        raise ServiceError("not_found", message, (Problem("request", "broker", message),))


async def drain_plan(
    snapshot: ClusterSnapshot, broker: int, excluded: Collection[int]
) -> ReassignmentPlan | None:
    """The plan that moves every replica off `broker` (nothing onto `excluded`), None when it holds none;
    planned in a thread (the planner is pure and CPU-bound)."""
    if not any(broker in p.replicas for p in snapshot.partitions.values()):
        return None
    return await goal_plan(snapshot, "drain", broker, excluded)


async def goal_plan(
    snapshot: ClusterSnapshot,
    goal: str,
    broker: int | None,
    excluded: Collection[int],
    threshold: float = 0.10,
    *,
    byte_threshold: float | None = None,
    disk_limits: Mapping[int, float] | None = None,
) -> ReassignmentPlan | None:
    """The planner's plan for `goal` (drain: empty `broker`; fill: give it its share; replica-balance or
    leader-balance: every broker into the band at `threshold`, `broker` None), nothing onto `excluded`;
    with `byte_threshold`, size-aware: every broker's bytes into the byte band too (the planner's byte
    goal); with `disk_limits` (bytes per broker), the planner's hard disk goal first: bytes shed from a
    broker above its limit, none onto a broker it would take past its own. None when nothing moves."""
    from reassignd.placement.assignment import ClusterInput
    from reassignd.placement.capacity import Capacities, Capacity
    from reassignd.placement.goals import PlanRequest
    from reassignd.placement.optimizer import optimise

    known = set(snapshot.brokers)
    brokers = () if broker is None else (broker,)
    request = PlanRequest(
        goal,
        threshold=threshold,
        leader_threshold=threshold if goal == "leader-balance" else 0.0,
        brokers=brokers,
        exclude_brokers=tuple(sorted(set(excluded) & known - set(brokers))),
        size_aware=byte_threshold is not None,
        byte_threshold=0.10 if byte_threshold is None else byte_threshold,
        capacities=None
        if disk_limits is None
        else Capacities(
            brokers={b: Capacity(disk=limit) for b, limit in disk_limits.items()}, thresholds={"disk": 1.0}
        ),
    )
    try:
        result = await asyncio.to_thread(optimise, ClusterInput.from_snapshot(snapshot), request)
    except InvalidInputError as exc:
        what = {"drain": "drained", "fill": "filled"}.get(goal)
        message = f"broker {broker} cannot be {what}: {exc}" if what else f"no {goal} plan: {exc}"
        raise ServiceError("conflict", message, exc.problems) from None
    if not result.targets:
        return None
    return ReassignmentPlan({TopicPartition(t, p): r for (t, p), r in result.targets.items()})
