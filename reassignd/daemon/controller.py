"""The controller: runs the plan-run machine (engine/run.py) against the cluster and the store.

It holds no plan policy. A cycle reads what the machine asks for (`read_request`), feeds the snapshot in
(`Observed`), carries out the effects in their order (executor.py) and feeds Kafka's answers back until the
machine has nothing more to send. The order of effects is the machine's safety argument (engine/effects.py):
state is committed before the writes it describes, throttles before the steps they throttle, and a step is
journaled as started in the commit that records Kafka accepted it, so a kill -9 anywhere loses nothing and
repeats nothing. A failed commit drops the in-memory run: the next cycle rebuilds it from the store and the
cluster, exactly as a restart would.

Besides cycles it serves the API (ControllerService): submit, lifecycle commands (the machine's `Command`),
limits and throttles, status views (daemon/status.py).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from reassignd.cluster.api import ClusterAdmin
from reassignd.cluster.errors import ClusterCallError
from reassignd.daemon import reassignments
from reassignd.daemon import settings as runtime_settings
from reassignd.daemon.executor import EffectHook, Executor, emitted
from reassignd.daemon.journal import journal_page
from reassignd.daemon.metrics import DaemonMetrics
from reassignd.daemon.service import JSON, ServiceError
from reassignd.daemon.settings import FileSettings
from reassignd.daemon.status import RATE_KEYS, cluster_view, list_plans_view, plan_status_view, throttles_view
from reassignd.daemon.throttles import write_throttles
from reassignd.daemon.validation import plan_rejection, unfinished_partitions, validate_plan
from reassignd.engine import Limits, Status
from reassignd.engine.dryrun import step_preview
from reassignd.engine.progress import plan_bytes
from reassignd.engine.run import (
    AutoThrottle,
    Command,
    CommandRefused,
    Observed,
    Phase,
    Reachability,
    RunState,
    Settings,
    Transition,
    Unreachable,
    new_run,
    read_request,
    step,
)
from reassignd.engine.throttle import BROKER_KEYS, TOPIC_KEYS, ThrottleOriginals
from reassignd.engine.throttle_book import ThrottleBook, sync_throttles, written
from reassignd.logs import get_logger
from reassignd.model import (
    ANY_LOG_DIR,
    ClusterSnapshot,
    InvalidInputError,
    Problem,
    ReassignmentPlan,
    assignment_document,
)
from reassignd.store.aio import AsyncStore
from reassignd.store.base import (
    ACTIVE_STATUSES,
    ConfigResource,
    Event,
    EventKind,
    OriginalValue,
    PlanRecord,
    PlanStatus,
    PlanSummary,
    SettingsConflict,
    WriteBatch,
)
from reassignd.suggest import unknown_key

__all__ = ["AutoThrottle", "Controller"]

DEFAULT_AUTO_STEP = 10 * 1024 * 1024
DEFAULT_AUTO_MAX = 200 * 1024 * 1024

log = get_logger("reassignd.controller")

EventSink = Callable[[dict[str, Any]], None]


async def _no_guard() -> None:
    return None


def _written(
    stored: Mapping[tuple[ConfigResource, str], OriginalValue],
) -> dict[tuple[str, str, str], tuple[str | None, ...]]:
    """What our own writes left in each config we changed, as persisted beside its original."""
    return {
        (resource.type, resource.name, key): original.written
        for (resource, key), original in stored.items()
        if original.written is not None
    }


def _originals(stored: Mapping[tuple[ConfigResource, str], OriginalValue]) -> ThrottleOriginals:
    topics: dict[str, dict[str, str | None]] = {}
    brokers: dict[int, dict[str, str | None]] = {}
    for (resource, key), original in stored.items():
        if resource.type == "topic" and key in TOPIC_KEYS:
            topics.setdefault(resource.name, {})[key] = original.value
        elif resource.type == "broker" and key in BROKER_KEYS:
            brokers.setdefault(int(resource.name), {})[key] = original.value
    return ThrottleOriginals(topics=topics, brokers=brokers)


class Controller:
    """Implements ControllerService; `cycle()` is driven by the daemon's FixedRateLoop.

    `guard` is awaited before every write to the cluster; with HA it raises unless this daemon still
    holds leadership, so a paused or partitioned old leader can never apply a step or a throttle.
    """

    def __init__(
        self,
        cluster: ClusterAdmin,
        store: AsyncStore,
        limits: Limits,
        *,
        metrics: DaemonMetrics | None = None,
        clock: Callable[[], float] = time.time,
        allow_rf_change: bool = False,
        events: EventSink | None = None,
        wake: Callable[[], None] | None = None,
        auto_throttle: AutoThrottle | None = None,
        file_settings: FileSettings | None = None,
    ) -> None:
        self.cluster = cluster
        self.store = store
        self.file_settings = file_settings or FileSettings(
            limits,
            auto_throttle,
            auto_throttle.step if auto_throttle else DEFAULT_AUTO_STEP,
            auto_throttle.ceiling if auto_throttle else DEFAULT_AUTO_MAX,
        )
        self.limits_in_force = limits
        self.auto_throttle = auto_throttle
        self.runtime: dict[str, Any] = {}
        """The runtime changes in force (daemon/settings.py), by key."""
        self._settings_version = 0
        self._settings_document: dict[str, Any] = {}
        self.metrics = metrics or DaemonMetrics()
        self.clock = clock
        self.allow_rf_change_default = allow_rf_change
        self.events = events
        self.wake: Callable[[], None] = wake or (lambda: None)
        self.guard: Callable[[], Awaitable[None]] = _no_guard
        self.effect_hook: EffectHook | None = None
        self.is_leader = True
        self.leader_address: str | None = None
        self.run: RunState | None = None
        self._submitted: tuple[str | None, ReassignmentPlan | None] = (None, None)
        self.cluster_state = Reachability(reachable=True, since=None)
        self._hygiene_done = False
        self._lock = asyncio.Lock()
        self._contact_ok = False
        self.last_status = "starting"
        self.records: dict[str, PlanSummary] = {}
        self.metrics.set_cluster_reachable(True)

    @property
    def settings(self) -> Settings:
        return Settings(self.limits_in_force, self.auto_throttle)

    @property
    def throttle_book(self) -> ThrottleBook:
        return self.run.throttles if self.run is not None else ThrottleBook()

    def _executor(self) -> Executor:
        return Executor(
            self.cluster, self.store, self.metrics, self._guarded, self._emit, self.clock, self.effect_hook
        )

    async def _guarded(self) -> None:
        await self.guard()  # looked up at call time: the HA coordinator installs its guard later

    async def start(self) -> None:
        """Load what the status views need before the API serves its first request, and the runtime
        settings (a restart or a failover keeps what operators changed)."""
        await self._refresh_records()
        await self._load_settings()

    async def _load_settings(self) -> None:
        record = await self.store.settings()
        outcome = runtime_settings.reconcile(record.document, self.file_settings)
        for key, why in sorted(outcome.kept.items()):
            log.info("runtime setting kept", key=key, why=why)
        for key, why in sorted(outcome.dropped.items()):
            log.warning("runtime setting dropped", key=key, why=why)
        if outcome.changed and self.is_leader:
            await self.store.commit(WriteBatch().put_settings(record.version, outcome.document))
            record = await self.store.settings()
        self._apply_settings(record.version, dict(record.document))

    def _apply_settings(self, version: int, document: dict[str, Any]) -> None:
        try:
            now_in_force = runtime_settings.effective(document, self.file_settings)
        except InvalidInputError as exc:  # a record no longer valid with this release: the file's values
            log.error(
                "runtime settings refused; the config file's values apply",
                problems=[str(p) for p in exc.problems],
            )
            now_in_force = runtime_settings.effective({}, self.file_settings)
        self._settings_version, self._settings_document = version, document
        self.limits_in_force = now_in_force.limits
        self.auto_throttle = now_in_force.auto_throttle
        self.runtime = dict(now_in_force.overrides)

    async def config_reloaded(self, file_settings: FileSettings) -> None:
        """SIGHUP: the new config file's values, with the runtime changes that still stand over them."""
        async with self._lock:
            before = self.limits_in_force.to_mapping()
            self.file_settings = file_settings
            await self._load_settings()
            after = self.limits_in_force.to_mapping()
            diff = {k: [before.get(k), v] for k, v in after.items() if before.get(k) != v}
            log.info("settings after reload", changed=diff, runtime=sorted(self.runtime))
        self.wake()

    async def leadership_changed(self, is_leader: bool, leader_address: str | None = None) -> None:
        """HA: a new leader rebuilds everything from the store and the cluster; a standby only reads.

        Losing leadership shows at once, even while a cycle holds the lock (it may be blocked on the very
        store that just became unreachable; the guard already refuses its writes).
        """
        if not is_leader:
            self.is_leader = False
            self.leader_address = leader_address
            self.metrics.set_leader(False)
        async with self._lock:
            self.is_leader = is_leader
            self.leader_address = None if is_leader else leader_address
            self.run = None
            self._hygiene_done = False
            self.metrics.set_leader(is_leader)
            await self._refresh_records()
            await self._load_settings()
        self._emit("leadership.changed", is_leader=is_leader, leader=leader_address)
        if is_leader:
            self.wake()

    # ------------------------------------------------------------------------------------------------
    # the cycle

    async def cycle(self) -> str:
        if not self.is_leader:
            self.last_status = "standby"
            return self.last_status
        async with self._lock:
            started = time.monotonic()
            ok = False
            try:
                status = await self._cycle()
                ok = True
            finally:
                self.metrics.observe_cycle(time.monotonic() - started, ok)
            self.last_status = status
            return status

    async def _cycle(self) -> str:
        run = await self._active_run()
        if run is None:
            await self._idle()
            await self._publish()
            return "idle"
        request = read_request(run, self.settings)
        try:
            snapshot = await self.cluster.snapshot(
                list(request.partitions),
                with_sizes=request.with_sizes,
                broker_config_keys=request.broker_config_keys,
                topic_config_keys=request.topic_config_keys,
            )
            min_insync = await self._effective_min_insync(request.min_insync_topics)
        except ClusterCallError as exc:
            await self._drive(step(run, Unreachable(self.clock(), str(exc)), self.settings))
            self._reachability(self.run.cluster if self.run else Reachability(False, self.clock()))
            await self._publish()
            return f"{run.plan_id} {run.phase.value}: cluster unreachable ({exc.error.name})"
        self._contact_ok = True
        observed = Observed(self.clock(), snapshot, request, min_insync)
        await self._drive(step(run, observed, self.settings))
        current = self.run
        if current is not None:
            self._reachability(current.cluster)
        await self._publish()
        if current is None:
            return f"{run.plan_id}: rebuilding from the store"
        if current.phase.ended:
            await self._refresh_records()
        return f"{current.plan_id} {current.phase.value}: {_summary_line(current)}"

    async def _drive(self, transition: Transition) -> None:
        """Carry out a transition's effects, then feed Kafka's answers back, until nothing is awaited."""
        executor = self._executor()
        while True:
            try:
                answered = await executor.execute(transition.run.plan_id, transition.effects)
            except Exception:
                self.run = None  # rebuilt from the store and the cluster next cycle, as after a crash
                raise
            # Only once its effects are carried out (its journal committed): status read meanwhile shows
            # the state before, which is what the store holds; a plan is never "completed" before it is.
            self.run = transition.run
            if not transition.awaits_answer:
                return
            transition = step(transition.run, answered, self.settings)

    async def _active_run(self) -> RunState | None:
        """The running plan, else the next queued one started. Idle cycles read nothing from the store: the
        records are refreshed by every change this daemon makes (only the leader makes any)."""
        if self.run is not None and not self.run.ended:
            return self.run
        active = [r for r in self.records.values() if r.status in ACTIVE_STATUSES]
        queued = [r for r in self.records.values() if r.status is PlanStatus.QUEUED]
        if not active and not queued:
            self.run = None
            return None
        record = await self.store.active_plan()
        if record is None:
            queued = await self.store.list_plans([PlanStatus.QUEUED])
            if not queued:
                await self._refresh_records()
                self.run = None
                return None
            first = min(queued, key=lambda r: (r.submitted_at, r.id))
            await self.store.commit(WriteBatch().set_status(first.id, PlanStatus.RUNNING))
            record = await self._reload_record(first.id)
            self._emit("plan.started", plan_id=record.id)
            await self._refresh_records()
        self.run = await self._load(record)
        self._hygiene_done = True
        return self.run

    async def _load(self, record: PlanRecord) -> RunState:
        # the plan this daemon stored last is the one it parsed then: parsing a stored plan of 100,000
        # partitions again (every entry checked, as any input is) took 1.8 s of its first cycle
        submitted_id, plan = self._submitted
        self._submitted = (None, None)
        if plan is None or submitted_id != record.id:
            plan = ReassignmentPlan.from_dict(dict(record.plan))
        rows = await self.store.partition_states(record.id)
        stored = await self.store.original_configs()
        return new_run(
            record.id,
            plan,
            Phase(record.status.value),
            rows=rows,
            summary=record.summary,
            originals=_originals(stored),
            written=_written(stored),
        )

    async def _effective_min_insync(self, topics: tuple[str, ...]) -> dict[str, str]:
        if not topics:
            return {}
        described = await self.cluster.describe_topic_configs(sorted(topics), ["min.insync.replicas"])
        effective = {}
        for topic, description in described.items():
            value = description.values.get("min.insync.replicas")
            if value is not None and value.value is not None:
                effective[topic] = value.value
        return effective

    async def _idle(self) -> None:
        """No plan active: watch the cluster's reachability, and at start-up restore throttles we left
        behind (a crash after a plan's end)."""
        try:
            await self.cluster.cluster_id()
        except ClusterCallError as exc:
            if self.cluster_state.reachable:
                log.error("the cluster cannot be reached", error=str(exc))
                self._emit("cluster.unreachable", error=str(exc))
            since = self.clock() if self.cluster_state.reachable else self.cluster_state.since
            self._reachability(Reachability(False, since, error=str(exc)))
            return
        if not self.cluster_state.reachable:
            log.info("the cluster is reachable again")
            self._emit("cluster.reachable")
        since = self.cluster_state.since if self.cluster_state.reachable else None
        self._reachability(Reachability(True, since if since is not None else self.clock()))
        self._contact_ok = True
        if self._hygiene_done:
            return
        stored = await self.store.original_configs()
        if not stored:
            self._hygiene_done = True
            return
        owned: dict[str, set[int]] = {}
        for summary in await self.store.list_plans():
            record = None if summary.status is PlanStatus.QUEUED else await self.store.get_plan(summary.id)
            if record is not None:
                for entry in record.plan.get("partitions", []):
                    owned.setdefault(str(entry["topic"]), set()).add(int(entry["partition"]))
        owned_frozen = {t: frozenset(p) for t, p in owned.items()}
        originals = _originals(stored)
        book = ThrottleBook(
            ThrottleOriginals(originals.topics, originals.brokers, owned_frozen),
            MappingProxyType(_written(stored)),
        )
        topics = sorted(book.originals.topics)
        partitions, _ = await self.cluster.topic_partitions(topics)
        snapshot = await self.cluster.snapshot(
            partitions, broker_config_keys=BROKER_KEYS, topic_config_keys=TOPIC_KEYS
        )
        sync = sync_throttles(book, snapshot, (), self.limits_in_force, owned_frozen)
        batch = WriteBatch()
        for kind, name, key in sync.forget:
            batch.forget_original(ConfigResource(kind, name), key)
        for kind, name, key, value in sync.record:
            batch.record_original(ConfigResource(kind, name), key, value)
        for kind, name, key, values in sync.intents:
            batch.note_written(ConfigResource(kind, name), key, values)
        if batch:
            await self.store.commit(batch)
        failed = await write_throttles(self.cluster, sync.writes, self._guarded)
        result = written(sync, failed)
        journal = WriteBatch()
        for write in result.applied:
            journal.append(
                Event(
                    EventKind.THROTTLE_RESTORED,
                    data={
                        "resource": write.resource,
                        "name": write.name,
                        "config": write.key,
                        "op": write.op,
                    },
                )
            )
        for kind, name, key in result.forget:
            journal.forget_original(ConfigResource(kind, name), key)
        if journal:
            await self.store.commit(journal)
        log.info(
            "start-up reconcile of leftover throttles", writes=len(result.applied), restored=result.restored
        )
        self._hygiene_done = result.restored

    def _reachability(self, cluster: Reachability) -> None:
        self.cluster_state = cluster
        self.metrics.set_cluster_reachable(cluster.reachable)

    # ------------------------------------------------------------------------------------------------
    # helpers

    async def _reload_record(self, plan_id: str) -> PlanRecord:
        record = await self.store.get_plan(plan_id)
        assert record is not None
        return record

    def _emit(self, kind: str, **data: Any) -> None:
        if self.events is None:
            return
        self.events({"event": kind, "at": self.clock(), **emitted(data)})

    async def _refresh_records(self) -> list[PlanSummary]:
        """The plan summaries the synchronous status views read; refreshed on changes."""
        plans = await self.store.list_plans()
        self.records = {r.id: r for r in plans}
        return plans

    async def _publish(self) -> None:
        """The metrics of this cycle; with no plan running, every per-plan gauge is 0 or absent."""
        counts: dict[str, int] = {}
        for record in self.records.values():
            status = record.status.value
            if self.run is not None and record.id == self.run.plan_id:
                status = self.run.phase.value
            counts[status] = counts.get(status, 0) + 1
        self.metrics.set_plan_counts(counts)
        run = self.run
        if run is None or run.execution is None or run.ended:
            self.metrics.set_progress(None, 0, 0, 0, None)
            self.metrics.set_inflight({}, {}, 0)
            self.metrics.set_stalled(0)
            self.metrics.set_under_min_isr(0)
            self.metrics.set_partition_counts({})
            self.metrics.set_throttle_rates({}, {})
            self.metrics.set_foreign_reassignments(0)
            return
        load = run.execution.load
        self.metrics.set_inflight(dict(load.incoming), dict(load.outgoing), load.leader_moves)
        self.metrics.set_partition_counts({s.value: n for s, n in run.execution.counts.items()})
        t = run.tracking
        self.metrics.set_progress(run.plan_id, t.total_bytes, t.remaining_bytes, t.moved_bytes, t.eta)
        self.metrics.set_stalled(len(t.stalled))
        self.metrics.set_under_min_isr(len(run.under_min_isr))
        self.metrics.set_foreign_reassignments(run.execution.counts[Status.EXTERNAL])
        incoming, outgoing = run.throttles.applied_rates()
        self.metrics.set_throttle_rates(incoming, outgoing)
        if run.last_view is not None:
            self.metrics.auto_throttle_brokers(run.last_view.brokers)

    # ------------------------------------------------------------------------------------------------
    # ControllerService: see reassignd/daemon/service.py (status views live in daemon/status.py)

    def _require_leader(self) -> None:
        if not self.is_leader:
            raise ServiceError(
                "not_leader", "this daemon is a standby", details={"leader": self.leader_address}
            )

    async def submit_plan(
        self,
        plan: ReassignmentPlan,
        *,
        dry_run: bool = False,
        allow_rf_change: bool = False,
        name: str | None = None,
    ) -> JSON:
        if not dry_run:
            self._require_leader()
        try:
            snapshot = await self.cluster.snapshot(
                list(plan.targets), with_sizes=True, topic_config_keys=("min.insync.replicas",)
            )
            ongoing = await self.cluster.list_partition_reassignments(list(plan.targets))
            snapshot = await _named_dirs(self.cluster, snapshot, plan)
        except ClusterCallError as exc:
            raise ServiceError(
                "unavailable", f"cannot read the cluster to validate the plan: {exc}"
            ) from None
        active = self.run if self.run is not None and not self.run.ended else None
        ours = set(active.plan.targets) if active else set()
        unfinished = [r for r in self.records.values() if not r.status.terminal]
        bodies = [b for b in [await self.store.get_plan(r.id) for r in unfinished] if b is not None]
        busy = {
            **unfinished_partitions(bodies),
            **dict.fromkeys(ours, active.plan_id if active else ""),
        }
        problems = validate_plan(
            plan,
            snapshot,
            ongoing=set(ongoing),
            ours=ours,
            busy=busy,
            allow_rf_change=allow_rf_change or self.allow_rf_change_default,
        )
        if problems:
            raise plan_rejection(problems)
        moving = {tp: t for tp, t in plan.targets.items() if snapshot.partitions[tp].target_replicas != t}
        # pure and CPU-heavy for large plans: off the event loop, so the API and health checks stay live
        rehearsal = await asyncio.to_thread(step_preview, snapshot, plan, self.limits_in_force)
        summary: JSON = {
            "plan_id": None,
            "state": "dry_run" if dry_run else "queued",
            "partitions": len(plan),
            "replicas_to_move": sum(
                len(set(t) - set(snapshot.partitions[tp].replicas)) for tp, t in moving.items()
            ),
            "bytes_to_move": plan_bytes(snapshot, plan).to_move,
            "steps": rehearsal,
            # the assignment read just now, for rollback (Kafka's tool prints it on --execute): exact,
            # since a partition that is reassigning or taken by another plan was refused above
            "rollback": assignment_document({tp: snapshot.partitions[tp].replicas for tp in plan.targets}),
        }
        if dry_run:
            return summary
        plan_id = f"plan-{time.strftime('%Y%m%d-%H%M%S', time.gmtime(self.clock()))}-{uuid.uuid4().hex[:6]}"
        options = {"allow_rf_change": allow_rf_change, **({"name": name} if name else {})}
        batch = WriteBatch().submit_plan(plan_id, plan.to_dict(), options)
        await self.store.commit(batch)  # the store journals plan.submitted with it
        self._submitted = (plan_id, plan)
        self._emit("plan.submitted", plan_id=plan_id, partitions=len(plan))
        await self._refresh_records()
        self.wake()
        return {**summary, "plan_id": plan_id, **({"name": name} if name else {})}

    def list_plans(self) -> list[JSON]:
        return list_plans_view(self)

    async def journal(self, query: Mapping[str, Any]) -> JSON:
        """GET /v1/journal (daemon/journal.py): standbys read the same store."""
        return await journal_page(self.store, **query)

    def plan_status(self, plan_id: str | None = None) -> JSON:
        return plan_status_view(self, plan_id)

    async def _lifecycle(self, plan_id: str | None, verb: str) -> JSON:
        self._require_leader()
        async with self._lock:
            record = await (self.store.get_plan(plan_id) if plan_id else self.store.active_plan())
            if record is None and plan_id is None and verb == "cancel":
                queued = await self.store.list_plans([PlanStatus.QUEUED])
                first = min(queued, key=lambda r: (r.submitted_at, r.id)) if queued else None
                record = await self.store.get_plan(first.id) if first is not None else None
            if record is None:
                raise ServiceError(
                    "not_found" if plan_id else "conflict",
                    f"no plan {plan_id}" if plan_id else f"no active plan to {verb}",
                )
            if record.status is PlanStatus.QUEUED and verb == "cancel":
                await self.store.commit(WriteBatch().set_status(record.id, PlanStatus.CANCELLED))
                self._emit("plan.cancelled", plan_id=record.id)
            else:
                if record.status.terminal or record.status is PlanStatus.QUEUED:
                    raise ServiceError(
                        "conflict", f"plan {record.id} is {record.status.value}: cannot {verb}"
                    )
                run = self.run if self.run is not None and self.run.plan_id == record.id else None
                if run is None:
                    run = self.run = await self._load(record)
                try:
                    transition = step(run, Command(self.clock(), verb), self.settings)
                except CommandRefused as exc:
                    raise ServiceError("conflict", str(exc)) from None
                await self._drive(transition)
            await self._refresh_records()
        self.wake()
        return self.plan_status(record.id)

    async def pause(self, plan_id: str | None = None) -> JSON:
        return await self._lifecycle(plan_id, "pause")

    async def resume(self, plan_id: str | None = None) -> JSON:
        return await self._lifecycle(plan_id, "resume")

    async def cancel(self, plan_id: str | None = None) -> JSON:
        return await self._lifecycle(plan_id, "cancel")

    def limits(self) -> JSON:
        auto = self.auto_throttle
        return {
            **self.limits_in_force.to_mapping(),
            runtime_settings.AUTO_ENABLE: auto is not None,
            runtime_settings.AUTO_STEP: auto.step if auto else self.file_settings.auto_step,
            runtime_settings.AUTO_MAX: auto.ceiling if auto else self.file_settings.auto_max,
        }

    async def set_limits(self, changes: Mapping[str, Any]) -> JSON:
        await self._change_limits(changes, None, "limits")
        return self.limits()

    def throttles(self) -> JSON:
        return throttles_view(self)

    async def set_throttles(self, changes: Mapping[str, Any]) -> JSON:
        """New rates reach in-flight moves in the next cycle, which this wakes at once."""
        await self._change_limits(changes, set(RATE_KEYS), "throttles")
        return throttles_view(self)

    async def reset_limits(self, keys: list[str] | None = None) -> JSON:
        """Runtime changes of `keys` (all when None) undone: the config file's values apply again."""
        self._require_leader()

        def reset(current: Mapping[str, Any]) -> dict[str, Any]:
            try:
                return runtime_settings.reset(current, keys)
            except InvalidInputError as exc:
                raise ServiceError("invalid_request", "limits unchanged", exc.problems) from None

        await self._commit_settings(reset, {"reset": sorted(keys) if keys is not None else "all"})
        log.info("runtime settings reset", keys=keys or "all")
        self.wake()
        return self.limits()

    async def _change_limits(self, changes: Mapping[str, Any], known: set[str] | None, where: str) -> None:
        """All or nothing (every value checked with everything else in force), committed to the store
        before it applies, and applied between two cycles (the cycle holds the same lock), so no cycle
        sees two limit sets and a restart or a failover keeps it (daemon/settings.py)."""
        self._require_leader()
        allowed = known if known is not None else set(runtime_settings.RUNTIME_KEYS)
        problems = [Problem(where, k[:80], unknown_key(k, allowed)) for k in changes if k not in allowed]
        if not changes:
            problems.append(Problem(where, "(body)", "no changes given"))
        known_changes = {k: v for k, v in changes.items() if k in allowed}

        def checked(current: Mapping[str, Any]) -> dict[str, Any]:
            nonlocal problems
            document: dict[str, Any] = {}
            try:
                document, _ = runtime_settings.changed(
                    current, self.file_settings, known_changes, self.clock()
                )
            except InvalidInputError as exc:
                problems = problems + [Problem(where, p.field, p.message) for p in exc.problems]
            if problems:  # every problem at once, and nothing applied
                raise ServiceError(
                    "invalid_request", f"{where} unchanged: {len(problems)} problem(s)", tuple(problems)
                )
            return document

        checked(self._settings_document)  # bad input is refused before the store is touched
        await self._commit_settings(checked, dict(changes))  # and checked again with what is stored then
        log.info("runtime settings changed", changes=dict(changes))
        self.wake()

    async def _commit_settings(
        self, document_of: Callable[[Mapping[str, Any]], dict[str, Any]], event: dict[str, Any]
    ) -> None:
        """The settings record rewritten from what is stored now (compare-and-set: another daemon may
        write it between our read and our commit), journaled with `event`, applied once committed."""
        async with self._lock:
            for _ in range(3):
                record = await self.store.settings()
                document = document_of(record.document)
                plan_id = self.run.plan_id if self.run else None
                batch = WriteBatch().put_settings(record.version, document)
                batch.append(Event(EventKind.LIMITS_CHANGED, plan_id, None, None, event))
                try:
                    await self.store.commit(batch)
                except SettingsConflict:
                    continue
                self._apply_settings(record.version + 1, document)
                return
        raise ServiceError("unavailable", "the settings record kept changing; try again")

    async def cluster_reassignments(self) -> list[JSON]:
        return await reassignments.listed(self)

    async def cancel_foreign(self, request: Mapping[str, Any]) -> JSON:
        return await reassignments.cancel_foreign(self, request)

    async def place(self, request: Mapping[str, Any]) -> JSON:
        from reassignd.placement import create_replica_placement

        try:
            snapshot = await self.cluster.snapshot([])
        except ClusterCallError as exc:
            raise ServiceError("unavailable", f"cannot read the cluster: {exc}") from None
        try:
            return create_replica_placement(snapshot, request)
        except InvalidInputError as exc:
            raise ServiceError("invalid_request", f"invalid {exc.what}", exc.problems) from None

    def health(self) -> JSON:
        return {"status": "ok", "last_cycle": self.last_status}

    def readiness(self) -> JSON:
        if not self.is_leader:
            return {"ready": True, "reason": "standby", "role": "standby", "leader": self.leader_address}
        if not self.cluster_state.reachable:
            return {
                "ready": False,
                "reason": "cluster unreachable",
                "role": "leader",
                "leader": None,
                "cluster": cluster_view(self.cluster_state.to_json()),
            }
        if not self._contact_ok and self.last_status in ("starting",):
            return {"ready": False, "reason": "no cluster contact yet", "role": "leader", "leader": None}
        return {"ready": True, "reason": "ok", "role": "leader", "leader": None}


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


def _summary_line(run: RunState) -> str:
    execution = run.execution
    if execution is None:
        return "waiting for the first read"
    counts = execution.counts
    t = run.tracking
    moving = counts[Status.IN_FLIGHT] + counts[Status.STARTING]
    line = (
        f"in flight {moving}, pending {counts[Status.PENDING]}, blocked {counts[Status.BLOCKED]}, "
        f"external {counts[Status.EXTERNAL]}, done {counts[Status.DONE]}/{len(execution.plan)}"
    )
    if counts[Status.DROPPED]:
        line += f", dropped {counts[Status.DROPPED]} (topic deleted)"
    dirs = run.log_dirs
    if dirs.wanted:
        line += f"; log dirs: in flight {len(dirs.running)}, waiting {dirs.waiting}, done {len(dirs.done)}"
    if run.goals is not None:
        line = f"cancel: {line}"
    return f"{line}; {t.percent:.1f}%"
