"""The machine on an observation: the views of the snapshot, the decisions, what to persist and write."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any

from reassignd.engine.actions import Decision
from reassignd.engine.cancel import Reverts, cancel_goals, cancel_state, reverting
from reassignd.engine.decide import TOPIC_DELETED, changed_partitions, decide
from reassignd.engine.journal import Event, EventKind
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.limits import Limits
from reassignd.engine.log_dir_moves import decide_log_dirs
from reassignd.engine.progress import source_size
from reassignd.engine.run.auto_throttle import raise_stalled_rates
from reassignd.engine.run.effects import (
    Effect,
    Log,
    MoveLogDirs,
    Notify,
    Persist,
    Reassign,
    WriteThrottles,
)
from reassignd.engine.run.progress import with_eta
from reassignd.engine.run.reading import replicas_of
from reassignd.engine.run.rows import PartitionRow, decoded_rows
from reassignd.engine.run.scheduling import changed_rows
from reassignd.engine.run.state import (
    MIN_INSYNC,
    Awaiting,
    Observed,
    Reachability,
    Replicas,
    RunState,
    Settings,
    Transition,
    effective_limits,
)
from reassignd.engine.state import (
    ExecutionState,
    Status,
)
from reassignd.engine.throttle import (
    moves_in_flight,
)
from reassignd.engine.throttle_book import sync_throttles
from reassignd.engine.tracking import observe as track
from reassignd.engine.tracking import produce_rates, started
from reassignd.model import ClusterSnapshot, ReassignmentPlan, TopicPartition, copy_of


def _reachability(run: RunState, now: float, snapshot: ClusterSnapshot) -> tuple[Reachability, list[Effect]]:
    down = tuple(sorted(b for b, broker in snapshot.brokers.items() if not broker.online))
    effects: list[Effect] = []
    since = run.cluster.since
    if not run.cluster.reachable:
        since = now
        effects += [
            Log("info", "the cluster is reachable again", {"plan": run.plan_id}),
            Notify("cluster.reachable", {"plan_id": run.plan_id}),
        ]
    elif since is None:
        since = now
    if down != run.cluster.unreachable_brokers:
        effects.append(Log("warning" if down else "info", "brokers offline", {"brokers": list(down)}))
    return Reachability(True, since, down), effects


def _views(
    run: RunState, event: Observed
) -> tuple[RunState, ClusterSnapshot | None, ClusterSnapshot, list[Effect]]:
    """(run with sizes cached, at a full read the view with every size, the engine's view, effects).

    The engine's view carries sizes only where bytes move, the same every cycle, so unchanged partitions
    compare equal and cost nothing downstream; min.insync.replicas is the topics' effective value.
    """
    effects: list[Effect] = []
    min_insync = {**run.min_insync, **event.min_insync}
    snapshot = event.snapshot
    topics = {
        name: replace(info, configs={**info.configs, MIN_INSYNC: min_insync[name]})
        for name, info in snapshot.topics.items()
        if name in min_insync and MIN_INSYNC not in info.configs
    }
    if topics:
        snapshot = replace(snapshot, topics={**snapshot.topics, **topics})
    deleted = run.deleted_topics
    if snapshot.deleted_topics - deleted:
        deleted = deleted | snapshot.deleted_topics
        effects.append(
            Log("warning", "topics of the plan were deleted", {"topics": sorted(snapshot.deleted_topics)})
        )
    full = event.request.with_sizes is True
    fresh = (
        frozenset(run.plan.targets)
        if full
        else frozenset(run.execution.in_flight_set if run.execution else ())
    )
    sizes = copy_of(run.sizes)
    readings = copy_of(run.readings)
    now_readings = {}
    for tp in fresh:
        p = snapshot.partitions.get(tp)
        if p is not None and (p.replica_sizes or p.size_bytes):
            sizes[tp] = (p.size_bytes, p.replica_sizes)
            now_readings[tp] = (event.now, source_size(p))
    produce = run.produce  # the same object until read again: the ETA keeps its terms while it is
    if full:
        produce = MappingProxyType(copy_of(run.produce) | produce_rates(readings, now_readings))
        readings.update(now_readings)
    run = replace(
        run,
        sizes=MappingProxyType(sizes),
        readings=MappingProxyType(readings),
        produce=produce,
        min_insync=MappingProxyType(min_insync),
        deleted_topics=deleted,
        fresh=fresh,
        cycles=run.cycles + 1,
    )
    moving = run.execution.in_flight_set if run.execution else frozenset()
    if full:
        stripped = [
            p.with_sizes(0, {})
            for tp, p in snapshot.partitions.items()
            if tp not in moving and (p.size_bytes or p.replica_sizes)
        ]
        view = snapshot.with_partitions(stripped) if stripped else snapshot
        return run, snapshot, view, effects
    return run, None, snapshot, effects


def _sized(view: ClusterSnapshot, run: RunState, changed: set[TopicPartition] | None) -> ClusterSnapshot:
    """Between full reads, the view with the last sizes read put back where they are read this cycle: the
    partitions that changed (the moving ones carry their own, read now). Put back on all 100,000
    partitions of a big plan, they cost more than the rest of a quiet cycle."""
    sizes, fresh = run.sizes, run.fresh
    keys = view.partitions if changed is None else changed
    patched = [
        view.partitions[tp].with_sizes(*sizes[tp])
        for tp in keys
        if tp in sizes and tp not in fresh and tp in view.partitions
    ]
    return view.with_partitions(patched) if patched else view


def _rebuild(run: RunState, full: ClusterSnapshot, limits: Limits, now: float) -> RunState:
    """The execution state after a start or restart: the store's rows, checked against Kafka's view."""
    rows = decoded_rows(run.stored_rows, run.plan.targets)
    ordering = tuple(limits.ordering)
    baseline: dict[TopicPartition, Replicas] = {}
    sizes: dict[TopicPartition, int] = {}
    for tp in run.plan.targets:
        row = rows.get(tp)
        p = full.partitions.get(tp)
        if row is not None and row.baseline is not None:
            baseline[tp] = row.baseline
            sizes[tp] = row.start_size
        elif p is not None and (row is None or row.step == 0):
            baseline[tp] = p.original_replicas
            sizes[tp] = source_size(p)
    goals = {tp: row.goal for tp, row in rows.items() if row.goal is not None}
    if goals:
        progress = {tp: rows[tp].progress for tp in goals}
        execution = ExecutionState.initial(ReassignmentPlan(goals), full, ordering, progress)
    else:
        progress = {tp: row.progress for tp, row in rows.items()}
        execution = ExecutionState.initial(run.plan, full, ordering, progress)
    summary = run.stored_summary
    started_at = {tp: row.started_at for tp, row in rows.items() if row.started_at is not None}
    return replace(
        run,
        execution=execution,
        goals=MappingProxyType(goals) if goals else None,
        baseline=MappingProxyType(baseline),
        start_sizes=MappingProxyType(sizes),
        rows=MappingProxyType(rows),
        step_started_at=MappingProxyType(started_at),
        tracking=started(
            limits.stall_window_seconds,
            baseline,
            run.plan.targets,
            sizes,
            finished_bytes=int(summary.get("finished_bytes", 0)),
            percent=float(summary.get("percent", 0.0)),
        ),
    )


_CHANGES = ("completed", "aborted", "dropped", "recovered")
"""What a decision reports happened to partitions (their terms of the ETA change with them)."""


def _reports(*decisions: Decision) -> dict[str, tuple[Any, ...]]:
    """What the decisions of one observation report, together (a cancel's first one makes two)."""
    return {
        name: tuple(item for d in decisions for item in getattr(d, name))
        for name in ("completed", "aborted", "dropped", "recovered", "elect")
    }


def observe(run: RunState, event: Observed, settings: Settings) -> Transition:
    limits = settings.limits
    now = event.now
    cluster, effects = _reachability(run, now, event.snapshot)
    run = replace(run, cluster=cluster)
    run, full, view, view_effects = _views(run, event)
    effects += view_effects
    changed: set[TopicPartition] | None
    if run.execution is None:  # read in full (read_request)
        full = full or _sized(view, run, None)
        run = _rebuild(run, full, limits, now)
        changed = None
    else:
        changed = None if run.last_view is None else changed_partitions(run.last_view, view)
        full = full or _sized(view, run, changed)
    assert run.execution is not None
    execution = run.execution
    if tuple(limits.ordering) != execution.ordering:
        # ranks by size need every partition's size: between full reads `full` has them where read only
        every_size = full if event.request.with_sizes is True or changed is None else _sized(view, run, None)
        execution = execution.reordered(tuple(limits.ordering), every_size)
    rounds: list[tuple[Decision, ExecutionState]] = []
    plan_rows: dict[TopicPartition, PartitionRow] = {}
    if run.status is PlanStatus.CANCELLING and run.goals is None:
        settled = decide(
            view, execution.plan, execution, replace(limits, parallel_partition_count=0), changed
        )
        rounds.append((settled, execution))
        goals = cancel_goals(settled.state, view, run.baseline)
        # what the last plan-phase decision changed is written too (a step it saw end is journaled now:
        # its row must say so, or a restart would see it end again)
        plan_rows = changed_rows(
            run, settled.state, execution, changed=changed, report=_reports(settled), now=now, starts=()
        )
        plan_rows = {tp: r for tp, r in plan_rows.items() if tp not in goals}
        effects.append(
            Log(
                "info",
                "cancelling: partitions return to their pre-plan list or their target",
                {
                    "plan": run.plan_id,
                    "partitions": len(goals),
                    "to_target": sum(1 for tp, g in goals.items() if g == run.plan.targets[tp]),
                },
            )
        )
        execution = cancel_state(settled.state, view, goals)
        run = replace(run, goals=MappingProxyType(goals))
        changed = None  # a new state: every row of the cancel is written
        decision = decide(view, execution.plan, execution, limits, None)
    else:
        decision = decide(view, execution.plan, execution, effective_limits(run, limits), changed)
    rounds.append((decision, execution))
    report = _reports(*(d for d, _ in rounds))
    state = decision.state
    reverting_now = reverting(state, view, limits) if run.status is PlanStatus.CANCELLING else Reverts()
    reverts = reverting_now.now

    events: list[Event] = []
    notes: list[Effect] = []
    finished_copies = 0
    started_at = copy_of(run.step_started_at)
    for made, prior in rounds:
        for tp in made.recovered:
            rec = prior[tp]  # as written before the restart: the step's own index and target
            data = {"target": list(rec.target), "recovered": True}
            events.append(Event(EventKind.STEP_STARTED, run.plan_id, tp, rec.step, data))
        for tp in made.completed:
            rec = prior[tp]
            p = full.partitions.get(tp)
            copied = (p.size_bytes if p else 0) * len(rec.adding)
            finished_copies += copied
            began = started_at.pop(tp, None)
            seconds = None if began is None else max(0.0, now - began)
            data = {
                "target": list(rec.target),
                "adding": list(rec.adding),
                "leader": rec.leader,
                "bytes": copied,
                "seconds": seconds,
            }
            events.append(Event(EventKind.STEP_FINISHED, run.plan_id, tp, rec.step, data))
            notes += [
                Log(
                    "info",
                    "step finished",
                    {
                        "plan": run.plan_id,
                        "partition": str(tp),
                        "step": rec.step,
                        "target": list(rec.target),
                        "bytes": copied,
                        "seconds": None if seconds is None else round(seconds, 1),
                    },
                ),
                Notify("step.finished", {"plan_id": run.plan_id, "tp": tp, "step": rec.step, **data}),
            ]
        for tp in made.aborted:
            rec = prior[tp]
            started_at.pop(tp, None)
            events.append(
                Event(EventKind.STEP_CANCELLED, run.plan_id, tp, rec.step, {"target": list(rec.target)})
            )
        for tp in made.dropped:
            started_at.pop(tp, None)
            events.append(
                Event(EventKind.PARTITION_DROPPED, run.plan_id, tp, None, {"reason": TOPIC_DELETED})
            )
            notes.append(
                Notify("partition.dropped", {"plan_id": run.plan_id, "tp": tp, "reason": TOPIC_DELETED})
            )

    under = set(run.under_min_isr)
    for tp in view.partitions if changed is None else changed:
        p = view.partitions.get(tp)
        if p is not None and len(p.isr) < view.min_insync_replicas(tp.topic):
            under.add(tp)
        else:
            under.discard(tp)
    under &= set(view.partitions)

    counting = run.goals is None

    def done(tp: TopicPartition) -> bool:
        return counting and state[tp].status is Status.DONE

    recompute = None if changed is None else set(run.fresh) | set(changed)
    before = run.tracking
    tracking = track(
        before,
        now,
        full,
        run.plan.targets if counting else state.plan.targets,
        watched=[tp for tp, _ in state.in_flight()],
        recompute=recompute,
        done=done,
        dropped=report["dropped"] if counting else (),
        finished_copies=finished_copies,
        produce=run.produce,
        moving=run.status is not PlanStatus.PAUSED,
        count_work=counting,
    )
    eta_terms = None  # not kept across a pause: what changes meanwhile is not applied to them
    if run.status is not PlanStatus.PAUSED:
        # the terms of partitions sitting still are kept until sizes and produce rates are read again
        candidates = None if changed is None or event.request.with_sizes is True else recompute
        if candidates is not None:
            candidates = {
                *candidates,
                *(tp for made, _ in rounds for name in _CHANGES for tp in getattr(made, name)),
            }
        tracking, eta_terms = with_eta(
            tracking,
            view,
            state,
            limits,
            run.produce,
            sizes=run.sizes,
            previous=run.eta_terms,
            candidates=candidates,
        )
    for move in tracking.stalled:
        if (move.tp, move.broker) in before.stalled_keys:
            continue
        events.append(Event(EventKind.STALL_DETECTED, run.plan_id, move.tp, None, move.to_json()))
        notes += [
            Notify("stall.detected", {"plan_id": run.plan_id, **move.to_json()}),
            Log(
                "warning",
                "move stalled: catch-up does not exceed the produce rate",
                {"plan": run.plan_id, "partition": str(move.tp), "broker": move.broker},
            ),
        ]
    run = replace(
        run,
        tracking=tracking,
        eta_terms=eta_terms,
        under_min_isr=frozenset(under),
        step_started_at=MappingProxyType(started_at),
    )
    run, boost_events, boost_notes = raise_stalled_rates(run, full, settings, now)
    events += boost_events
    notes += boost_notes

    dirs = decide_log_dirs(
        run.log_dirs,
        full,
        limits,
        may_start=run.status is PlanStatus.RUNNING,
        deleted_topics=run.deleted_topics,
    )
    for tp, broker in dirs.finished:
        data = {"broker": broker, "log_dir": run.log_dirs.wanted[(tp, broker)]}
        events.append(Event(EventKind.LOG_DIR_FINISHED, run.plan_id, tp, None, data))
        notes += [
            Log("info", "log dir move finished", {"plan": run.plan_id, "partition": str(tp), **data}),
            Notify("log_dir.finished", {"plan_id": run.plan_id, "tp": tp, **data}),
        ]
    for tp, broker in dirs.restarted:
        notes.append(
            Log(
                "warning",
                "log dir move ended before its replica reached the dir; started again",
                {"plan": run.plan_id, "partition": str(tp), "broker": broker},
            )
        )
    run = replace(run, log_dirs=dirs.moves)
    sync = sync_throttles(
        run.throttles,
        event.snapshot,
        moves_in_flight(state),
        limits,
        run.owned,
        boosts=run.boosts,
        log_dir_brokers=dirs.moves.running_brokers(),
    )
    for change in sync.foreign:
        kind, name, config = change.key
        data = {
            "resource": kind,
            "name": name,
            "config": config,
            "expected": change.expected,
            "found": change.found,
        }
        events.append(Event(EventKind.FOREIGN_CHANGE, run.plan_id, None, None, data))
        notes.append(Log("warning", "throttle changed by someone else", data))
    if sync.foreign:
        notes.append(
            Notify(
                "throttle.foreign_change",
                {"plan_id": run.plan_id, "configs": [list(c.key) for c in sync.foreign]},
            )
        )

    for tp, why in reverting_now.held.items():
        if tp not in run.held_reverts:
            notes.append(
                Log("warning", "revert held back", {"plan": run.plan_id, "partition": str(tp), "why": why})
            )
    rows = plan_rows | changed_rows(
        run, state, execution, changed=changed, report=report, now=now, starts=decision.start
    )
    run = replace(
        run,
        execution=state,
        throttles=sync.book,
        last_view=view,
        replicas_now=replicas_of(run, full, changed),
        held_reverts=reverting_now.held,
        rows=MappingProxyType(copy_of(run.rows) | rows),
        awaiting=Awaiting("writes", view, decision.start, reverts, report["elect"], sync, dirs.start),
    )
    persist = Persist(
        plan_id=run.plan_id,
        rows=MappingProxyType(rows),
        events=tuple(events),
        record_originals=sync.record,
        forget_originals=sync.forget,
        written=sync.intents,
    )
    effects += [persist, *notes]
    if sync.writes:
        effects.append(WriteThrottles(sync.writes))
    targets: dict[TopicPartition, Replicas | None] = {s.tp: s.target for s in decision.start}
    targets.update(dict.fromkeys(reverts))
    if targets:
        effects.append(Reassign(MappingProxyType(targets)))
    if dirs.start:
        effects.append(MoveLogDirs(dirs.start))
    return Transition(run, tuple(effects))
