"""The controller's API surface (ControllerService, daemon/service.py): each request handed to the part
that serves it, and refused first when this daemon may not write (authority.py) or holds its writes
(the store's findings at start, `recover`). The cycle and what it publishes are in controller.py."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from reassignd.cluster.api import ClusterAdmin
from reassignd.daemon import reassignments, submission
from reassignd.daemon.authority import WriteAuthority
from reassignd.daemon.broker_commands import BrokerCommands
from reassignd.daemon.healing import SelfHealing
from reassignd.daemon.host import CommandHost
from reassignd.daemon.journal import journal_page
from reassignd.daemon.link import Link
from reassignd.daemon.metrics import DaemonMetrics
from reassignd.daemon.ownership import Ownership, cancel_active, recovered_batch
from reassignd.daemon.plan_commands import PlanCommands
from reassignd.daemon.service import JSON, ServiceError
from reassignd.daemon.status import (
    RATE_KEYS,
    daemon_status_view,
    list_plans_view,
    plan_status_view,
    throttles_view,
)
from reassignd.daemon.tuning import Commit
from reassignd.logs import get_logger
from reassignd.model import Problem, ReassignmentPlan, shown
from reassignd.store.base import PlanSummary

log = get_logger("reassignd.controller")

HELD = "held: the state store does not explain itself (reassignd recover)"
RECOVER_MODES = ("adopt", "cleanup")


class ControllerApi(CommandHost):
    """The Controller's requests; what they read and change is the controller's (its attributes below)."""

    cluster: ClusterAdmin
    metrics: DaemonMetrics
    authority: WriteAuthority
    link: Link
    plans: PlanCommands
    brokers: BrokerCommands
    healing: SelfHealing
    findings: tuple[str, ...]
    """What the store found wrong with itself at open, and the cross-check against the cluster when this
    daemon became the writer: every cluster write is held until an operator decides (`recover`)."""
    ownership: Ownership
    guard: Callable[[], Awaitable[None]]
    records: dict[str, PlanSummary]

    @property
    def is_leader(self) -> bool:
        """May write: the HA leader (or no HA) and the cluster's writer (authority.py)."""
        return self.authority.is_leader

    @property
    def leader_address(self) -> str | None:
        return self.authority.leader_address

    @property
    def writer(self) -> JSON | None:
        return self.authority.writer

    async def require_writer(self) -> None:
        """Raises unless this daemon may write, after waiting a moment for the writer group to form."""
        await self.authority.settled()
        self._require_leader()
        if self.ownership.due:  # a request that writes before the first cycle: the cross-check first
            if (unchecked := await self.crosscheck()) is not None:
                raise ServiceError("unavailable", unchecked)
            self._require_leader()

    async def crosscheck(self) -> str | None:
        """The store against the cluster, once this daemon is the writer and before its first write
        (daemon/ownership.py); a status to end the cycle with when it could not be made."""
        earlier = self.ownership.found
        try:
            found = await self.ownership.crosscheck(self.cluster)
        except Exception as exc:  # the cluster or the group out of reach: checked again next cycle
            log.warning("store cross-check: cannot read the cluster; nothing is written", error=repr(exc))
            status = f"held: the store's cross-check cannot read the cluster ({exc})"
            self.publish(status)
            return status
        if found:  # a check made again (the writer right came back) replaces its own earlier findings
            self.findings = (*(f for f in self.findings if f not in earlier), *found)
            self.metrics.set_store_findings(len(self.findings))
            self.emit("store.findings", findings=list(found))
            self.publish()
        return None

    def _require_leader(self) -> None:
        if not self.is_leader:
            raise self._not_leader()
        if self.findings:
            raise ServiceError("conflict", f"{HELD}; it found: {'; '.join(self.findings)}")

    def _not_leader(self) -> ServiceError:
        unreachable = self.link.state.error if not self.link.state.reachable else None
        return self.authority.refusal(unreachable, self.view.waits_for_the_writer_right())

    async def recover(self, request: Mapping[str, Any]) -> JSON:
        """`POST /v1/recover`: the operator's decision on what was found at start. `adopt`: the store as it
        is and the cluster as it shows. `cleanup`: the reassignments in flight the ownership marker proves
        ours are cancelled, the throttle configs it names put back as they were before our first write,
        and a plan the store still runs is cancelled. Either way journaled, the marker rewritten to say
        what the store says, and the hold ends."""
        mode = request.get("mode")
        if mode not in RECOVER_MODES:  # a 400 naming the field and the value
            expected = "must be 'adopt' or 'cleanup'"
            raise ServiceError(
                "invalid_request",
                f"mode: {expected}, got {shown(mode)}",
                (Problem("request", "mode", f"{expected}, got {shown(mode)}"),),
                details={"field": "mode", "value": mode if isinstance(mode, str | int | float) else None},
            )
        if unknown := sorted(str(k)[:80] for k in request if k != "mode"):  # as RecoverRequest says
            raise ServiceError(
                "invalid_request",
                f"unknown field(s) {', '.join(unknown)} (known: mode)",
                tuple(Problem("request", k, "unknown field (known: mode)") for k in unknown),
            )
        if not self.is_leader:
            raise self._not_leader()
        if not self.findings:
            raise ServiceError("conflict", "nothing to recover: the store found nothing wrong at start")
        async with self.lock:
            if not self.findings:  # another `recover` decided while this one waited for the lock
                raise ServiceError("conflict", "nothing to recover: another `recover` has just decided")
            found, done = self.findings, None
            if mode == "cleanup":
                done = await self.ownership.cleanup(self.cluster, self.guard)
                if done["errors"]:
                    raise ServiceError("unavailable", f"cleanup incomplete: {'; '.join(done['errors'])}")
            batch = recovered_batch(mode, found, done, self.ownership.marker, self.ownership.seen)
            if mode == "cleanup":
                cancel_active(batch, {p.id: p.status for p in self.records.values()})
            await self.store.commit(batch)
            self.ownership.held = False
            await self.ownership.flush("recovered")
            self.findings = ()
            self.metrics.set_store_findings(0)
            await self.refresh_records()
            self.publish()
        log.warning("store findings decided by an operator; writes resume", mode=mode, findings=list(found))
        self.wake()
        answer: JSON = {"mode": mode, "findings": list(found), **(done or {"adopted": list(found)})}
        return {**answer, "status": self.daemon_status()}

    # -- ControllerService: see reassignd/daemon/service.py -----------------------------------------

    async def submit_plan(
        self,
        plan: ReassignmentPlan,
        *,
        dry_run: bool = False,
        allow_rf_change: bool = False,
        name: str | None = None,
        allow_decommissioned: bool = False,
    ) -> JSON:
        return await self.plans.submit(
            plan,
            dry_run=dry_run,
            allow_rf_change=allow_rf_change,
            name=name,
            allow_decommissioned=allow_decommissioned,
        )

    def list_plans(self) -> list[JSON]:
        return list_plans_view(self.view)

    async def journal(self, query: Mapping[str, Any]) -> JSON:
        """GET /v1/journal (daemon/journal.py): standbys read the same store."""
        return await journal_page(self.store, **query)

    def plan_status(self, plan_id: str | None = None) -> JSON:
        return plan_status_view(self.view, plan_id)

    def daemon_status(self) -> JSON:
        return daemon_status_view(self.view)

    async def pause(self, plan_id: str | None = None) -> JSON:
        return await self.plans.lifecycle(plan_id, "pause")

    async def resume(self, plan_id: str | None = None) -> JSON:
        return await self.plans.lifecycle(plan_id, "resume")

    async def cancel(self, plan_id: str | None = None) -> JSON:
        return await self.plans.lifecycle(plan_id, "cancel")

    def limits(self) -> JSON:
        return self.tuning.to_json()

    async def set_limits(self, changes: Mapping[str, Any]) -> JSON:
        await self._tune(lambda: self.tuning.change(changes, None, "limits"))
        return self.limits()

    def throttles(self) -> JSON:
        return throttles_view(self.view)

    async def set_throttles(self, changes: Mapping[str, Any]) -> JSON:
        """New rates reach in-flight moves in the next cycle, which this wakes at once."""
        await self._tune(lambda: self.tuning.change(changes, set(RATE_KEYS), "throttles"))
        return throttles_view(self.view)

    async def reset_limits(self, keys: list[str] | None = None) -> JSON:
        """Runtime changes of `keys` (all when None) undone: the config file's values apply again."""
        await self._tune(lambda: self.tuning.reset(keys))
        return self.limits()

    async def _tune(self, checked: Callable[[], Commit]) -> None:
        """A settings change, checked at once, applied between two cycles (the cycle holds the same lock),
        so no cycle sees two limit sets, and kept by a restart or a failover (daemon/settings.py)."""
        await self.require_writer()
        commit = checked()
        async with self.lock:
            await commit(self.run.plan_id if self.run else None)
            self.publish()
        self.wake()

    async def cluster_reassignments(self) -> list[JSON]:
        return await reassignments.listed(self.cluster, self.view)

    async def cancel_foreign(self, request: Mapping[str, Any]) -> JSON:
        await self.require_writer()
        async with self.lock:
            answer = await reassignments.cancel_foreign(self.cluster, self.store, self.view, request)
        self.wake()
        return answer

    async def place(self, request: Mapping[str, Any]) -> JSON:
        return await submission.placement(self.cluster, request)

    # -- brokers' roles and re-targets (broker_commands.py, plan_commands.py) -------------------------

    async def broker_roles(self) -> JSON:
        return await self.brokers.listed()

    async def decommissioned_brokers(self) -> frozenset[int]:
        return await self.brokers.decommissioned()

    async def decommission(self, broker: Any, request: Mapping[str, Any]) -> JSON:
        return await self.brokers.decommission(broker, request)

    async def recommission(self, broker: Any) -> JSON:
        return await self.brokers.recommission(broker)

    async def retarget(self, plan_id: str | None = None) -> JSON:
        return await self.plans.retarget(plan_id)

    def health(self) -> JSON:
        return self.view.health()

    def readiness(self) -> JSON:
        return self.view.readiness()

    # -- self-healing (healing.py) --------------------------------------------------------------------

    def anomalies(self) -> JSON:
        """`GET /v1/anomalies` (standbys show what they saw: only the writer checks)."""
        return self.healing.listed()

    async def approve_anomaly(self, anomaly_id: str) -> JSON:
        return await self.healing.approve(anomaly_id)

    async def check_anomalies(self) -> None:
        """One self-healing check on the writer (the daemon runs `watch_anomalies`)."""
        if self.is_leader and not self.findings:
            await self.healing.check()
            self.metrics.set_anomalies(self.healing.counts())

    async def watch_anomalies(self) -> None:
        """`check_anomalies` every `self.healing.check.interval.seconds` (a failed check is logged)."""
        while True:
            try:
                await self.check_anomalies()
            except ServiceError as exc:  # the writer right went meanwhile: the next check says
                log.info("self-healing check stopped", error=exc.message)
            except Exception as exc:
                log.warning("self-healing check failed; checked again later", error=repr(exc))
            await self.healing.next_check()
