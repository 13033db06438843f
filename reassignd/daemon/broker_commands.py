"""Commands on brokers' lasting roles, as the controller serves them (daemon/roles.py): list, decommission
(with `drain`, its drain plan queued in the same commit as the mark) and recommission."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reassignd.cluster.errors import ClusterCallError
from reassignd.daemon import roles
from reassignd.daemon.host import CommandHost
from reassignd.daemon.plan_commands import PlanCommands
from reassignd.daemon.roles import decommissioned
from reassignd.daemon.service import JSON
from reassignd.model import ReassignmentPlan
from reassignd.store.base import DECOMMISSIONED, WriteBatch


class BrokerCommands:
    def __init__(self, host: CommandHost, plans: PlanCommands) -> None:
        self.host = host
        self.plans = plans

    async def listed(self) -> JSON:
        """`GET /v1/brokers`: every broker with its role (standbys read the same store)."""
        stored = await self.host.store.broker_roles()
        try:
            snapshot = await self.host.cluster.snapshot()
        except ClusterCallError:
            snapshot = None
        return roles.roles_json(stored, snapshot)

    async def decommissioned(self) -> frozenset[int]:
        """As the store has them now (proposals exclude them)."""
        return decommissioned(await self.host.store.broker_roles())

    async def decommission(self, broker: Any, request: Mapping[str, Any]) -> JSON:
        """Mark `broker` decommissioned; with `drain`, queue the plan that drains it in the same commit."""
        host = self.host
        broker_id = roles.broker_id(broker)
        drain, reason = roles.decommission_options(request)
        await host.require_writer()
        async with host.lock:
            snapshot = await roles.cluster_view(host.cluster)
            roles.check_known(broker_id, snapshot)
            stored = await host.store.broker_roles()
            changed = broker_id not in decommissioned(stored)
            batch = WriteBatch()
            if changed:
                batch.set_broker_role(broker_id, DECOMMISSIONED, reason)
            plan = await roles.drain_plan(snapshot, broker_id, decommissioned(stored)) if drain else None
            answer: JSON = {"broker": broker_id, "role": DECOMMISSIONED, "changed": changed}
            if plan is not None:  # queued in the commit that marks the broker
                answer["drain"] = await self._queue_drain(plan, broker_id, batch)
            else:
                if drain:
                    detail = f"broker {broker_id} holds no replica that can move"
                    answer["drain"] = {"plan_id": None, "partitions": 0, "detail": detail}
                if batch:
                    await host.store.commit(batch)
            await host.refresh_records()
            host.publish()
        host.emit("broker.decommissioned", broker=broker_id, changed=changed, reason=reason)
        host.wake()
        return answer

    async def _queue_drain(self, plan: ReassignmentPlan, broker: int, batch: WriteBatch) -> JSON:
        """The drain plan checked as any submitted plan is, then queued with `batch` (one commit)."""
        summary = await self.plans.checked(plan, dry_run=False, allow_rf_change=False)
        name = f"drain broker {broker}"
        plan_id = await self.plans.queue(plan, name=name, batch=batch)
        return {
            "plan_id": plan_id,
            "name": name,
            "partitions": len(plan),
            "replicas_to_move": summary["replicas_to_move"],
            "bytes_to_move": summary["bytes_to_move"],
        }

    async def recommission(self, broker: Any) -> JSON:
        """Take the decommissioned role away: `broker` may receive replicas again (nothing moves now). A
        broker with no role must be in the cluster (a mistyped id is not found, not "unchanged"); one with the
        role need not (it may have left the cluster since)."""
        host = self.host
        broker_id = roles.broker_id(broker)
        await host.require_writer()
        async with host.lock:
            changed = broker_id in decommissioned(await host.store.broker_roles())
            if changed:
                await host.store.commit(WriteBatch().set_broker_role(broker_id, None))
            else:
                await self._check_in_cluster(broker_id)
            await host.refresh_records()
            host.publish()
        host.emit("broker.recommissioned", broker=broker_id, changed=changed)
        return {"broker": broker_id, "role": "member", "changed": changed}

    async def _check_in_cluster(self, broker: int) -> None:
        """not_found unless the cluster's metadata lists `broker`; an unreachable cluster decides nothing."""
        try:
            snapshot = await self.host.cluster.snapshot()
        except ClusterCallError:
            return
        roles.check_known(broker, snapshot)
