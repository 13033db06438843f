"""The controller: one cycle reads the cluster, asks the engine, applies the actions, records them.

Order within a cycle, chosen so a kill -9 at any point loses nothing and repeats nothing:
  1. snapshot of the plan's partitions (sizes, throttle configs) — reads only;
  2. `decide`; the new execution state (steps about to start marked in flight) is committed first, so a
     step sent to Kafka is always known to the store;
  3. throttles for everything in flight (originals recorded before the first write);
  4. AlterPartitionReassignments for the new steps; only then `step.started` is journaled (once per step:
     the journal's idempotency key). After a crash between 2 and 4 the engine sees the step never began
     and starts it again, journaling it once; between 4 and the journal entry, the restart finds Kafka
     moving the partition to the recorded target and journals the start as recovered;
  5. preferred-leader elections; the plan completes once nothing is in flight and throttles are restored.
"""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reassignd.cluster.api import ClusterAdmin
from reassignd.cluster.errors import ClusterCallError
from reassignd.daemon import failpoints
from reassignd.daemon.metrics import DaemonMetrics
from reassignd.daemon.progress import ProgressTracker, ProgressView
from reassignd.daemon.service import JSON, ServiceError
from reassignd.daemon.status import RATE_KEYS, list_plans_view, plan_status_view, throttles_view
from reassignd.daemon.throttles import ThrottleKeeper
from reassignd.daemon.validation import plan_rejection, unfinished_partitions, validate_plan
from reassignd.engine import Decision, ExecutionState, Limits, Status, changed_partitions, decide
from reassignd.engine.decide import TOPIC_DELETED
from reassignd.engine.dryrun import dry_run
from reassignd.engine.progress import plan_bytes
from reassignd.engine.state import STATE_VERSION
from reassignd.engine.throttle import BROKER_KEYS, FOLLOWER_RATE, LEADER_RATE, TOPIC_KEYS, moves_in_flight
from reassignd.logs import get_logger
from reassignd.model import ClusterSnapshot, InvalidInputError, Problem, ReassignmentPlan, TopicPartition
from reassignd.store.aio import AsyncStore
from reassignd.store.base import (
    Event,
    EventKind,
    PlanRecord,
    PlanStatus,
    StepReplayError,
    WriteBatch,
)
from reassignd.store.execution import join_state_document, stage_state_changes

log = get_logger("reassignd.controller")

SNAPSHOT_TOPIC_KEYS = (*TOPIC_KEYS, "min.insync.replicas")
SIZE_REFRESH_CYCLES = 30
_LIFECYCLE_EVENTS = {
    PlanStatus.PAUSED: "plan.paused",
    PlanStatus.RUNNING: "plan.resumed",
    PlanStatus.CANCELLING: "plan.cancelling",
    PlanStatus.CANCELLED: "plan.cancelled",
}
EventSink = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class AutoThrottle:
    """Raise a stalled move's rates in steps of `step` up to `ceiling` (bytes/s), once per stall window."""

    step: int
    ceiling: int


@dataclass
class PlanRun:
    """The running plan in memory; everything here can be rebuilt from the store and the cluster."""

    record: PlanRecord
    plan: ReassignmentPlan
    state: ExecutionState | None = None
    rows: dict[TopicPartition, Any] = field(default_factory=dict)
    last_snapshot: ClusterSnapshot | None = None
    tracker: ProgressTracker = field(default_factory=ProgressTracker)
    step_started_at: dict[TopicPartition, float] = field(default_factory=dict)
    view: ProgressView = field(default_factory=ProgressView)
    sizes: dict[TopicPartition, tuple[int, Mapping[int, int]]] = field(default_factory=dict)
    fresh: set[TopicPartition] = field(default_factory=set)
    cycles: int = 0
    min_insync: dict[str, str] = field(default_factory=dict)
    boosts: dict[int, dict[str, int]] = field(default_factory=dict)
    boosted_at: dict[int, float] = field(default_factory=dict)
    under_min_isr: set[TopicPartition] = field(default_factory=set)
    deleted_topics: frozenset[str] = frozenset()
    """Topics of the plan Kafka said were deleted: their partitions are dropped and no longer polled."""

    @property
    def plan_id(self) -> str:
        return self.record.id

    @functools.cached_property
    def owned_partitions(self) -> dict[str, frozenset[int]]:
        """Per topic, the plan's partitions: throttle entries there may be ours (the plan never changes)."""
        owned: dict[str, set[int]] = {}
        for tp in self.plan.targets:
            owned.setdefault(tp.topic, set()).add(tp.partition)
        return {t: frozenset(p) for t, p in owned.items()}


async def _no_guard() -> None:
    return None


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
    ) -> None:
        self.cluster = cluster
        self.store = store
        self.limits_in_force = limits
        self.metrics = metrics or DaemonMetrics()
        self.clock = clock
        self.allow_rf_change_default = allow_rf_change
        self.auto_throttle = auto_throttle
        self.events = events
        self.wake: Callable[[], None] = wake or (lambda: None)
        self.guard: Callable[[], Awaitable[None]] = _no_guard
        self.is_leader = True
        self.leader_address: str | None = None
        self.run: PlanRun | None = None
        self.keeper = ThrottleKeeper(
            cluster, store, on_write=self.metrics.throttle_config_written, guard=self._guarded
        )
        self._hygiene_done = False
        self._lock = asyncio.Lock()
        self._contact_ok = False
        self.last_status = "starting"
        self.records: dict[str, PlanRecord] = {}
        self.final_progress: dict[str, JSON] = {}  # progress of plans that ended in this process

    async def _guarded(self) -> None:
        await self.guard()  # looked up at call time: the HA coordinator installs its guard later

    async def start(self) -> None:
        """Load what the status views need before the API serves its first request."""
        await self._refresh_records()

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
            self.keeper.expected = {}
            self.metrics.set_leader(is_leader)
            await self._refresh_records()
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
            await self._idle_hygiene()
            await self._publish_counts()
            return "idle"
        full, snapshot = await self._plan_snapshot(run)
        self._contact_ok = True
        if run.state is None:
            await self._restore(run, full or self._with_cached_sizes(run, snapshot))
        assert run.state is not None
        status = run.record.status
        if status is PlanStatus.CANCELLING:
            await self._cancel_in_flight(run)
        limits = self.limits_in_force
        if status is not PlanStatus.RUNNING:
            limits = replace(limits, parallel_partition_count=0)  # paused / cancelling: nothing new starts
        if tuple(limits.ordering) != run.state.ordering:
            run.state = run.state.reordered(
                tuple(limits.ordering), full or self._with_cached_sizes(run, snapshot)
            )
        changed = None if run.last_snapshot is None else changed_partitions(run.last_snapshot, snapshot)
        decision = decide(snapshot, run.plan, run.state, limits, changed)
        await self._apply(run, snapshot, decision, limits, changed)
        run.last_snapshot = snapshot
        return await self._finish_cycle(run, snapshot, decision, changed)

    async def _active_run(self) -> PlanRun | None:
        if self.run is not None and not self.run.record.status.terminal:
            return self.run
        record = await self.store.active_plan()
        if record is None:
            queued = await self.store.list_plans([PlanStatus.QUEUED])
            if not queued:
                self.run = None
                return None
            record = min(queued, key=lambda r: (r.submitted_at, r.id))
            await self._set_status(record.id, PlanStatus.RUNNING)
            record = await self._reload_record(record.id)
            self._emit("plan.started", plan_id=record.id)
        plan = ReassignmentPlan.from_dict(dict(record.plan))
        self.run = PlanRun(record=record, plan=plan)
        self.run.tracker.window_seconds = self.limits_in_force.stall_window_seconds
        self.keeper.plan_id = record.id
        await self.keeper.load(self.run.owned_partitions)
        self._hygiene_done = True
        return self.run

    async def _plan_snapshot(self, run: PlanRun) -> tuple[ClusterSnapshot | None, ClusterSnapshot]:
        """(the full snapshot when all sizes were read this cycle, else None; the engine's view).

        Log-dir sizes cost one DescribeLogDirs per broker, and most of a plan sits still between its steps:
        sizes of all partitions are read every SIZE_REFRESH_CYCLES cycles into a cache (for progress and
        ordering), in-flight ones every cycle, from their leader and adding replicas only. The engine's
        view carries sizes only where bytes move, the same every cycle, so unchanged partitions compare
        equal and cost nothing downstream. min.insync.replicas is the topics' effective value (static
        broker configs included), which the dynamic configs alone would miss.
        """
        moving = {tp: rec.adding for tp, rec in run.state.in_flight()} if run.state is not None else {}
        in_flight = set(moving)
        refresh = not run.sizes or run.cycles % SIZE_REFRESH_CYCLES == 0
        run.cycles += 1
        if not run.min_insync:
            run.min_insync = await self._effective_min_insync(run.plan.topics())
        polled = list(run.plan.targets)
        if run.deleted_topics:
            polled = [tp for tp in polled if tp.topic not in run.deleted_topics]
        snapshot = await self.cluster.snapshot(
            polled,
            with_sizes=True if refresh else moving,  # a moving partition: its leader and adding replicas
            broker_config_keys=BROKER_KEYS,
            topic_config_keys=SNAPSHOT_TOPIC_KEYS,
        )
        topics = {
            name: replace(info, configs={**info.configs, "min.insync.replicas": run.min_insync[name]})
            for name, info in snapshot.topics.items()
            if name in run.min_insync and "min.insync.replicas" not in info.configs
        }
        if topics:
            snapshot = replace(snapshot, topics={**snapshot.topics, **topics})
        if snapshot.deleted_topics - run.deleted_topics:
            run.deleted_topics |= snapshot.deleted_topics
            log.warning(
                "topics of the plan were deleted", plan=run.plan_id, topics=sorted(snapshot.deleted_topics)
            )
        fresh = set(run.plan.targets) if refresh else in_flight
        run.fresh = fresh
        for tp in fresh:
            p = snapshot.partitions.get(tp)
            if p is not None:
                run.sizes[tp] = (p.size_bytes, p.replica_sizes)
        if not refresh:
            return None, snapshot
        stripped = [
            replace(p, size_bytes=0, replica_sizes={})
            for tp, p in snapshot.partitions.items()
            if tp not in in_flight and (p.size_bytes or p.replica_sizes)
        ]
        return snapshot, snapshot.with_partitions(stripped) if stripped else snapshot

    @staticmethod
    def _with_cached_sizes(run: PlanRun, snapshot: ClusterSnapshot) -> ClusterSnapshot:
        patched = [
            replace(p, size_bytes=run.sizes[tp][0], replica_sizes=run.sizes[tp][1])
            for tp, p in snapshot.partitions.items()
            if tp in run.sizes and tp not in run.fresh
        ]
        return snapshot.with_partitions(patched)

    async def _effective_min_insync(self, topics: Collection[str]) -> dict[str, str]:
        described = await self.cluster.describe_topic_configs(sorted(topics), ["min.insync.replicas"])
        effective = {}
        for topic, description in described.items():
            value = description.values.get("min.insync.replicas")
            if value is not None and value.value is not None:
                effective[topic] = value.value
        return effective

    async def _restore(self, run: PlanRun, snapshot: ClusterSnapshot) -> None:
        """Rebuild the execution state after a start or restart: the store's rows, checked by Kafka's view."""
        rows = await self.store.partition_states(run.plan_id)
        if rows:
            header = {"version": STATE_VERSION, "ordering": list(self.limits_in_force.ordering)}
            run.state = ExecutionState.from_json_dict(join_state_document(header, rows), run.plan, snapshot)
            run.rows = dict(rows)
            await self._journal_recovered_starts(run, snapshot)
            log.info("plan resumed from the store", plan=run.plan_id, partitions=len(rows))
        else:
            run.state = ExecutionState.initial(run.plan, snapshot, tuple(self.limits_in_force.ordering))

    async def _journal_recovered_starts(self, run: PlanRun, snapshot: ClusterSnapshot) -> None:
        assert run.state is not None
        batch = WriteBatch()
        for tp, rec in run.state.in_flight():
            p = snapshot.partitions.get(tp)
            reached = p is not None and p.target_replicas == rec.target
            if not reached:
                continue
            entry = await self.store.step_entry(EventKind.STEP_STARTED, run.plan_id, tp, rec.step)
            if entry is None:
                batch.append(
                    Event(
                        EventKind.STEP_STARTED,
                        run.plan_id,
                        tp,
                        rec.step,
                        {"target": list(rec.target), "recovered": True},
                    )
                )
        if batch:
            await self.store.commit(batch)

    async def _apply(
        self,
        run: PlanRun,
        snapshot: ClusterSnapshot,
        decision: Decision,
        limits: Limits,
        changed: Collection[TopicPartition] | None,
    ) -> None:
        assert run.state is not None
        now = self.clock()
        previous = run.state
        batch = WriteBatch()
        if changed is None or not run.rows:
            run.rows = stage_state_changes(batch, run.plan_id, decision.state.to_json_dict(), run.rows)
        else:
            # A record changes only where decide reconciled (changed) or acted; rows elsewhere stay.
            touched = set(changed).union(
                (s.tp for s in decision.start),
                decision.completed,
                decision.aborted,
                decision.external,
                decision.dropped,
            )
            for tp in touched:
                if tp in run.plan.targets:
                    row = decision.state.entry(tp)
                    if run.rows.get(tp) != row:
                        batch.put_partition_state(run.plan_id, tp, row)
                        run.rows[tp] = row
        for tp in decision.completed:
            rec = previous[tp]
            started = run.step_started_at.pop(tp, None)
            if started is None:  # started before a restart or failover: the journal knows when
                entry = await self.store.step_entry(EventKind.STEP_STARTED, run.plan_id, tp, rec.step)
                started = entry.at if entry is not None else None
            seconds = None if started is None else max(0.0, now - started)
            p = snapshot.partitions.get(tp)
            copied = (p.size_bytes if p else 0) * len(rec.adding)
            run.tracker.step_finished(copied)
            batch.append(
                Event(
                    EventKind.STEP_FINISHED,
                    run.plan_id,
                    tp,
                    rec.step,
                    {
                        "target": list(rec.target),
                        "bytes": copied,
                        "seconds": seconds,
                    },
                )
            )
            self.metrics.step_completed(seconds or 0.0, copied)
            self._emit(
                "step.finished", plan_id=run.plan_id, tp=tp, step=rec.step, bytes=copied, seconds=seconds
            )
        for tp in decision.aborted:
            batch.append(Event(EventKind.STEP_CANCELLED, run.plan_id, tp, previous[tp].step, {}))
        for tp in decision.dropped:
            reason = {"reason": TOPIC_DELETED}
            batch.append(Event(EventKind.PARTITION_DROPPED, run.plan_id, tp, previous[tp].step, reason))
            run.step_started_at.pop(tp, None)
            self._emit("partition.dropped", plan_id=run.plan_id, tp=tp, **reason)
        await self._commit_tolerating_replays(batch)
        run.state = decision.state
        failpoints.hit("after_state_commit")

        await self._sync_throttles(run, snapshot, limits)

        if decision.start:
            targets = {s.tp: s.target for s in decision.start}
            await self.guard()
            failpoints.hit("before_alter_reassignments")
            results = await self.cluster.alter_partition_reassignments(targets)
            failpoints.hit("after_alter_reassignments")
            started_batch = WriteBatch()
            for start in decision.start:
                error = results.get(start.tp)
                if error is not None:
                    started_batch.append(
                        Event(
                            EventKind.ERROR,
                            run.plan_id,
                            start.tp,
                            start.step_index,
                            {"api": "alter_partition_reassignments", "error": str(error)},
                        )
                    )
                    log.warning(
                        "step refused by Kafka; retried",
                        plan=run.plan_id,
                        partition=str(start.tp),
                        step=start.step_index,
                        error=str(error),
                    )
                    continue
                run.step_started_at[start.tp] = now
                started_batch.append(
                    Event(
                        EventKind.STEP_STARTED,
                        run.plan_id,
                        start.tp,
                        start.step_index,
                        {
                            "target": list(start.target),
                            "adding": list(start.adding),
                            "removing": list(start.removing),
                            "moves_leadership": start.moves_leadership,
                        },
                    )
                )
                log.info(
                    "step started",
                    plan=run.plan_id,
                    partition=str(start.tp),
                    step=start.step_index,
                    target=list(start.target),
                )
                self._emit(
                    "step.started",
                    plan_id=run.plan_id,
                    tp=start.tp,
                    step=start.step_index,
                    target=list(start.target),
                )
            self.metrics.step_started(len(decision.start))
            await self._commit_tolerating_replays(started_batch)

        if decision.elect:
            await self.guard()
            results = await self.cluster.elect_preferred_leaders([e.tp for e in decision.elect])
            batch = WriteBatch()
            for election in decision.elect:
                error = results.get(election.tp)
                batch.append(
                    Event(
                        EventKind.LEADER_ELECTED,
                        run.plan_id,
                        election.tp,
                        None,
                        {
                            "leader": election.leader,
                            "reason": election.reason,
                            "error": None if error is None else str(error),
                        },
                    )
                )
            await self.store.commit(batch)

    async def _sync_throttles(self, run: PlanRun, snapshot: ClusterSnapshot, limits: Limits) -> None:
        assert run.state is not None
        result = await self.keeper.sync(
            snapshot, moves_in_flight(run.state), limits, run.owned_partitions, run.boosts
        )
        if result.foreign:
            self._emit(
                "throttle.foreign_change", plan_id=run.plan_id, configs=[list(k) for k in result.foreign]
            )
        if result.writes:
            self._emit("throttle.changed", plan_id=run.plan_id, writes=len(result.writes))
        incoming, outgoing = self.keeper.applied_rates()
        self.metrics.set_throttle_rates(incoming, outgoing)

    async def _cancel_in_flight(self, run: PlanRun) -> None:
        assert run.state is not None
        in_flight = [tp for tp, _ in run.state.in_flight()]
        if in_flight:
            await self.guard()
            results = await self.cluster.alter_partition_reassignments(dict.fromkeys(in_flight))
            failed = {
                tp: str(e)
                for tp, e in results.items()
                if e is not None and e.name != "NO_REASSIGNMENT_IN_PROGRESS"
            }
            for tp, error in failed.items():
                log.warning("cancel refused; retried", plan=run.plan_id, partition=str(tp), error=error)

    async def _finish_cycle(
        self,
        run: PlanRun,
        snapshot: ClusterSnapshot,
        decision: Decision,
        changed: Collection[TopicPartition] | None,
    ) -> str:
        assert run.state is not None
        for tp in snapshot.partitions if changed is None else changed:  # only what changed can cross
            p = snapshot.partitions.get(tp)
            if p is not None and len(p.isr) < snapshot.min_insync_replicas(tp.topic):
                run.under_min_isr.add(tp)
            else:
                run.under_min_isr.discard(tp)
        watched = [tp for tp, _ in run.state.in_flight()]
        recompute = None if changed is None else run.fresh | set(changed)
        run.view = run.tracker.update(
            self.clock(), snapshot, run.plan, watched, recompute=recompute, sizes=run.sizes
        )
        for move in run.view.newly_stalled:
            await self.store.commit(
                WriteBatch().append(
                    Event(EventKind.STALL_DETECTED, run.plan_id, move.tp, None, move.to_json())
                )
            )
            self.metrics.stall_detected()
            self._emit("stall.detected", plan_id=run.plan_id, **move.to_json())
            log.warning(
                "move stalled: catch-up does not exceed the produce rate",
                plan=run.plan_id,
                partition=str(move.tp),
                broker=move.broker,
            )
        if self.auto_throttle is not None and run.view.stalled:
            await self._raise_stalled_rates(run, snapshot)
        nothing_in_flight = not watched
        status = run.record.status
        if nothing_in_flight and (run.state.finished or status is PlanStatus.CANCELLING):
            final = (
                PlanStatus.COMPLETED
                if run.state.finished and status is not PlanStatus.CANCELLING
                else PlanStatus.CANCELLED
            )
            if self.keeper.originals.topics or self.keeper.originals.brokers:
                # this cycle's sync already tried with nothing in flight; the next one retries on a fresh read
                return f"{run.plan_id}: {final.value} once throttles are restored"
            await self._set_status(run.plan_id, final)
            run.record = await self._reload_record(run.plan_id)
            counts = run.state.counts
            self.final_progress[run.plan_id] = {
                "partitions_done": counts[Status.DONE],
                "partitions_in_flight": 0,
                "partitions_waiting": 0,
                "bytes_total": run.view.total_bytes,
                "bytes_moved": run.view.moved_bytes,
                "bytes_remaining": run.view.remaining_bytes,
                "rate_bytes_per_sec": None,
                "eta_seconds": 0.0 if final is PlanStatus.COMPLETED else None,
            }
            self._emit(f"plan.{final.value}", plan_id=run.plan_id)
            log.info("plan ended", plan=run.plan_id, status=final.value)
        await self._publish(run, decision)
        return f"{run.plan_id} {run.record.status.value}: {decision.summary()}"

    async def _raise_stalled_rates(self, run: PlanRun, snapshot: ClusterSnapshot) -> None:
        """Auto-throttle: a move that cannot converge gets its brokers' rates raised, one step per window."""
        assert self.auto_throttle is not None
        now = self.clock()
        limits = self.limits_in_force
        window = limits.stall_window_seconds
        base = {LEADER_RATE: limits.leader_throttled_rate, FOLLOWER_RATE: limits.follower_throttled_rate}
        raised: dict[int, dict[str, int]] = {}
        for move in run.view.stalled:
            p = snapshot.partitions.get(move.tp)
            for broker, key in ((move.broker, FOLLOWER_RATE), (p.leader if p else None, LEADER_RATE)):
                start = base[key]
                if broker is None or start is None or now - run.boosted_at.get(broker, -1e18) < window:
                    continue
                current = run.boosts.get(broker, {}).get(key, start)
                new = min(self.auto_throttle.ceiling, current + self.auto_throttle.step)
                if new > current:
                    raised.setdefault(broker, {})[key] = new
        if not raised:
            return
        batch = WriteBatch()
        for broker, rates in raised.items():
            run.boosts.setdefault(broker, {}).update(rates)
            run.boosted_at[broker] = now
            self.metrics.auto_throttle_raised(broker)
            batch.append(
                Event(
                    EventKind.THROTTLE_SET,
                    run.plan_id,
                    None,
                    None,
                    {"auto_throttle": True, "broker": broker, **rates},
                )
            )
            log.warning(
                "auto-throttle raised rates for a stalled move", plan=run.plan_id, broker=broker, rates=rates
            )
            self._emit("throttle.auto_raised", plan_id=run.plan_id, broker=broker, rates=rates)
        await self.store.commit(batch)
        await self._sync_throttles(run, snapshot, self.limits_in_force)

    async def _idle_hygiene(self) -> None:
        """At start-up with no plan active: throttles we left behind (a crash after the end) are removed."""
        if self._hygiene_done:
            return
        stored = await self.store.original_configs()
        if stored:
            owned: dict[str, set[int]] = {}
            for record in await self.store.list_plans():
                if record.status is not PlanStatus.QUEUED:
                    for entry in record.plan.get("partitions", []):
                        owned.setdefault(str(entry["topic"]), set()).add(int(entry["partition"]))
            owned_frozen = {t: frozenset(p) for t, p in owned.items()}
            await self.keeper.load(owned_frozen)
            topics = sorted({r.name for (r, _) in stored if r.type == "topic"})
            partitions, _ = await self.cluster.topic_partitions(topics)
            snapshot = await self.cluster.snapshot(
                partitions, broker_config_keys=BROKER_KEYS, topic_config_keys=TOPIC_KEYS
            )
            result = await self.keeper.sync(snapshot, (), self.limits_in_force, owned_frozen)
            log.info(
                "start-up reconcile of leftover throttles",
                writes=len(result.writes),
                restored=result.restored,
            )
            if not result.restored:
                return
        self._hygiene_done = True

    # ------------------------------------------------------------------------------------------------
    # helpers

    async def _commit_tolerating_replays(self, batch: WriteBatch) -> None:
        try:
            await self.store.commit(batch)
        except StepReplayError as exc:
            # A step restarted after Kafka cancelled it (aborted): keep the first entry, log the retry.
            log.warning("step journaled before; keeping the first entry", entry=str(exc))
            retry = WriteBatch()
            retry.partition_states.update(batch.partition_states)
            retry.status_changes.extend(batch.status_changes)
            for event in batch.events:
                if event.idempotency_key is None or event.tp is None or event.plan_id is None:
                    retry.append(event)
                    continue
                existing = await self.store.step_entry(
                    event.kind, event.plan_id, event.tp, event.step_index or 0
                )
                if existing is None:
                    retry.append(event)
            await self.store.commit(retry)

    async def _set_status(self, plan_id: str, status: PlanStatus, error: str | None = None) -> None:
        await self.store.commit(WriteBatch().set_status(plan_id, status, error))

    async def _reload_record(self, plan_id: str) -> PlanRecord:
        record = await self.store.get_plan(plan_id)
        assert record is not None
        return record

    def _emit(self, kind: str, **data: Any) -> None:
        if self.events is None:
            return
        tp = data.pop("tp", None)
        if isinstance(tp, TopicPartition):
            data["topic"], data["partition"] = tp.topic, tp.partition
        self.events({"event": kind, "at": self.clock(), **data})

    async def _refresh_records(self) -> list[PlanRecord]:
        """The plan records the synchronous status views read; refreshed every cycle and mutation."""
        plans = await self.store.list_plans()
        self.records = {r.id: r for r in plans}
        return plans

    async def _publish_counts(self) -> None:
        plans = await self._refresh_records()
        counts: dict[str, int] = {}
        for record in plans:
            counts[record.status.value] = counts.get(record.status.value, 0) + 1
        self.metrics.set_plan_counts(counts, [s.value for s in PlanStatus])
        if self.run is None:
            self.metrics.set_progress(None, 0, 0, 0, None)
            self.metrics.set_inflight({}, {}, 0)
            self.metrics.set_stalled(0)
            self.metrics.set_under_min_isr(0)

    async def _publish(self, run: PlanRun, decision: Decision) -> None:
        assert run.state is not None
        load = run.state.load
        self.metrics.set_inflight(dict(load.incoming), dict(load.outgoing), load.leader_moves)
        self.metrics.set_partition_counts(
            {s.value: n for s, n in run.state.counts.items()}, [s.value for s in Status]
        )
        view = run.view
        self.metrics.set_progress(
            run.plan_id, view.total_bytes, view.remaining_bytes, view.moved_bytes, view.eta_seconds
        )
        self.metrics.set_stalled(len(view.stalled))
        self.metrics.set_under_min_isr(len(run.under_min_isr))
        self.metrics.set_foreign_reassignments(run.state.counts[Status.EXTERNAL])
        await self._publish_counts()

    # ------------------------------------------------------------------------------------------------
    # ControllerService: see reassignd/daemon/service.py (status views live in daemon/status.py)

    def _require_leader(self) -> None:
        if not self.is_leader:
            raise ServiceError(
                "not_leader", "this daemon is a standby", details={"leader": self.leader_address}
            )

    async def submit_plan(
        self, plan: ReassignmentPlan, *, dry_run: bool = False, allow_rf_change: bool = False
    ) -> JSON:
        if not dry_run:
            self._require_leader()
        try:
            snapshot = await self.cluster.snapshot(
                list(plan.targets), with_sizes=True, topic_config_keys=("min.insync.replicas",)
            )
            ongoing = await self.cluster.list_partition_reassignments(list(plan.targets))
        except ClusterCallError as exc:
            raise ServiceError(
                "unavailable", f"cannot read the cluster to validate the plan: {exc}"
            ) from None
        active = self.run if self.run is not None and not self.run.record.status.terminal else None
        ours = set(active.plan.targets) if active else set()
        busy = {
            **unfinished_partitions(self.records.values()),
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
        rehearsal = await asyncio.to_thread(dry_run_steps, snapshot, plan, self.limits_in_force)
        summary: JSON = {
            "plan_id": None,
            "state": "dry_run" if dry_run else "queued",
            "partitions": len(plan),
            "replicas_to_move": sum(
                len(set(t) - set(snapshot.partitions[tp].replicas)) for tp, t in moving.items()
            ),
            "bytes_to_move": plan_bytes(snapshot, plan).to_move,
            "steps": rehearsal,
        }
        if dry_run:
            return summary
        plan_id = f"plan-{time.strftime('%Y%m%d-%H%M%S', time.gmtime(self.clock()))}-{uuid.uuid4().hex[:6]}"
        batch = WriteBatch().submit_plan(plan_id, plan.to_dict(), {"allow_rf_change": allow_rf_change})
        batch.append(Event(EventKind.PLAN_SUBMITTED, plan_id, None, None, {"partitions": len(plan)}))
        await self.store.commit(batch)
        self._emit("plan.submitted", plan_id=plan_id, partitions=len(plan))
        await self._refresh_records()
        self.wake()
        return {**summary, "plan_id": plan_id}

    def list_plans(self) -> list[JSON]:
        return list_plans_view(self)

    def plan_status(self, plan_id: str | None = None) -> JSON:
        return plan_status_view(self, plan_id)

    async def _lifecycle(
        self, plan_id: str | None, allowed: set[PlanStatus], to: PlanStatus, verb: str
    ) -> JSON:
        self._require_leader()
        async with self._lock:
            record = await (self.store.get_plan(plan_id) if plan_id else self.store.active_plan())
            if record is None:
                raise ServiceError(
                    "not_found" if plan_id else "conflict",
                    f"no plan {plan_id}" if plan_id else f"no active plan to {verb}",
                )
            if record.status not in allowed:
                raise ServiceError("conflict", f"plan {record.id} is {record.status.value}: cannot {verb}")
            await self._set_status(record.id, to)
            if self.run is not None and self.run.plan_id == record.id:
                self.run.record = await self._reload_record(record.id)
            self._emit(_LIFECYCLE_EVENTS[to], plan_id=record.id)
            await self._refresh_records()
        self.wake()
        return self.plan_status(record.id)

    async def pause(self, plan_id: str | None = None) -> JSON:
        return await self._lifecycle(plan_id, {PlanStatus.RUNNING}, PlanStatus.PAUSED, "pause")

    async def resume(self, plan_id: str | None = None) -> JSON:
        return await self._lifecycle(plan_id, {PlanStatus.PAUSED}, PlanStatus.RUNNING, "resume")

    async def cancel(self, plan_id: str | None = None) -> JSON:
        record = await (self.store.get_plan(plan_id) if plan_id else self.store.active_plan())
        if record is not None and record.status is PlanStatus.QUEUED:
            return await self._lifecycle(plan_id, {PlanStatus.QUEUED}, PlanStatus.CANCELLED, "cancel")
        return await self._lifecycle(
            plan_id, {PlanStatus.RUNNING, PlanStatus.PAUSED}, PlanStatus.CANCELLING, "cancel"
        )

    def limits(self) -> JSON:
        return self.limits_in_force.to_mapping()

    async def set_limits(self, changes: Mapping[str, Any]) -> JSON:
        await self._change_limits(changes, None, "limits")
        return self.limits()

    def throttles(self) -> JSON:
        return throttles_view(self)

    async def set_throttles(self, changes: Mapping[str, Any]) -> JSON:
        """New rates reach in-flight moves in the next cycle, which this wakes at once."""
        await self._change_limits(changes, set(RATE_KEYS), "throttles")
        return throttles_view(self)

    async def _change_limits(self, changes: Mapping[str, Any], known: set[str] | None, where: str) -> None:
        """All-or-nothing, journaled, in force from the next decision (KIP-435): nothing is applied unless
        every value is valid and the journal has the change."""
        self._require_leader()
        updated = self._changed(changes, known, where)
        plan_id = self.run.plan_id if self.run else None
        await self.store.commit(
            WriteBatch().append(Event(EventKind.LIMITS_CHANGED, plan_id, None, None, dict(changes)))
        )
        self.limits_in_force = updated
        self.wake()

    def _changed(self, changes: Mapping[str, Any], known: set[str] | None, where: str) -> Limits:
        names = set(self.limits_in_force.to_mapping())
        allowed = known if known is not None else names
        problems = [
            Problem(where, k[:80], f"unknown key; known: {sorted(allowed)}")
            for k in changes
            if k not in allowed
        ]
        if not changes:
            problems.append(Problem(where, "(body)", "no changes given"))
        updated = self.limits_in_force
        try:
            updated = Limits.from_mapping(
                {**self.limits_in_force.to_mapping(), **{k: v for k, v in changes.items() if k in allowed}}
            )
        except InvalidInputError as exc:
            problems += [Problem(where, p.field, p.message) for p in exc.problems]
        if problems:
            raise ServiceError(
                "invalid_request", f"{where} unchanged: {len(problems)} problem(s)", tuple(problems)
            )
        return updated

    async def cluster_reassignments(self) -> list[JSON]:
        try:
            ongoing = await self.cluster.list_partition_reassignments(None)
        except ClusterCallError as exc:
            raise ServiceError("unavailable", f"cannot list reassignments: {exc}") from None
        ours = self.run.plan.targets if self.run is not None and not self.run.record.status.terminal else {}
        return [
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "replicas": list(r.replicas),
                "adding": list(r.adding),
                "removing": list(r.removing),
                "owner": "reassignd" if tp in ours else "foreign",
                "plan_id": self.run.plan_id if tp in ours and self.run else None,
            }
            for tp, r in sorted(ongoing.items())
        ]

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
        if not self._contact_ok and self.last_status in ("starting",):
            return {"ready": False, "reason": "no cluster contact yet", "role": "leader", "leader": None}
        return {"ready": True, "reason": "ok", "role": "leader", "leader": None}


def dry_run_steps(snapshot: ClusterSnapshot, plan: ReassignmentPlan, limits: Limits) -> JSON:
    """Step counts from a dry run of the real engine against the instant fake cluster."""
    result = dry_run(snapshot, plan, limits)
    per_partition = [len(steps) - 1 for steps in result.steps.values()]
    return {
        "total": sum(per_partition),
        "max_per_partition": max(per_partition, default=0),
        "cycles": result.cycles,
    }
