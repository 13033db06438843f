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
commands on plans (plan_commands.py) and brokers (broker_commands.py), limits and throttles (tuning.py),
each under the lock its cycle holds and only while it may write (authority.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from reassignd.cluster.api import ClusterAdmin
from reassignd.cluster.errors import ClusterCallError
from reassignd.daemon import loading, reads
from reassignd.daemon.authority import WriteAuthority
from reassignd.daemon.broker_commands import BrokerCommands
from reassignd.daemon.clock import SteadyClock
from reassignd.daemon.controller_api import HELD, ControllerApi
from reassignd.daemon.executor import EffectHook, Executor, emitted
from reassignd.daemon.healing import SelfHealing
from reassignd.daemon.link import Link, LinkLost
from reassignd.daemon.metrics import DaemonMetrics
from reassignd.daemon.outbox import Outbox
from reassignd.daemon.ownership import MarkerPort, Ownership
from reassignd.daemon.plan_commands import PlanCommands
from reassignd.daemon.roles import decommissioned
from reassignd.daemon.service import JSON
from reassignd.daemon.settings import FileSettings
from reassignd.daemon.tuning import Tuning
from reassignd.daemon.view import ControllerView
from reassignd.engine import Limits
from reassignd.engine import run as plan_machine
from reassignd.engine.anomalies import HealingSettings
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.run import AutoThrottle, Reachability, RunState
from reassignd.engine.run import idle as idle_machine
from reassignd.engine.run.effects import Answered, Log, Notify
from reassignd.engine.run.figures import summary_line
from reassignd.engine.run.idle import IdleRun, IdleTransition
from reassignd.engine.run.reachability import Reached, Unreachable
from reassignd.logs import get_logger
from reassignd.model import ReassignmentPlan
from reassignd.store.aio import AsyncStore, StoreState
from reassignd.store.base import BrokerRole, PlanRecord, PlanSummary

__all__ = ["AutoThrottle", "Controller"]

log = get_logger("reassignd.controller")

EventSink = Callable[[dict[str, Any]], None]
Guard = Callable[[], Awaitable[None]]
AnyTransition = plan_machine.Transition | IdleTransition


class Controller(ControllerApi):
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
        healing: HealingSettings | None = None,
        marker: MarkerPort | None = None,
    ) -> None:
        self.cluster = cluster
        self.store = store
        clock = clock or SteadyClock()
        self.tuning = Tuning(store, file_settings or FileSettings.of(limits, auto_throttle), clock)
        self.metrics = metrics or DaemonMetrics()
        self.clock = clock
        self.outbox = Outbox(events)
        self.wake: Callable[[], None] = wake or (lambda: None)
        self.ownership = Ownership(marker, store)
        """The ownership marker kept in Kafka, and the store's cross-check against the cluster at start."""
        self.guard = self.ownership.guarded(guard or (lambda: asyncio.sleep(0)))
        self.effect_hook: EffectHook | None = None
        """Called before each effect (tests crash the daemon at exact effect boundaries with it)."""
        self.authority = WriteAuthority()
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
        self.lock = asyncio.Lock()
        self.plans = PlanCommands(self, allow_rf_change_default=allow_rf_change)
        self.brokers = BrokerCommands(self, self.plans)
        self.healing = SelfHealing(self, self.plans, healing or HealingSettings())
        self.findings: tuple[str, ...] = store.findings
        """What the store found wrong with itself at open: every cluster write is held until an operator
        decides (`recover`)."""
        self.metrics.set_store_findings(len(self.findings))
        self.metrics.set_anomalies(self.healing.counts())
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
        await self.refresh_records()
        await self.tuning.load(leading=self.is_leader)
        self.publish()

    async def config_reloaded(self, file_settings: FileSettings) -> None:
        async with self.lock:
            await self.tuning.reloaded(file_settings, leading=self.is_leader)
            self.publish()
        self.wake()

    async def leadership_changed(self, is_leader: bool, leader_address: str | None = None) -> None:
        """HA: the ZooKeeper election's verdict; the daemon leads only while it also holds the cluster's
        writer right (`writer_changed`)."""
        self.authority.ha = (is_leader, leader_address)
        await self._role_changed()

    async def writer_changed(self, holding: bool, writer: JSON | None) -> None:
        """The cluster's writer group (daemon/writer.py): whether this daemon holds the writer right, and
        who does ({"node", "url"}), if anyone is known to."""
        self.authority.writer_changed(holding, writer)
        self.metrics.set_writer(holding, elsewhere=not holding and writer is not None)
        await self._role_changed()

    async def _role_changed(self) -> None:
        verdict = self.authority.verdict()
        if verdict != (self.is_leader, self.leader_address):
            await self._set_role(*verdict)
        else:
            self.publish()

    async def _set_role(self, is_leader: bool, leader_address: str | None = None) -> None:
        """A new leader rebuilds everything from the store and the cluster; a standby only reads.

        Losing leadership shows at once, even while a cycle holds the lock (it may be blocked on the very
        store that just became unreachable; the guard already refuses its writes).
        """
        authority = self.authority
        if not is_leader:
            authority.is_leader, authority.leader_address = False, leader_address
            self.metrics.set_leader(False)
            self.publish()
        async with self.lock:
            authority.is_leader, authority.leader_address = is_leader, None if is_leader else leader_address
            self.run, self.idle = None, None
            self.healing.forget()  # another daemon may have changed the anomalies: read from the store
            self.ownership.due = self.ownership.due or is_leader
            self.metrics.set_leader(is_leader)
            await self.refresh_records()
            await self.tuning.load(leading=self.is_leader)
            self.publish()
        self.emit("leadership.changed", is_leader=is_leader, leader=leader_address)
        if is_leader:
            self.wake()

    # -- the cycle ---------------------------------------------------------------------------------

    async def cycle(self) -> str:
        if not self.is_leader:
            self.publish("standby")
            return "standby"
        if self.ownership.due and (unchecked := await self.crosscheck()):
            return unchecked
        if self.findings:
            self.publish(HELD)
            return HELD
        with self.outbox.held():
            async with self.lock:
                started, ok = time.monotonic(), False
                try:
                    status = await self._cycle()
                    await self.ownership.settle()  # a state changed after the cycle's last write
                    ok = True
                finally:
                    self.metrics.observe_cycle(time.monotonic() - started, ok)
                self.publish(status)
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
        await self.drive(self._step(run, plan_machine.Observed(self.clock(), snapshot, request, min_insync)))
        current = self.run
        if current is None:
            return f"{run.plan_id}: rebuilding from the store"
        if current.ended:
            await self.refresh_records()
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
            await self.drive(idle_machine.step(idle, event, self.tuning.limits))
        return "idle"

    def _step(self, run: RunState, event: plan_machine.RunEvent) -> plan_machine.Transition:
        return plan_machine.step(run, event, self.tuning.settings)

    async def drive(self, transition: AnyTransition) -> None:
        """Carry out a transition's effects, then feed Kafka's answers back, until nothing is awaited."""
        hook = self.effect_hook
        executor = Executor(self.cluster, self.store, self.metrics, self.guard, self.emit, self.clock, hook)
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
        self.emit("store.available" if state.available else "store.unavailable", error=state.error)

    async def watch_store(self, interval: float = 1.0) -> None:
        """A store call unanswered for long (a lock held elsewhere, a frozen filesystem) shows while it
        hangs, not when it returns."""
        while True:
            self.store.health.check_stalls()
            await asyncio.sleep(interval)

    def _say(self, effect: Log | Notify) -> None:
        if isinstance(effect, Notify):
            self.emit(effect.kind, **dict(effect.data))
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
            await self.refresh_records()
        if record is None:
            self.run = None
            return None
        if started:
            self.emit("plan.started", plan_id=record.id)
        self.run = await self._load(record)
        self.idle = IdleRun()  # a plan's run takes over whatever throttles are left
        return self.run

    async def run_of(self, record: PlanRecord) -> RunState:
        if self.run is None or self.run.plan_id != record.id:
            self.run = await self._load(record)
        return self.run

    def submitted(self, plan_id: str, plan: ReassignmentPlan) -> None:
        self._submitted = (plan_id, plan)

    async def _load(self, record: PlanRecord) -> RunState:
        submitted_id, plan = self._submitted
        self._submitted = (None, None)
        return await loading.plan_run(self.store, record, plan if submitted_id == record.id else None)

    # -- what it shows -------------------------------------------------------------------------------

    def publish(self, last_status: str | None = None) -> None:
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

    def emit(self, kind: str, **data: Any) -> None:
        self.outbox.put({"event": kind, "at": self.clock(), **emitted(data)})

    async def refresh_records(self) -> None:
        """The plan summaries and the brokers' roles the status views read; refreshed on changes."""
        self.records = {r.id: r for r in await self.store.list_plans()}
        self.roles = await self.store.broker_roles()
