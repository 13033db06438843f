"""A plan submitted: checked whole against the live cluster and the plans already stored, and previewed
(the steps it takes, the bytes it moves, the assignment to roll back to), before the controller queues it."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import Any

from reassignd import config_keys
from reassignd.cluster.api import ClusterAdmin
from reassignd.cluster.errors import ClusterCallError
from reassignd.daemon.service import JSON, ServiceError
from reassignd.daemon.validation import (
    decommissioned_problems,
    plan_rejection,
    unfinished_partitions,
    validate_plan,
)
from reassignd.daemon.view import ControllerView, iso_time
from reassignd.engine import Limits
from reassignd.engine.dryrun import step_preview
from reassignd.engine.progress import plan_bytes
from reassignd.model import (
    ANY_LOG_DIR,
    ClusterSnapshot,
    InvalidInputError,
    ReassignmentPlan,
    assignment_document,
)
from reassignd.store.aio import AsyncStore
from reassignd.store.base import WriteBatch


async def previewed(
    cluster: ClusterAdmin,
    store: AsyncStore,
    view: ControllerView,
    plan: ReassignmentPlan,
    limits: Limits,
    *,
    allow_rf_change: bool,
    dry_run: bool,
    clock: Callable[[], float],
    decommissioned: Collection[int] = (),
) -> JSON:
    """The submit answer of a plan that passed every check (ServiceError listing every problem else);
    `sizes_read_at`: when the sizes `bytes_to_move` counts were read (topics grow: each figure says its
    moment)."""
    try:
        # each partition's size from its leader, what bytes_to_move and the preview count (every replica
        # of a 100,000-partition plan was 300,000 sizes: half of a submit on 1,000 brokers)
        snapshot = await cluster.snapshot(
            list(plan.targets),
            with_sizes=dict.fromkeys(plan.targets, ()),
            topic_config_keys=(config_keys.MIN_INSYNC_REPLICAS,),
        )
        read_at = clock()
        snapshot = await _named_dirs(cluster, snapshot, plan)
    except ClusterCallError as exc:
        raise ServiceError("unavailable", f"cannot read the cluster to validate the plan: {exc}") from None
    ours = view.ours()
    unfinished = [r for r in view.records.values() if not r.status.terminal]
    bodies = [b for b in [await store.get_plan(r.id) for r in unfinished] if b is not None]
    busy = {**unfinished_partitions(bodies), **ours}
    # the snapshot lists every ongoing reassignment (Kafka lists a partition while it adds or removes a
    # replica: ReplicationControlManager.isReassignmentInProgress), read with its replicas in one moment
    ongoing = {tp for tp, p in snapshot.partitions.items() if p.is_reassigning}
    problems = validate_plan(
        plan, snapshot, ongoing=ongoing, ours=set(ours), busy=busy, allow_rf_change=allow_rf_change
    )
    problems += decommissioned_problems(plan, snapshot, decommissioned)
    if problems:
        raise plan_rejection(problems)
    moving = {tp: t for tp, t in plan.targets.items() if snapshot.partitions[tp].target_replicas != t}
    # pure and CPU-heavy for large plans: off the event loop, so the API and health checks stay live
    rehearsal = await asyncio.to_thread(step_preview, snapshot, plan, limits)
    return {
        "plan_id": None,
        "state": "dry_run" if dry_run else "queued",
        "partitions": len(plan),
        "replicas_to_move": sum(
            len(set(t) - set(snapshot.partitions[tp].replicas)) for tp, t in moving.items()
        ),
        "bytes_to_move": plan_bytes(snapshot, plan).to_move,
        "sizes_read_at": iso_time(read_at),
        "steps": rehearsal,
        # the assignment read just now, for rollback (Kafka's tool prints it on --execute): exact, since a
        # partition that is reassigning or taken by another plan was refused above
        "rollback": assignment_document({tp: snapshot.partitions[tp].replicas for tp in plan.targets}),
    }


async def queued(
    store: AsyncStore,
    plan: ReassignmentPlan,
    now: float,
    *,
    allow_rf_change: bool,
    name: str | None = None,
    batch: WriteBatch | None = None,
    options: Mapping[str, Any] | None = None,
) -> str:
    """The plan stored as queued, under a new id (the store journals `plan.submitted` with it); `name`:
    what the operator called it (submit --name); `batch`: what else to commit with it (one transaction)."""
    plan_id = f"plan-{time.strftime('%Y%m%d-%H%M%S', time.gmtime(now))}-{uuid.uuid4().hex[:6]}"
    stored = {"allow_rf_change": allow_rf_change, **({"name": name} if name else {}), **(options or {})}
    await store.commit((batch or WriteBatch()).submit_plan(plan_id, plan.to_dict(), stored))
    return plan_id


async def _named_dirs(
    cluster: ClusterAdmin, snapshot: ClusterSnapshot, plan: ReassignmentPlan
) -> ClusterSnapshot:
    """The snapshot with the log dirs of every running broker the plan names a dir on (the size read
    listed only the brokers hosting the plan's partitions now), so a dir a broker lacks is refused."""
    named = {
        b
        for tp, dirs in plan.log_dirs.items()
        for b, d in zip(plan.targets[tp], dirs, strict=True)
        if d != ANY_LOG_DIR
    }
    missing = sorted(b for b in named - set(snapshot.broker_dirs) if b in snapshot.online_broker_ids())
    if not missing:
        return snapshot
    found = await cluster.describe_log_dirs(missing, [])
    return replace(snapshot, broker_dirs={**snapshot.broker_dirs, **found.dirs})


async def placement(cluster: ClusterAdmin, request: Mapping[str, Any]) -> JSON:
    """KIP-879 CreateReplicaPlacement over the live cluster view."""
    from reassignd.placement import create_replica_placement

    try:
        snapshot = await cluster.snapshot([])
    except ClusterCallError as exc:
        raise ServiceError("unavailable", f"cannot read the cluster: {exc}") from None
    try:
        return create_replica_placement(snapshot, request)
    except InvalidInputError as exc:
        raise ServiceError("invalid_request", f"invalid {exc.what}", exc.problems) from None
