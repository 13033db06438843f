"""The controller: carries out what the pure machines decide, against the cluster and the store.

A cycle runs one of two machines: the plan-run machine (engine/run/machine.py) for the plan in progress,
or, while none is, the idle machine (engine/run/idle.py: whether the cluster answers, throttles left
behind). It reads what the machine asks for (reads.py), feeds the snapshot in, carries out the effects in
their order (executor.py) and feeds Kafka's answers back until the machine has nothing more to send. The
order of effects is the safety argument (engine/run/effects.py): state is committed before the writes it
describes, throttles before the steps they throttle, and a step is journaled as started in the commit
that records Kafka accepted it, so a kill -9 anywhere loses nothing and repeats nothing. A failed commit
drops the in-memory run: the next cycle rebuilds it from the store and the cluster, as a restart would.

After every cycle and every change it makes, it publishes an immutable view (view.py) that the status
views, the listing of reassignments and the foreign cancel read. It serves the API (ControllerService):
submit (submission.py), lifecycle commands (the machine's `Command`), limits and throttles (tuning.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from reassignd import config_keys
from reassignd.cluster.api import ClusterAdmin
from reassignd.cluster.errors import ClusterCallError
from reassignd.daemon import loading, reads, reassignments, roles, submission
from reassignd.daemon.clock import SteadyClock
from reassignd.daemon.executor import EffectHook, Executor, emitted
from reassignd.daemon.journal import journal_page
from reassignd.daemon.link import Link, LinkLost
from reassignd.daemon.metrics import DaemonMetrics
from reassignd.daemon.roles import decommissioned
from reassignd.daemon.service import JSON, ServiceError
from reassignd.daemon.settings import FileSettings
from reassignd.daemon.status import (
    RATE_KEYS,
    daemon_status_view,
    list_plans_view,
    plan_status_view,
    throttles_view,
)
from reassignd.daemon.tuning import Commit, Tuning
from reassignd.daemon.view import ControllerView
from reassignd.engine import Limits
from reassignd.engine import run as plan_machine
from reassignd.engine.lifecycle import CommandRefused, PlanStatus
from reassignd.engine.run import AutoThrottle, Reachability, RunState
from reassignd.engine.run import idle as idle_machine
from reassignd.engine.run import retarget as retarget_machine
from reassignd.engine.run.effects import Answered, Log, Notify
from reassignd.engine.run.figures import summary_line
from reassignd.engine.run.idle import IdleRun, IdleTransition
from reassignd.engine.run.reachability import Reached, Unreachable
from reassignd.logs import get_logger
from reassignd.model import Problem, ReassignmentPlan, shown
from reassignd.store.aio import AsyncStore, StoreState
from reassignd.store.base import (
    DECOMMISSIONED,
    BrokerRole,
    Event,
    EventKind,
    PlanRecord,
    PlanSummary,
    WriteBatch,
)

__all__ = ["AutoThrottle", "Controller"]

log = get_logger("reassignd.controller")

EventSink = Callable[[dict[str, Any]], None]
Guard = Callable[[], Awaitable[None]]
HELD = "held: the state store does not explain itself (reassignd recover)"
AnyTransition = plan_machine.Transition | IdleTransition


WRITER_WAIT_SECONDS = 15.0
"""How long a write request waits, just after start, for the writer group to say who writes."""


async def _no_guard() -> None:
    return None


class Controller:
    """Implements ControllerService; `cycle()` is driven by the daemon's FixedRateLoop.

    `guard` is awaited before every write to the cluster; with HA it raises unless this daemon still
    holds leadership, so a paused or partitioned old leader can never apply a step or a throttle.
    `clock` (clock.py) is the one every duration and stamp is read from; the store should stamp with it.
    """

    def __init__(
        self,
        cluster: ClusterAdmin,
        store: AsyncStore,
        limits: Limits,
        *,
        metrics: DaemonMetrics | None = None,
        clock: SteadyClock | None = None,
        allow_rf_change: bool = False,
        events: EventSink | None = None,
        wake: Callable[[], None] | None = None,
        guard: Guard | None = None,
        auto_throttle: AutoThrottle | None = None,
        file_settings: FileSettings | None = None,
        probe_timeout: float = 10.0,
        probe_interval: float = 5.0,
    ) -> None:
        self.cluster = cluster
        self.store = store
        clock = clock or SteadyClock()
        self.tuning = Tuning(store, file_settings or FileSettings.of(limits, auto_throttle), clock)
        self.metrics = metrics or DaemonMetrics()
        self.clock = clock
        self.allow_rf_change_default = allow_rf_change
        self.events = events
        self.wake: Callable[[], None] = wake or (lambda: None)
        self.guard = guard or _no_guard
        self.effect_hook: EffectHook | None = None
        """Called before each effect (tests crash the daemon at exact effect boundaries with it)."""
        self.is_leader = True
        """May write: the HA leader (or no HA) and the cluster's writer (daemon/writer.py)."""
        self.leader_address: str | None = None
        self._ha_leader: tuple[bool, str | None] = (True, None)
        self._writer_seen = asyncio.Event()
        self.writer: JSON | None = None
        """Who holds the cluster's writer right ({"self", "node", "url"}); None: not taken part (tests)."""
        self.run: RunState | None = None
        self.idle: IdleRun | None = None
        """The idle machine; None until throttles left behind were looked for (at start, on leadership)."""
        self.records: dict[str, PlanSummary] = {}
        self.roles: dict[int, BrokerRole] = {}
        """The brokers' lasting roles (daemon/roles.py), as the store has them."""
        self.link = Link(
            cluster,
            clock,
            say=self._say,
            changed=self._link_changed,
            back=self.wake,
            probe_timeout=probe_timeout,
            probe_interval=probe_interval,
        )
        """Whether the cluster answers: stepped by the cycle's reads and the probe (link.py)."""
        store.health.changed = self._store_changed
        self.view = ControllerView(
            limits=self.tuning.limits, cluster=self.link.state, store=store.health.state
        )
        self._submitted: tuple[str | None, ReassignmentPlan | None] = (None, None)
        self._lock = asyncio.Lock()
        self.findings: tuple[str, ...] = store.findings
        """What the store found wrong with itself at open: every cluster write is held until an operator
        decides (`recover`)."""
        self.metrics.set_store_findings(len(self.findings))
        if self.findings:
            log.error(
                "the state store does not explain itself: every cluster write is held until "
                "`reassignd recover`",
                findings=list(self.findings),
            )
        self.metrics.set_cluster_reachable(False)
        self.metrics.set_store_available(store.health.state.available)

    @property
    def limits_in_force(self) -> Limits:
        return self.tuning.limits

    async def start(self) -> None:
        """Load what the status views need before the API serves its first request, and the runtime
        settings (a restart or a failover keeps what operators changed)."""
        await self._refresh_records()
        await self.tuning.load(leading=self.is_leader)
        self._publish()

    async def config_reloaded(self, file_settings: FileSettings) -> None:
        async with self._lock:
            await self.tuning.reloaded(file_settings, leading=self.is_leader)
            self._publish()
        self.wake()

    async def leadership_changed(self, is_leader: bool, leader_address: str | None = None) -> None:
        """HA: the ZooKeeper election's verdict; the daemon leads only while it also holds the cluster's
        writer right (`writer_changed`)."""
        self._ha_leader = (is_leader, leader_address)
        await self._role_changed()

    async def writer_changed(self, holding: bool, writer: JSON | None) -> None:
        """The cluster's writer group (daemon/writer.py): whether this daemon holds the writer right, and
        who does ({"node", "url"}), if anyone is known to."""
        self.writer = {"self": holding, **(writer or {"node": None, "url": None})}
        self.metrics.set_writer(holding, elsewhere=not holding and writer is not None)
        self._writer_seen.set()
        await self._role_changed()

    async def _role_changed(self) -> None:
        ha_leading, ha_address = self._ha_leader
        holding = self.writer is None or bool(self.writer["self"])
        is_leader = ha_leading and holding
        address = ha_address if not ha_leading else None if holding else (self.writer or {}).get("url")
        if (is_leader, address) != (self.is_leader, self.leader_address):
            await self._set_role(is_leader, address)
        else:
            self._publish()

    async def _set_role(self, is_leader: bool, leader_address: str | None = None) -> None:
        """A new leader rebuilds everything from the store and the cluster; a standby only reads.

        Losing leadership shows at once, even while a cycle holds the lock (it may be blocked on the very
        store that just became unreachable; the guard already refuses its writes).
        """
        if not is_leader:
            self.is_leader, self.leader_address = False, leader_address
            self.metrics.set_leader(False)
            self._publish()
        async with self._lock:
            self.is_leader, self.leader_address = is_leader, None if is_leader else leader_address
            self.run, self.idle = None, None
            self.metrics.set_leader(is_leader)
            await self._refresh_records()
            await self.tuning.load(leading=self.is_leader)
            self._publish()
        self._emit("leadership.changed", is_leader=is_leader, leader=leader_address)
        if is_leader:
            self.wake()

    # -- the cycle ---------------------------------------------------------------------------------

    async def cycle(self) -> str:
        if not self.is_leader:
            self._publish("standby")
            return "standby"
        if self.findings:
            self._publish(HELD)
            return HELD
        async with self._lock:
            started, ok = time.monotonic(), False
            try:
                status = await self._cycle()
                ok = True
            finally:
                self.metrics.observe_cycle(time.monotonic() - started, ok)
            self._publish(status)
            self.metrics.publish_run(self.view.records, self.run)
            return status

    async def _cycle(self) -> str:
        run = await self._active_run()
        if run is None:
            self.clock.reanchor()  # no duration is being measured: stamps follow the wall clock again
            return await self._idle_cycle()
        request = plan_machine.read_request(run, self.tuning.settings)
        try:
            snapshot, min_insync = await self.link.unless_lost(reads.plan_read(self.cluster, request))
        except (ClusterCallError, LinkLost) as exc:
            self.link.saw(Unreachable(self.clock(), "read", str(exc)), run.plan_id)
            return f"{run.plan_id} {run.status.value}: cluster unreachable ({exc})"
        stopped = tuple(sorted(b for b, broker in snapshot.brokers.items() if not broker.online))
        self.link.saw(Reached(self.clock(), "read", stopped, tuple(sorted(snapshot.brokers))), run.plan_id)
        await self._drive(self._step(run, plan_machine.Observed(self.clock(), snapshot, request, min_insync)))
        current = self.run
        if current is None:
            return f"{run.plan_id}: rebuilding from the store"
        if current.ended:
            await self._refresh_records()
        return f"{current.plan_id} {current.status.value}: {summary_line(current)}"

    async def _idle_cycle(self) -> str:
        """No plan in progress: the idle machine restores throttles left behind (the probe watches the
        cluster meanwhile)."""
        idle = self.idle if self.idle is not None else IdleRun(leftovers=await loading.leftovers(self.store))
        self.idle = idle
        request = idle_machine.read(idle)
        if request.topics is None and "read" not in self.link.state.failing:
            return "idle"  # nothing to read: the probe watches the cluster
        try:
            snapshot = await self.link.unless_lost(reads.idle_read(self.cluster, request))
        except (ClusterCallError, LinkLost) as exc:
            self.link.saw(Unreachable(self.clock(), "read", str(exc)))
            return f"idle: cluster unreachable ({exc})"
        self.link.saw(Reached(self.clock(), "read"))
        if snapshot is not None:
            event = idle_machine.Contacted(self.clock(), snapshot)
            await self._drive(idle_machine.step(idle, event, self.tuning.limits))
        return "idle"

    def _step(self, run: RunState, event: plan_machine.RunEvent) -> plan_machine.Transition:
        return plan_machine.step(run, event, self.tuning.settings)

    async def _drive(self, transition: AnyTransition) -> None:
        """Carry out a transition's effects, then feed Kafka's answers back, until nothing is awaited."""
        hook = self.effect_hook
        executor = Executor(self.cluster, self.store, self.metrics, self.guard, self._emit, self.clock, hook)
        while True:
            try:
                answered = await executor.execute(transition.effects)
            except Exception:
                self.run = None  # rebuilt from the store and the cluster next cycle, as after a crash
                raise
            # Only once its effects are carried out (its journal committed): a plan is never shown
            # "completed" before it is.
            if isinstance(transition, IdleTransition):
                self.idle = transition.idle
            else:
                self.run = transition.run
            if not transition.awaits_answer:
                return
            transition = self._answered(transition, answered)

    def _answered(self, transition: AnyTransition, answered: Answered) -> AnyTransition:
        if isinstance(transition, IdleTransition):
            return idle_machine.step(transition.idle, answered, self.tuning.limits)
        return self._step(transition.run, answered)

    # -- the link to the cluster ---------------------------------------------------------------------

    async def probe(self) -> None:
        """One probe of the cluster (the daemon runs `watch_cluster`; in-process tests call this)."""
        await self.link.probe(self._plan_in_progress())

    async def watch_cluster(self) -> None:
        await self.link.watch(
            self._plan_in_progress, lambda: self.is_leader or self.view.waits_for_the_writer_right()
        )

    def _plan_in_progress(self) -> str | None:
        return self.run.plan_id if self.run is not None and not self.run.ended else None

    def _link_changed(self, link: Reachability) -> None:
        """Published at once, not at the end of a cycle that may be stuck in calls."""
        self.view = replace(self.view, cluster=link)
        self.metrics.set_cluster_reachable(link.reachable)

    def _store_changed(self, state: StoreState) -> None:
        """Published at once, as the link is: a cycle may be blocked on the very store."""
        self.view = replace(self.view, store=state)
        self.metrics.set_store_available(state.available)
        self._emit("store.available" if state.available else "store.unavailable", error=state.error)

    async def watch_store(self, interval: float = 1.0) -> None:
        """A store call unanswered for long (a lock held elsewhere, a frozen filesystem) shows while it
        hangs, not when it returns."""
        while True:
            self.store.health.check_stalls()
            await asyncio.sleep(interval)

    def _say(self, effect: Log | Notify) -> None:
        if isinstance(effect, Notify):
            self._emit(effect.kind, **dict(effect.data))
        else:
            getattr(log, effect.level)(effect.message, **dict(effect.fields))

    async def _active_run(self) -> RunState | None:
        """The running plan, else the next queued one started. Idle cycles read nothing from the store: the
        records are refreshed by every change this daemon makes (only the leader makes any)."""
        if self.run is not None and not self.run.ended:
            return self.run
        if not any(r.status is PlanStatus.QUEUED or r.status.active for r in self.records.values()):
            self.run = None
            return None
        record, started = await loading.plan_in_progress(self.store)
        if record is None or started:
            await self._refresh_records()
        if record is None:
            self.run = None
            return None
        if started:
            self._emit("plan.started", plan_id=record.id)
        self.run = await self._load(record)
        self.idle = IdleRun()  # a plan's run takes over whatever throttles are left
        return self.run

    async def _load(self, record: PlanRecord) -> RunState:
        submitted_id, plan = self._submitted
        self._submitted = (None, None)
        return await loading.plan_run(self.store, record, plan if submitted_id == record.id else None)

    # -- what it shows -------------------------------------------------------------------------------

    def _publish(self, last_status: str | None = None) -> None:
        self.view = ControllerView(
            records=dict(self.records),
            run=self.run,
            limits=self.tuning.limits,
            cluster=self.link.state,
            last_status=self.view.last_status if last_status is None else last_status,
            is_leader=self.is_leader,
            leader_address=self.leader_address,
            writer=self.writer,
            store=self.store.health.state,
            findings=self.findings,
            decommissioned=tuple(sorted(decommissioned(self.roles))),
        )

    def _emit(self, kind: str, **data: Any) -> None:
        if self.events is not None:
            self.events({"event": kind, "at": self.clock(), **emitted(data)})

    async def _refresh_records(self) -> None:
        """The plan summaries and the brokers' roles the status views read; refreshed on changes."""
        self.records = {r.id: r for r in await self.store.list_plans()}
        self.roles = await self.store.broker_roles()

    async def _require_writer(self) -> None:
        """`_require_leader`, after waiting (`WRITER_WAIT_SECONDS` at most) for the writer group:
        a request made just after start would otherwise be refused only because the group is still forming."""
        if (
            self._ha_leader[0]
            and self.writer is not None
            and not self.writer["self"]
            and not self.writer["url"]
        ):
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(WRITER_WAIT_SECONDS):
                    while not self.writer["self"] and not self.writer["url"]:
                        self._writer_seen.clear()
                        await self._writer_seen.wait()
        self._require_leader()

    def _require_leader(self) -> None:
        if not self.is_leader:
            raise self._not_leader()
        if self.findings:
            raise ServiceError("conflict", f"{HELD}; it found: {'; '.join(self.findings)}")

    def _not_leader(self) -> ServiceError:
        unreachable = self.link.state.error if not self.link.state.reachable else None
        if self.view.waits_for_the_writer_right() and unreachable:  # nobody can write: say why
            return ServiceError("unavailable", f"cannot read the cluster: {unreachable}")
        if self._ha_leader[0] and self.writer is not None and not self.writer["self"]:
            node, url = self.writer.get("node"), self.writer.get("url")
            who = f"{node} at {url}" if url else "another daemon, or none yet"
            return ServiceError(
                "not_leader",
                f"another reassignd holds this cluster's writer right ({who}); this daemon does not write",
                details={"leader": url},
            )
        return ServiceError("not_leader", "this daemon is a standby", details={"leader": self.leader_address})

    async def recover(self, request: Mapping[str, Any]) -> JSON:
        """`POST /v1/recover`: the operator's decision on what the store found at start. `adopt`: the store
        as it is and the cluster as it shows; the hold ends and the daemon goes on (journaled)."""
        mode = request.get("mode")
        if mode != "adopt":  # a 400 naming the field and the value (invalid_input was no API code: 500)
            raise ServiceError(
                "invalid_request",
                f"mode: must be 'adopt', got {shown(mode)}",
                (Problem("request", "mode", f"must be 'adopt', got {shown(mode)}"),),
                details={"field": "mode"},
            )
        if not self.is_leader:
            raise self._not_leader()
        if not self.findings:
            raise ServiceError("conflict", "nothing to recover: the store found nothing wrong at start")
        async with self._lock:
            found = self.findings
            await self.store.commit(
                WriteBatch().append(Event(EventKind.ERROR, data={"recovered": mode, "findings": list(found)}))
            )
            self.findings = ()
            self.metrics.set_store_findings(0)
            self._publish()
        log.warning("store findings adopted by an operator; cluster writes resume", findings=list(found))
        self.wake()
        return {"mode": mode, "adopted": list(found), "status": self.daemon_status()}

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
        if not dry_run:
            await self._require_writer()
        banned = () if allow_decommissioned else decommissioned(await self.store.broker_roles())
        summary = await submission.previewed(
            self.cluster,
            self.store,
            self.view,
            plan,
            self.tuning.limits,
            allow_rf_change=allow_rf_change or self.allow_rf_change_default,
            dry_run=dry_run,
            clock=self.clock,
            decommissioned=banned,
        )
        if dry_run:
            return summary
        forced = {"allow_decommissioned": True} if allow_decommissioned else None
        plan_id = await submission.queued(
            self.store, plan, self.clock(), allow_rf_change=allow_rf_change, name=name, options=forced
        )
        self._submitted = (plan_id, plan)
        self._emit("plan.submitted", plan_id=plan_id, partitions=len(plan))
        await self._refresh_records()
        self._publish()
        self.wake()
        return {**summary, "plan_id": plan_id, **({"name": name} if name else {})}

    def list_plans(self) -> list[JSON]:
        return list_plans_view(self.view)

    async def journal(self, query: Mapping[str, Any]) -> JSON:
        """GET /v1/journal (daemon/journal.py): standbys read the same store."""
        return await journal_page(self.store, **query)

    def plan_status(self, plan_id: str | None = None) -> JSON:
        return plan_status_view(self.view, plan_id)

    def daemon_status(self) -> JSON:
        return daemon_status_view(self.view)

    async def _lifecycle(self, plan_id: str | None, verb: str) -> JSON:
        await self._require_writer()
        async with self._lock:
            record = await loading.commanded(self.store, plan_id, verb)
            if record.status is PlanStatus.QUEUED and verb == "cancel":
                await self.store.commit(WriteBatch().set_status(record.id, PlanStatus.CANCELLED))
                self._emit("plan.cancelled", plan_id=record.id)
            else:
                if not record.status.active:
                    raise ServiceError(
                        "conflict", f"plan {record.id} is {record.status.value}: cannot {verb}"
                    )
                run = self.run if self.run is not None and self.run.plan_id == record.id else None
                if run is None:
                    run = self.run = await self._load(record)
                try:
                    transition = self._step(run, plan_machine.Command(self.clock(), verb))
                except CommandRefused as exc:
                    raise ServiceError("conflict", str(exc)) from None
                await self._drive(transition)
            await self._refresh_records()
            self._publish()
        self.wake()
        return self.plan_status(record.id)

    async def pause(self, plan_id: str | None = None) -> JSON:
        return await self._lifecycle(plan_id, "pause")

    async def resume(self, plan_id: str | None = None) -> JSON:
        return await self._lifecycle(plan_id, "resume")

    async def cancel(self, plan_id: str | None = None) -> JSON:
        return await self._lifecycle(plan_id, "cancel")

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
        await self._require_writer()
        commit = checked()
        async with self._lock:
            await commit(self.run.plan_id if self.run else None)
            self._publish()
        self.wake()

    async def cluster_reassignments(self) -> list[JSON]:
        return await reassignments.listed(self.cluster, self.view)

    async def cancel_foreign(self, request: Mapping[str, Any]) -> JSON:
        await self._require_writer()
        async with self._lock:
            answer = await reassignments.cancel_foreign(self.cluster, self.store, self.view, request)
        self.wake()
        return answer

    async def place(self, request: Mapping[str, Any]) -> JSON:
        return await submission.placement(self.cluster, request)

    # -- brokers' roles and re-targets (daemon/roles.py) ------------------------------------------

    async def broker_roles(self) -> JSON:
        """`GET /v1/brokers`: every broker with its role (standbys read the same store)."""
        stored = await self.store.broker_roles()
        try:
            snapshot = await self.cluster.snapshot()
        except ClusterCallError:
            snapshot = None
        return roles.roles_json(stored, snapshot)

    async def decommissioned_brokers(self) -> frozenset[int]:
        """As the store has them now (proposals exclude them)."""
        return decommissioned(await self.store.broker_roles())

    async def decommission(self, broker: Any, request: Mapping[str, Any]) -> JSON:
        """Mark `broker` decommissioned; with `drain`, queue the plan that drains it in the same commit."""
        broker_id = roles.broker_id(broker)
        drain, reason = roles.decommission_options(request)
        await self._require_writer()
        async with self._lock:
            snapshot = await roles.cluster_view(self.cluster)
            roles.check_known(broker_id, snapshot)
            stored = await self.store.broker_roles()
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
                    await self.store.commit(batch)
            await self._refresh_records()
            self._publish()
        self._emit("broker.decommissioned", broker=broker_id, changed=changed, reason=reason)
        self.wake()
        return answer

    async def _queue_drain(self, plan: ReassignmentPlan, broker: int, batch: WriteBatch) -> JSON:
        """The drain plan checked as any submitted plan is, then queued with `batch` (one commit)."""
        summary = await submission.previewed(
            self.cluster,
            self.store,
            self.view,
            plan,
            self.tuning.limits,
            allow_rf_change=False,
            dry_run=False,
            clock=self.clock,
        )
        name = f"drain broker {broker}"
        plan_id = await submission.queued(
            self.store, plan, self.clock(), allow_rf_change=False, name=name, batch=batch
        )
        self._submitted = (plan_id, plan)
        self._emit("plan.submitted", plan_id=plan_id, partitions=len(plan))
        return {
            "plan_id": plan_id,
            "name": name,
            "partitions": len(plan),
            "replicas_to_move": summary["replicas_to_move"],
            "bytes_to_move": summary["bytes_to_move"],
        }

    async def retarget(self, plan_id: str | None = None) -> JSON:
        """New targets for the partitions of the running plan (or `plan_id`) that wait on a broker that is
        gone, swapped into the run without restarting it (daemon/roles.py, engine/run/retarget.py)."""
        await self._require_writer()
        async with self._lock:
            record = await loading.commanded(self.store, plan_id, "retarget")
            if record.status not in (PlanStatus.RUNNING, PlanStatus.PAUSED):
                raise ServiceError("conflict", f"plan {record.id} is {record.status.value}: cannot retarget")
            run = self.run if self.run is not None and self.run.plan_id == record.id else None
            if run is None:
                run = self.run = await self._load(record)
            if run.awaiting is not None:
                raise ServiceError("conflict", f"plan {record.id} waits for Kafka's answer: retarget again")
            try:
                snapshot = await self.cluster.snapshot(topic_config_keys=(config_keys.MIN_INSYNC_REPLICAS,))
            except ClusterCallError as exc:
                raise ServiceError("unavailable", f"cannot read the cluster: {exc}") from None
            banned = decommissioned(await self.store.broker_roles())
            choice = roles.retarget_choice(run, snapshot, banned)
            before = run.plan
            if choice.targets:
                await self._drive(retarget_machine.swapped(run, choice.targets, snapshot, choice.gone))
            answer = roles.retarget_json(self.run or run, before, choice)
            self._publish()
        self.wake()
        return answer

    async def recommission(self, broker: Any) -> JSON:
        """Take the decommissioned role away: `broker` may receive replicas again (nothing moves now)."""
        broker_id = roles.broker_id(broker)
        await self._require_writer()
        async with self._lock:
            changed = broker_id in decommissioned(await self.store.broker_roles())
            if changed:
                await self.store.commit(WriteBatch().set_broker_role(broker_id, None))
            await self._refresh_records()
            self._publish()
        self._emit("broker.recommissioned", broker=broker_id, changed=changed)
        return {"broker": broker_id, "role": "member", "changed": changed}

    def health(self) -> JSON:
        return self.view.health()

    def readiness(self) -> JSON:
        return self.view.readiness()
