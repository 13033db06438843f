"""Self-healing, gated by rehearsal (engine/anomalies.py decides; this carries it out).

Every `check()` (the daemon runs one every `self.healing.check.interval.seconds` on the writer only) reads
the cluster and steps the anomaly book with what each detector of `self.healing.detectors` finds (the
brokers here, the rest in engine/detectors.py). A broker offline for longer than
`self.healing.broker.failure.seconds` is an anomaly; its fix is the plan that drains it (nothing onto a
decommissioned or offline broker; daemon/fixes.py maps every kind to its fix), rehearsed on a simulated
copy of the cluster before anything runs, and refused when the rehearsal breaks one of the operator's
gates. `propose` waits for `reassignd anomalies
approve ID`; `execute` submits on its own. Either way a fix is only ever queued while no plan is queued or
running, and a cool-down passes between two fixes. A fix's plan carries its anomaly's id, so a restarted or
newly elected daemon knows the fix it finds running and proposes no second one. Every anomaly is kept in
the state store as it changes, with the journal entry of its change: a restarted or newly elected daemon
reads them back before its first check (each one's id, state, first and last seen, its proposed fix).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

from reassignd.cluster.errors import ClusterCallError
from reassignd.daemon.fixes import fix_name, fix_of
from reassignd.daemon.host import CommandHost
from reassignd.daemon.plan_commands import PlanCommands
from reassignd.daemon.produce_rates import ProduceRates
from reassignd.daemon.roles import decommissioned
from reassignd.daemon.service import JSON, ServiceError
from reassignd.engine.anomalies import (
    Anomaly,
    AnomalyBook,
    AnomalyKind,
    AnomalyState,
    HealingMode,
    HealingSettings,
    adopted,
    anew,
    fix_ended,
    gate_refusals,
    may_start_fix,
    observe,
    regated,
    restored,
)
from reassignd.engine.cluster_clock import CLOCK_KEYS
from reassignd.engine.detectors import SIZED_KINDS, detect, log_dir_offline
from reassignd.engine.lifecycle import PlanStatus
from reassignd.logs import get_logger
from reassignd.model import ClusterSnapshot, ReassignmentPlan, TopicPartition
from reassignd.rehearsal.driver import DEFAULT_MAX_SECONDS, cluster_from_snapshot, rehearse
from reassignd.store.base import Event, EventKind, StoreError, WriteBatch

log = get_logger("reassignd.healing")

ANOMALY_OPTION = "anomaly"
"""The stored plan option that names the anomaly a plan fixes."""


class SelfHealing:
    def __init__(
        self, host: CommandHost, plans: PlanCommands, settings: HealingSettings, interval: float = 30.0
    ) -> None:
        self.host = host
        self.plans = plans
        self.settings = settings
        self.interval = interval
        """Seconds between two checks (`self.healing.check.interval.seconds`)."""
        self._reloaded = asyncio.Event()
        self.book = AnomalyBook()
        self._plans: dict[str, ReassignmentPlan] = {}
        """The proposed fixes' plans, by anomaly id (approved ones are queued from here)."""
        self._basis: dict[str, dict[TopicPartition, tuple[int, ...]]] = {}
        """Each proposed fix's partitions' replicas when it was planned, rehearsed and gated: a fix whose
        partitions moved since (another fix, an operator's tool) is stale and never queued."""
        self._loaded = False
        """The book was read from the store since this daemon became the writer."""
        self._produce = ProduceRates()
        """Leader sizes since the conditions being timed began: the produce rates fixes are rehearsed with."""
        self._timed: frozenset[tuple[str, ...]] = frozenset()
        """The conditions (kind, subject) being timed at the last check: one not among them began since."""
        self._reading = asyncio.Lock()
        """Held while the book is read from the store and while anomalies are pruned from both: a read
        that was on its way during a pruning would put the pruned ones back in the book."""
        self._unsaved: set[str] = set()
        """Anomalies changed since the store last kept them (a commit failed): put with the next."""

    def reload(self, settings: HealingSettings, interval: float) -> None:
        """New settings from a config reload; the next check runs at once, not after the old interval.
        When the gates change, a fix they refused whose condition still holds counts anew (as after a
        restart): a new anomaly after its threshold, judged by the new gates."""
        if settings.gates != self.settings.gates:
            self.book = regated(self.book, self.settings)
        self.settings, self.interval = settings, interval
        self._reloaded.set()

    async def next_check(self) -> None:
        """Returns when the next check is due: `interval` seconds on, or at once after a reload."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.interval):
                await self._reloaded.wait()
        self._reloaded.clear()

    # -- the store ---------------------------------------------------------------------------------

    def forget(self) -> None:
        """This daemon's role changed: what it holds of the anomalies may be stale (another daemon wrote
        while it stood by), so the book is read from the store again before the next check; the produce
        rates' onset, read before, is of a condition this daemon stopped timing."""
        self._loaded = False
        self._produce.forget()
        self._timed = frozenset()

    async def _load(self) -> None:
        """The anomalies the store keeps, as the daemon that wrote them last had them (a restart, a
        failover); an anomaly whose record cannot be read is left out, said in the log."""
        async with self._reading:
            if not self._loaded:
                await self._read_book()

    async def _read_book(self) -> None:
        anomalies: list[Anomaly] = []
        self._plans, self._basis, self._unsaved = {}, {}, set()
        for anomaly_id, record in (await self.host.store.anomalies()).items():
            try:
                anomaly = Anomaly.from_json(record)
                plan, basis = _proposed_fix(anomaly, record)
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("a stored anomaly cannot be read; left out", anomaly=anomaly_id, error=str(exc))
                continue
            anomalies.append(anomaly)
            if plan is not None:
                self._plans[anomaly.id], self._basis[anomaly.id] = plan, basis
        started = [r.submitted_at for r in self.host.view.records.values() if ANOMALY_OPTION in r.options]
        self.book = restored(anomalies, max(started, default=None))
        self._loaded = True

    async def prune(self, limit: int = 100) -> tuple[str, ...]:
        """Retention (the leader's, with the plans' history: app.prune_history): up to `limit` anomalies
        that ended longer than `self.healing.anomaly.retention.seconds` ago go from the store (fenced like
        a commit), and from the book; an open one never does. Their ids."""
        await self._load()
        async with self._reading:
            horizon = self.host.clock() - self.settings.anomaly_retention_seconds
            gone = await self.host.store.prune_anomalies(horizon, limit)
            if gone:
                kept = tuple(a for a in self.book.anomalies if a.id not in set(gone))
                self.book = replace(self.book, anomalies=kept)
        return gone

    def _record(self, anomaly: Anomaly) -> dict[str, Any]:
        """What the store keeps of an anomaly: its JSON and, for a fix not yet queued, the replicas its
        plan was made on (a fix whose partitions moved since is stale on any daemon)."""
        record = anomaly.to_json()
        basis = self._basis.get(anomaly.id)
        if basis is not None:
            record["basis"] = [[tp.topic, tp.partition, list(r)] for tp, r in sorted(basis.items())]
        return record

    # -- the check ---------------------------------------------------------------------------------

    async def check(self) -> None:
        """One pass: detect, propose, start, follow. Reads the cluster; writes only through a queued plan."""
        if self.settings.mode is HealingMode.OFF:
            return
        await self._load()
        host = self.host
        try:
            snapshot = await self._read()
        except ClusterCallError as exc:
            log.info("self-healing: the cluster cannot be read; checked again later", error=str(exc))
            return
        snapshot = self._produce.clocked(snapshot, host.clock())
        offline = [b for b, broker in snapshot.brokers.items() if not broker.online]
        banned = await self._banned()
        empty = self._empty_brokers(snapshot, banned)
        settings = self.settings
        findings, unjudged = detect(
            snapshot,
            banned,
            settings.detectors,
            settings.balance_threshold,
            byte_threshold=settings.byte_balance_threshold,
            disk_threshold=settings.disk_capacity_threshold,
        )
        if AnomalyKind.LOG_DIR_OFFLINE in settings.detectors:
            findings = [*findings, *log_dir_offline(snapshot)]
        before = self.book
        self.book = observe(
            self.book, offline, host.clock(), self.settings, empty, findings=findings, unjudged=unjudged
        )
        self._follow_fixes()
        await self._note_onset(snapshot)
        if any(a.state is AnomalyState.DETECTED for a in self.book.anomalies):
            await self._propose_all()
        await self._start_one()
        await self._say_changes(before)

    async def _read(self) -> ClusterSnapshot:
        """The check's snapshot, with every replica's size when a detector judges sizes. `log_dir_offline`
        alone needs no size: each broker's dirs are asked first (DescribeLogDirs naming no partition, which
        answers a failed dir KAFKA_STORAGE_ERROR all the same), and only the brokers with a failed dir are
        asked where their replicas are."""
        detectors, cluster = self.settings.detectors, self.host.cluster
        if detectors & SIZED_KINDS - {AnomalyKind.LOG_DIR_OFFLINE}:
            return await cluster.snapshot(with_sizes=True, broker_config_keys=CLOCK_KEYS)
        snapshot = await cluster.snapshot()
        if AnomalyKind.LOG_DIR_OFFLINE not in detectors:
            return snapshot
        dirs = await cluster.describe_log_dirs(snapshot.online_broker_ids(), [])
        failing = {broker for broker, _ in dirs.offline}
        if not failing:
            return snapshot
        on_failing = {
            tp: failing.intersection(p.replicas)
            for tp, p in snapshot.partitions.items()
            if failing & set(p.replicas)
        }
        return await cluster.snapshot(with_sizes=on_failing, broker_config_keys=CLOCK_KEYS)

    async def _note_onset(self, snapshot: ClusterSnapshot) -> None:
        """While a condition is being timed, the leader sizes at its onset are kept: read now, when the
        check's snapshot carries none, from the leaders of the partitions an offline broker holds (else
        of every partition; a read that fails is tried again at the next check). Read anew when another
        condition begins (its partitions may not have been read, and an onset kept while a condition
        holds for days measures days of growth, retention's deletions included); forgotten once no
        condition holds."""
        timed = frozenset(key[:2] for key in self.book.since)
        if not timed:
            self._produce.forget()
            self._timed = timed
            return
        if self._produce.onset and timed <= self._timed:
            self._timed = timed
            return
        if not any(p.has_sizes for p in snapshot.partitions.values()):
            offline = {b for b, broker in snapshot.brokers.items() if not broker.online}
            held = {tp: () for tp, p in snapshot.partitions.items() if not offline.isdisjoint(p.replicas)}
            cluster = self.host.cluster
            try:
                read = await cluster.snapshot(with_sizes=held or True, broker_config_keys=CLOCK_KEYS)
            except ClusterCallError as exc:
                log.info("self-healing: sizes cannot be read; the onset is read again later", error=str(exc))
                return
            snapshot = self._produce.clocked(read, self.host.clock())
        self._produce.forget()
        self._produce.begin(snapshot)
        self._timed = timed

    async def _banned(self) -> frozenset[int]:
        """The decommissioned brokers, when a detector needs them (every one but `broker_failure`)."""
        if not self.settings.detectors - {AnomalyKind.BROKER_FAILURE}:
            return frozenset()
        return decommissioned(await self.host.store.broker_roles())

    def _empty_brokers(self, snapshot: ClusterSnapshot, banned: frozenset[int]) -> list[int]:
        """Running brokers with no replica, not decommissioned: what the new-broker detector watches."""
        if AnomalyKind.NEW_BROKER not in self.settings.detectors:
            return []
        holding = {b for p in snapshot.partitions.values() for b in p.replicas}
        return [b for b, broker in snapshot.brokers.items() if broker.online and b not in holding | banned]

    def _follow_fixes(self) -> None:
        """A fix's plan, as the store has it: found running after a restart, or ended."""
        now = self.host.clock()
        horizon = now - self.settings.anomaly_retention_seconds
        for record in self.host.view.records.values():
            anomaly_id = record.options.get(ANOMALY_OPTION)
            if not isinstance(anomaly_id, str):
                continue
            known = self.book.get(anomaly_id)
            if known is None and record.status.terminal and (record.finished_at or 0.0) < horizon:
                continue  # its anomaly was pruned (retention): not made again from its plan
            anomaly = known or adopted(anomaly_id, now)
            if anomaly.state is not AnomalyState.EXECUTING and not anomaly.state.terminal:
                anomaly = anomaly.to(AnomalyState.EXECUTING, now, plan_id=record.id)
            if anomaly.state is AnomalyState.EXECUTING and record.status.terminal:
                fixed = record.status is PlanStatus.COMPLETED
                reason = "" if fixed else f"its plan was {record.status.value}"
                self.book = fix_ended(self.book, anomaly, now, fixed, reason)
            else:
                self.book = self.book.with_anomaly(anomaly)

    async def _propose_all(self) -> None:
        host = self.host
        try:
            read = await host.cluster.snapshot(with_sizes=True, broker_config_keys=CLOCK_KEYS)
        except ClusterCallError as exc:
            log.info("self-healing: sizes cannot be read; proposed later", error=str(exc))
            return
        snapshot, measured = self._produce.rated(self._produce.clocked(read, host.clock()))
        banned = decommissioned(await host.store.broker_roles())
        for anomaly in [a for a in self.book.anomalies if a.state is AnomalyState.DETECTED]:
            await self._propose(anomaly, snapshot, banned, measured)

    async def _propose(
        self, anomaly: Anomaly, snapshot: ClusterSnapshot, banned: frozenset[int], measured: float
    ) -> None:
        """`measured`: the seconds over which the snapshot's produce rates were measured (0: none)."""
        now = self.host.clock()
        offline = {b for b, broker in snapshot.brokers.items() if not broker.online}
        try:
            fix = await fix_of(anomaly, snapshot, banned | offline, self.settings)
        except ServiceError as exc:
            self.book = self.book.with_anomaly(anomaly.to(AnomalyState.IGNORED, now, reason=exc.message))
            return
        if fix.plan is None and anomaly.kind is AnomalyKind.UNDER_REPLICATED and fix.note:
            # no fix moves data to a lagging replica: kept `detected`, saying what to check
            self.book = self.book.with_anomaly(replace(anomaly, reason=fix.note, last_seen=now))
            return
        plan, lost = without_lost(snapshot, fix.plan, offline) if fix.plan is not None else (None, [])
        notes = [fix.note] if fix.note else []
        if lost:
            notes.append(f"{', '.join(lost)} left as they are: no live replica to copy from")
        left = "; ".join(notes)
        if plan is None:
            about = f"broker {anomaly.brokers[0]}" if not anomaly.kind.about_partitions else "the cluster"
            reason = left or f"nothing to move: the planner's {anomaly.kind.goal} of {about} is empty"
            self.book = self.book.with_anomaly(anomaly.to(AnomalyState.IGNORED, now, reason=reason))
            return
        figures = await asyncio.to_thread(self._rehearsed, snapshot, plan)
        figures["produce_measured_seconds"] = round(measured, 1)
        refusals = gate_refusals(figures, self.settings)
        proposal = {"plan": plan.to_dict(), "rehearsal": figures, "unrecoverable": lost}
        if refusals:
            reason = "; ".join([*refusals, left] if left else refusals)
            changed = anomaly.to(AnomalyState.IGNORED, now, reason=reason, proposal=proposal)
        else:
            self._plans[anomaly.id] = plan
            known = snapshot.partitions
            self._basis[anomaly.id] = {tp: tuple(known[tp].replicas) for tp in plan.targets if tp in known}
            changed = anomaly.to(AnomalyState.PROPOSED, now, reason=left, proposal=proposal)
            if self.settings.mode is HealingMode.EXECUTE:
                changed = changed.to(
                    AnomalyState.APPROVED, now, reason=_approved("self.healing.mode = execute", left)
                )
        self.book = self.book.with_anomaly(changed)

    def _rehearsed(self, snapshot: ClusterSnapshot, plan: ReassignmentPlan) -> dict[str, Any]:
        """The fix rehearsed on a simulated copy of the cluster under the limits in force (CPU-bound)."""
        sim = cluster_from_snapshot(snapshot)
        # no longer than the duration gate allows (a fix that never converges would run to the
        # rehearsal's own 30-day bound, minutes of CPU): past it, the fix is refused anyway
        bound = self.settings.max_duration_seconds
        longest = DEFAULT_MAX_SECONDS if bound is None else min(DEFAULT_MAX_SECONDS, 1.01 * bound + 60)
        interval = self.settings.cycle_interval_seconds
        result = rehearse(sim, plan, self.host.tuning.limits, cycle_interval=interval, max_seconds=longest)
        figures = result.to_json_dict()
        figures["under_min_isr_seconds"] = result.under_min_isr_seconds
        figures["rack_spread_worse"] = rack_spread_worse(snapshot, plan)
        return {k: v for k, v in figures.items() if k != "brokers"}

    async def _start_one(self) -> None:
        """Queue the first approved fix, when no plan is queued or running and the cool-down passed."""
        host = self.host
        approved = next((a for a in self.book.anomalies if a.state is AnomalyState.APPROVED), None)
        busy = any(r.status is PlanStatus.QUEUED or r.status.active for r in host.view.records.values())
        if approved is None or not may_start_fix(self.book, host.clock(), self.settings, busy):
            return
        plan = self._plans.pop(approved.id, None)
        basis = self._basis.pop(approved.id, {})
        if plan is None:
            reason = "its fix's plan was not kept; proposed anew if the condition holds"
            self.book = anew(self.book, approved.to(AnomalyState.IGNORED, host.clock(), reason=reason))
            return
        name = fix_name(approved)
        if moved := await self._moved_since(basis):
            reason = (
                f"the cluster changed since the proposal ({', '.join(moved[:6])}"
                f"{f' and {len(moved) - 6} more' if len(moved) > 6 else ''} moved): its plan, rehearsal and "
                "gates are stale; proposed anew from the cluster as it is if the condition holds"
            )
            self.book = anew(self.book, approved.to(AnomalyState.IGNORED, host.clock(), reason=reason))
            return
        try:  # checked again as any plan is when queued: the cluster moved on since the proposal
            banned = decommissioned(await host.store.broker_roles())
            await self.plans.checked(plan, dry_run=False, allow_rf_change=False, banned=banned)
        except ServiceError as exc:
            named = "; ".join(str(p) for p in exc.problems[:3])
            reason = f"the fix no longer holds: {exc.message}" + (f" ({named})" if named else "")
            self.book = self.book.with_anomaly(approved.to(AnomalyState.IGNORED, host.clock(), reason=reason))
            return
        async with host.lock:
            plan_id = await self.plans.queue(plan, name=name, options={ANOMALY_OPTION: approved.id})
            await host.refresh_records()
            host.publish()
        now = host.clock()
        executing = approved.to(AnomalyState.EXECUTING, now, plan_id=plan_id)
        self.book = self.book.with_anomaly(executing)
        self.book = replace(self.book, last_fix_started=now)
        host.wake()

    async def _moved_since(self, basis: Mapping[TopicPartition, tuple[int, ...]]) -> list[str]:
        """The fix's partitions whose replicas are not what its proposal was planned on (being moved, or
        moved since); raises ServiceError when the cluster cannot be read (nothing is queued)."""
        if not basis:
            return []
        try:
            snapshot = await self.host.cluster.snapshot()
        except ClusterCallError as exc:
            raise ServiceError("unavailable", f"the cluster cannot be read: {exc}") from exc
        moving = set(await self.host.cluster.list_partition_reassignments())
        now = {tp: tuple(p.replicas) for tp, p in snapshot.partitions.items()}
        return [str(tp) for tp, replicas in sorted(basis.items()) if tp in moving or now.get(tp) != replicas]

    async def _say_changes(self, before: AnomalyBook) -> None:
        """Each state change: a log line, an event, and a journal entry (`reassignd history --kind
        anomaly`), committed with the anomalies that changed; a store that cannot commit loses the entry,
        not the check (its own health says so), and the anomalies go with the next commit."""
        batch = WriteBatch()
        for anomaly in self.book.anomalies:
            old = before.get(anomaly.id)
            if old != anomaly:
                self._unsaved.add(anomaly.id)
            if old is not None and old.state is anomaly.state:
                continue
            fields: dict[str, Any] = {
                "anomaly": anomaly.id,
                "anomaly_kind": anomaly.kind.value,
                "brokers": list(anomaly.brokers),
                "state": anomaly.state.value,
            }
            if anomaly.partitions:
                fields["partitions"] = list(anomaly.partitions[:50])
            if anomaly.reason:
                fields["reason"] = anomaly.reason
            if anomaly.plan_id:
                fields["plan"] = anomaly.plan_id
            level = "warning" if anomaly.state in (AnomalyState.DETECTED, AnomalyState.IGNORED) else "info"
            getattr(log, level)(f"anomaly {anomaly.state.value}", **fields)
            self.host.emit(f"anomaly.{anomaly.state.value}", **fields)
            batch.append(Event(EventKind.ANOMALY, anomaly.plan_id, data=fields))
        for changed in [a for a in self.book.anomalies if a.id in self._unsaved]:
            batch.put_anomaly(changed.id, self._record(changed))
        if batch:
            try:
                await self.host.store.commit(batch)
            except StoreError as exc:
                log.warning("anomaly changes not journaled", error=str(exc))
                return
        self._unsaved.clear()

    # -- requests ----------------------------------------------------------------------------------

    def listed(self) -> JSON:
        return {
            "mode": self.settings.mode.value,
            "anomalies": [a.to_json() for a in sorted(self.book.anomalies, key=lambda a: a.first_seen)],
        }

    async def approve(self, anomaly_id: str) -> JSON:
        """`propose` mode: the operator's go for a proposed fix (queued at the next check that may)."""
        await self.host.require_writer()
        await self._load()
        anomaly = self.book.get(anomaly_id)
        if anomaly is None:
            raise ServiceError("not_found", f"no anomaly {anomaly_id!r}")
        if anomaly.state is not AnomalyState.PROPOSED:
            raise ServiceError(
                "conflict", f"anomaly {anomaly_id} is {anomaly.state.value}: only a proposed fix is approved"
            )
        before = self.book
        approved = anomaly.to(
            AnomalyState.APPROVED, self.host.clock(), reason=_approved("an operator", anomaly.reason)
        )
        self.book = self.book.with_anomaly(approved)
        await self._start_one()
        await self._say_changes(before)
        return next(a.to_json() for a in self.book.anomalies if a.id == anomaly_id)

    def counts(self) -> dict[tuple[str, str], int]:
        """(kind, state) -> how many: the metric's series, every one of them (0: none)."""
        out = {(kind.value, state.value): 0 for kind in AnomalyKind for state in AnomalyState}
        for anomaly in self.book.anomalies:
            key = (anomaly.kind.value, anomaly.state.value)
            out[key] = out.get(key, 0) + 1
        return out


def _proposed_fix(
    anomaly: Anomaly, record: Mapping[str, Any]
) -> tuple[ReassignmentPlan | None, dict[TopicPartition, tuple[int, ...]]]:
    """A stored anomaly's fix not yet queued (proposed, approved): its plan and the replicas it was
    made on; (None, {}) for any other."""
    if anomaly.state not in (AnomalyState.PROPOSED, AnomalyState.APPROVED) or anomaly.proposal is None:
        return None, {}
    plan = ReassignmentPlan.from_dict(anomaly.proposal["plan"])
    basis = {
        TopicPartition(str(t), int(p)): tuple(int(b) for b in r) for t, p, r in record.get("basis") or ()
    }
    return plan, basis


def without_lost(
    snapshot: ClusterSnapshot, plan: ReassignmentPlan, offline: Collection[int]
) -> tuple[ReassignmentPlan | None, list[str]]:
    """The plan without the partitions whose every replica is offline (nothing can copy them until a
    broker of theirs is back: a rehearsal of them never finishes), and those partitions' names."""
    lost = sorted(
        tp
        for tp in plan.targets
        if tp in snapshot.partitions and all(b in offline for b in snapshot.partitions[tp].replicas)
    )
    if not lost:
        return plan, []
    kept = {tp: r for tp, r in plan.targets.items() if tp not in set(lost)}
    return (ReassignmentPlan(kept) if kept else None), [str(tp) for tp in lost]


def rack_spread_worse(snapshot: ClusterSnapshot, plan: ReassignmentPlan) -> int:
    """Partitions whose replicas would span fewer racks than now (racks unknown: not counted)."""

    def racks(replicas: tuple[int, ...] | list[int]) -> int:
        known = [snapshot.brokers[b].rack for b in replicas if b in snapshot.brokers]
        return len({r for r in known if r is not None})

    worse = 0
    for tp, target in plan.targets.items():
        state = snapshot.partitions.get(tp)
        if state is not None and racks(tuple(target)) < racks(state.replicas):
            worse += 1
    return worse


def _approved(by: str, left: str | None) -> str:
    """An approved fix's reason: who approved it, and what the fix leaves out (its proposal's reason)."""
    return f"approved by {by}; {left}" if left else f"approved by {by}"
