"""Commands on plans, as the controller serves them: submit (submission.py), pause, resume and cancel (the
plan-run machine's `Command`), and re-target (daemon/roles.py, engine/run/retarget.py)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from reassignd import config_keys
from reassignd.cluster.errors import ClusterCallError
from reassignd.daemon import loading, roles, submission
from reassignd.daemon.host import CommandHost
from reassignd.daemon.roles import decommissioned
from reassignd.daemon.service import JSON, ServiceError
from reassignd.daemon.status import plan_status_view
from reassignd.engine import run as plan_machine
from reassignd.engine.lifecycle import CommandRefused, PlanStatus
from reassignd.engine.run import retarget as retarget_machine
from reassignd.model import ReassignmentPlan
from reassignd.store.base import PlanRecord, WriteBatch


class PlanCommands:
    def __init__(self, host: CommandHost, *, allow_rf_change_default: bool = False) -> None:
        self.host = host
        self.allow_rf_change_default = allow_rf_change_default

    async def submit(
        self,
        plan: ReassignmentPlan,
        *,
        dry_run: bool,
        allow_rf_change: bool,
        name: str | None,
        allow_decommissioned: bool,
    ) -> JSON:
        host = self.host
        if not dry_run:
            await host.require_writer()
        banned = () if allow_decommissioned else decommissioned(await host.store.broker_roles())
        permissive = allow_rf_change or self.allow_rf_change_default
        summary = await self.checked(plan, dry_run=dry_run, allow_rf_change=permissive, banned=banned)
        if dry_run:
            return summary
        forced = {"allow_decommissioned": True} if allow_decommissioned else None
        plan_id = await self.queue(plan, name=name, allow_rf_change=allow_rf_change, options=forced)
        await host.refresh_records()
        host.publish()
        host.wake()
        return {**summary, "plan_id": plan_id, **({"name": name} if name else {})}

    async def checked(
        self, plan: ReassignmentPlan, *, dry_run: bool, allow_rf_change: bool, banned: Collection[int] = ()
    ) -> JSON:
        """The plan checked against the cluster and the other plans, as every plan is before it is queued."""
        host = self.host
        return await submission.previewed(
            host.cluster,
            host.store,
            host.view,
            plan,
            host.tuning.limits,
            allow_rf_change=allow_rf_change,
            dry_run=dry_run,
            clock=host.clock,
            decommissioned=banned,
        )

    async def queue(
        self,
        plan: ReassignmentPlan,
        *,
        name: str | None,
        allow_rf_change: bool = False,
        options: Mapping[str, Any] | None = None,
        batch: WriteBatch | None = None,
    ) -> str:
        """A checked plan stored as queued (with `batch`, in one commit); its id."""
        host = self.host
        plan_id = await submission.queued(
            host.store,
            plan,
            host.clock(),
            allow_rf_change=allow_rf_change,
            name=name,
            batch=batch,
            options=options,
        )
        host.submitted(plan_id, plan)
        host.emit("plan.submitted", plan_id=plan_id, partitions=len(plan))
        return plan_id

    async def lifecycle(self, plan_id: str | None, verb: str) -> JSON:
        """pause, resume or cancel: a queued plan is cancelled in the store, an active one by its run."""
        host = self.host
        await host.require_writer()
        with host.outbox.held():
            async with host.lock:
                record = await self._lifecycle(plan_id, verb)
        host.wake()
        return plan_status_view(host.view, record.id)

    async def _lifecycle(self, plan_id: str | None, verb: str) -> PlanRecord:
        """Under the lock: the command carried out, the records refreshed and the view published."""
        host = self.host
        record = await loading.commanded(host.store, plan_id, verb)
        if record.status is PlanStatus.QUEUED and verb == "cancel":
            await host.store.commit(WriteBatch().set_status(record.id, PlanStatus.CANCELLED))
            host.emit("plan.cancelled", plan_id=record.id)
        else:
            if not record.status.active:
                raise ServiceError("conflict", f"plan {record.id} is {record.status.value}: cannot {verb}")
            run = await host.run_of(record)
            try:
                transition = plan_machine.step(
                    run, plan_machine.Command(host.clock(), verb), host.tuning.settings
                )
            except CommandRefused as exc:
                raise ServiceError("conflict", str(exc)) from None
            await host.drive(transition)
        await host.refresh_records()
        host.publish()
        return record

    async def retarget(self, plan_id: str | None) -> JSON:
        """New targets for the partitions of the running plan (or `plan_id`) that wait on a broker that is
        gone, swapped into the run without restarting it."""
        host = self.host
        await host.require_writer()
        with host.outbox.held():
            async with host.lock:
                answer = await self._retargeted(plan_id)
        host.wake()
        return answer

    async def _retargeted(self, plan_id: str | None) -> JSON:
        """Under the lock: the new targets swapped in and the view published."""
        host = self.host
        record = await loading.commanded(host.store, plan_id, "retarget")
        if record.status not in (PlanStatus.RUNNING, PlanStatus.PAUSED):
            raise ServiceError("conflict", f"plan {record.id} is {record.status.value}: cannot retarget")
        run = await host.run_of(record)
        if run.awaiting is not None:
            raise ServiceError("conflict", f"plan {record.id} waits for Kafka's answer: retarget again")
        try:
            snapshot = await host.cluster.snapshot(topic_config_keys=(config_keys.MIN_INSYNC_REPLICAS,))
        except ClusterCallError as exc:
            raise ServiceError("unavailable", f"cannot read the cluster: {exc}") from None
        banned = decommissioned(await host.store.broker_roles())
        choice = roles.retarget_choice(run, snapshot, banned)
        before = run.plan
        if choice.targets:
            await host.drive(retarget_machine.swapped(run, choice.targets, snapshot, choice.gone))
        answer = roles.retarget_json(host.run or run, before, choice)
        host.publish()
        return answer
