"""The plan-run machine: one plan's policy from start to end, as a pure function of events.

    step(run, event, settings) -> Transition(run, effects)

Events: `Observed` (a snapshot of the plan's partitions), `Answered` (what Kafka said to the writes of the
last transition), `Command` (pause, resume, cancel). The executor reads what `read_request` asks for,
feeds the snapshot in, carries out the effects in order (effects.py) and feeds the answers back; a cycle
is Observed, then Answered (throttles) when steps that copy start (their throttle writes go out alone
first: throttles.py `held_back`), then Answered (writes), then Answered (elections) when there were any.
Nothing here knows whether the executor is the daemon on a real cluster, a rehearsal on the simulator's
model or the instant fake of a dry run: all three run this code.

The machine is its parts, each with its own state in `RunState` and its own module: reading, restart,
scheduling, cancelling, progress, auto_throttle, log_dirs, throttles. `observe` and `answer` below run
them in order; the plan's status moves through the table of lifecycle.py. Whether the cluster answers is
not a plan's: it is the daemon's link (reachability.py), and a cycle whose read fails steps nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from reassignd.engine.cancel import Reverts
from reassignd.engine.lifecycle import Change, PlanStatus
from reassignd.engine.limits import Limits
from reassignd.engine.log_dir_moves import LogDirMoves, LogDirRequests
from reassignd.engine.run import (
    auto_throttle,
    cancelling,
    log_dirs,
    progress,
    reading,
    restart,
    retarget,
    scheduling,
    throttles,
)
from reassignd.engine.run.effects import Answered, Log, Notify
from reassignd.engine.run.figures import summary_of, worth_saving
from reassignd.engine.run.outbox import Outbox
from reassignd.engine.run.reading import Observed, ReadRequest, Sight
from reassignd.engine.run.restart import Stored
from reassignd.engine.run.scheduling import Decided, Schedule, in_force_now
from reassignd.engine.run.state import (
    Awaiting,
    Command,
    RunEvent,
    RunState,
    Settings,
    Transition,
)
from reassignd.engine.state import ExecutionState
from reassignd.engine.throttle import ThrottleOriginals, moves_in_flight
from reassignd.engine.throttle_book import ThrottleBook, ThrottleSync
from reassignd.model import ReassignmentPlan, TopicPartition


def owned_partitions(plan: ReassignmentPlan) -> Mapping[str, frozenset[int]]:
    owned: dict[str, set[int]] = {}
    for tp in plan.targets:
        owned.setdefault(tp.topic, set()).add(tp.partition)
    return MappingProxyType({t: frozenset(p) for t, p in owned.items()})


def new_run(
    plan_id: str,
    plan: ReassignmentPlan,
    status: PlanStatus,
    *,
    rows: Mapping[TopicPartition, Mapping[str, Any]] | None = None,
    summary: Mapping[str, Any] | None = None,
    originals: ThrottleOriginals | None = None,
    written: Mapping[tuple[str, str, str], tuple[str | None, ...]] | None = None,
    withdraw: Mapping[TopicPartition, int] | None = None,
) -> RunState:
    """A run as the store has it (rows, summary, throttle originals); the first observation rebuilds the
    rest from the cluster."""
    owned = owned_partitions(plan)
    book_originals = originals or ThrottleOriginals()
    book_originals = ThrottleOriginals(book_originals.topics, book_originals.brokers, owned)
    return RunState(
        plan_id=plan_id,
        plan=plan,
        status=status,
        owned=owned,
        stored=Stored(MappingProxyType(dict(rows or {})), MappingProxyType(dict(summary or {}))),
        throttles=ThrottleBook(originals=book_originals, expected=MappingProxyType(dict(written or {}))),
        progress=progress.Progress(saved_summary=dict(summary) if summary else None),
        log_dirs=LogDirMoves.of(plan),
        withdraw=MappingProxyType(dict(withdraw or {})),
    )


def read_request(run: RunState, settings: Settings) -> ReadRequest:
    watched = run.log_dirs.watched_partitions()
    return reading.request(run.reading, run.plan, run.execution, watched, settings.size_refresh_cycles)


def step(run: RunState, event: RunEvent, settings: Settings) -> Transition:
    if isinstance(event, Observed):
        return observe(run, event, settings)
    if isinstance(event, Answered):
        return answer(run, event, settings)
    return command(run, event)


def command(run: RunState, command: Command) -> Transition:
    """An operator's pause, resume or cancel (CommandRefused when the status does not allow it)."""
    change = run.status.command(run.plan_id, command.verb)
    out = Outbox(run.plan_id, status=change.target)
    out.say(
        Notify(change.event, {"plan_id": run.plan_id}),
        Log("info", f"plan {command.verb}", {"plan": run.plan_id}),
    )
    cancel = cancelling.Cancel() if change.target is PlanStatus.CANCELLING else run.cancel
    return Transition(replace(run, status=change.target, cancel=cancel), out.effects())


def observe(run: RunState, event: Observed, settings: Settings) -> Transition:
    """The parts, in order, on a snapshot; the writes they ask for await Kafka's answer."""
    limits, out = settings.limits, Outbox(run.plan_id)
    run, sight = _read(run, event, out)
    if run.execution is None:
        run = _restarted(run, sight, limits)
    run, decided = _decided(run, sight, limits, out)
    reverts = _reverts(run, decided, sight, limits, out)
    if run.status is not PlanStatus.CANCELLING:
        reverts, left = retarget.withdrawals(run.withdraw, decided.state, sight, out)
        run = replace(run, withdraw=left)
    run = _progressed(run, sight, decided, settings, out)
    run = replace(run, log_dirs=_dirs_moved(run, sight, decided, limits, out))
    sync = _throttled(run, sight, decided.state, limits, out)
    run = replace(run, throttles=sync.book, cancel=cancelling.held(run.cancel, reverts, out))
    elect = decided.report.elect
    if any(s.adding for s in decided.starts) and throttles.throttled(limits):
        # the throttle writes alone first: a step whose throttle cannot be written does not start
        withheld = Awaiting(
            "throttles",
            sight.view,
            decided.starts,
            reverts.now,
            elect,
            sync,
            out.log_dirs,
            reassign=MappingProxyType(dict(out.reassign)),
        )
        out.reassign, out.log_dirs = {}, LogDirRequests()
        return Transition(replace(run, awaiting=withheld), out.effects())
    sent = Awaiting("writes", sight.view, decided.starts, reverts.now, elect, sync, out.log_dirs)
    return Transition(replace(run, awaiting=sent), out.effects())


def _read(run: RunState, event: Observed, out: Outbox) -> tuple[RunState, Sight]:
    execution = run.execution
    moving = execution.in_flight_set if execution is not None else frozenset()
    read, sight = reading.observed(run.reading, event, run.plan, moving, out, first=execution is None)
    return replace(run, reading=read), sight


def _restarted(run: RunState, sight: Sight, limits: Limits) -> RunState:
    ordering, window = tuple(limits.ordering), limits.stall_window_seconds
    rebuilt = restart.rebuilt(run.stored, run.plan, sight.full, ordering, window)
    return replace(
        run,
        start=rebuilt.start,
        schedule=Schedule(rebuilt.execution, rebuilt.started_at, rebuilt.rows),
        cancel=replace(run.cancel, goals=rebuilt.goals),
        progress=replace(run.progress, tracking=rebuilt.tracking),
    )


def _decided(run: RunState, sight: Sight, limits: Limits, out: Outbox) -> tuple[RunState, Decided]:
    """This cycle's decisions, under the ordering in force: the cancel's first ones when it starts now."""
    sized = functools.partial(reading.every_size, run.reading, sight)
    run = replace(run, schedule=scheduling.reordered(run.schedule, tuple(limits.ordering), sized))
    opening = None
    if run.status is PlanStatus.CANCELLING and run.cancel.goals is None:
        assert run.execution is not None
        opening = cancelling.opened(
            run.execution,
            sight,
            limits,
            out,
            plan=run.plan,
            baseline=run.start.baseline,
            started_at=run.schedule.started_at,
        )
        run = replace(run, cancel=replace(run.cancel, goals=opening.goals))
    in_force = in_force_now(limits, run.status)
    schedule, decided = scheduling.decided(
        run.schedule, sight, in_force, out, start=run.start, goals=run.cancel.goals, opening=opening
    )
    return replace(run, schedule=schedule), decided


def _reverts(run: RunState, decided: Decided, sight: Sight, limits: Limits, out: Outbox) -> Reverts:
    if run.status is not PlanStatus.CANCELLING:
        return Reverts()
    return cancelling.reverts(decided.state, sight, limits, out)


def _progressed(run: RunState, sight: Sight, decided: Decided, settings: Settings, out: Outbox) -> RunState:
    """The figures, the ETA and stalls after the decisions, and the rates raised for stalled moves."""
    tracked = progress.observed(
        run.progress,
        sight,
        decided,
        settings.limits,
        out,
        reading=run.reading,
        plan=run.plan,
        cancelling=run.cancel.goals is not None,
        paused=run.status is PlanStatus.PAUSED,
    )
    boosts = auto_throttle.raised(
        run.boosts,
        tracked.tracking,
        sight.full,
        settings.limits,
        out,
        auto=settings.auto_throttle,
        now=sight.clock.now,
    )
    seen = reading.seen(run.reading, sight, run.plan, decided.changed)
    return replace(run, reading=seen, progress=tracked, boosts=boosts)


def _dirs_moved(run: RunState, sight: Sight, decided: Decided, limits: Limits, out: Outbox) -> LogDirMoves:
    """The log-dir moves after the decisions: the replicas the starting steps add get their dir first."""
    return log_dirs.observed(
        run.log_dirs,
        sight.full,
        limits,
        run.reading.deleted_topics,
        out,
        may_start=run.status is PlanStatus.RUNNING,
        cancelling=run.status is PlanStatus.CANCELLING,
        adding={start.tp: start.adding for start in decided.starts},
    )


def _throttled(
    run: RunState, sight: Sight, state: ExecutionState, limits: Limits, out: Outbox
) -> ThrottleSync:
    """The throttles the moves in flight need (and the log-dir moves running), raised where stalled."""
    return throttles.synced(
        run.throttles,
        sight.read,
        moves_in_flight(state),
        limits,
        out,
        owned=run.owned,
        boosts=run.boosts.rates,
        log_dir_brokers=run.log_dirs.copying_brokers(),
        produce=run.progress.tracking.produce,
    )


def answer(run: RunState, answer: Answered, settings: Settings) -> Transition:
    """Kafka's answers, part by part; the plan ends here once everything has (`_ended`)."""
    awaiting, out = run.awaiting, Outbox(run.plan_id)
    if awaiting is None:
        return Transition(run)
    if awaiting.stage == "elections":
        scheduling.elected(awaiting.elect, answer, out)
        return Transition(replace(run, awaiting=None), out.effects())
    assert awaiting.sync is not None
    if awaiting.stage == "throttles":
        return _throttles_answered(run, awaiting, answer, settings.limits, out)
    in_force = in_force_now(settings.limits, run.status)
    schedule, refused = scheduling.answered(
        run.schedule,
        answer,
        in_force,
        out,
        starts=awaiting.starts,
        view=awaiting.view,
        start=run.start,
        goals=run.cancel.goals,
        held=awaiting.held,
    )
    reverted = cancelling.answered(awaiting.reverts, answer, out)
    if reverted:  # read back on their source, they were reverted: no start recent enough to doubt it
        started_at = {tp: t for tp, t in schedule.started_at.items() if tp not in reverted}
        schedule = replace(schedule, started_at=MappingProxyType(started_at))
    dirs = log_dirs.answered(run.log_dirs, awaiting.log_dirs, answer, out)
    outcome = awaiting.written or throttles.answered(awaiting.sync, answer, out)
    run = replace(run, schedule=schedule, log_dirs=dirs, throttles=outcome.book)
    run = _saved(_ended(run, outcome.restored or not outcome.book.holds_originals, out), out)
    elect = tuple(e for e in awaiting.elect if e.tp not in refused)
    out.elect = tuple(e.tp for e in elect)
    elections = Awaiting("elections", awaiting.view, elect=elect) if elect else None
    return Transition(replace(run, awaiting=elections), out.effects())


def _throttles_answered(
    run: RunState, awaiting: Awaiting, answer: Answered, limits: Limits, out: Outbox
) -> Transition:
    """The throttle writes answered: the reassignments go out, but for the steps whose throttle could not
    be written (they wait, `held`), with the log-dir moves."""
    assert awaiting.sync is not None
    outcome = throttles.answered(awaiting.sync, answer, out)
    held = throttles.held_back(awaiting.starts, awaiting.sync, answer, limits, out)
    out.reassign = {tp: target for tp, target in awaiting.reassign.items() if tp not in held}
    out.log_dirs = awaiting.log_dirs
    sent = replace(awaiting, stage="writes", held=MappingProxyType(held), written=outcome, reassign={})
    return Transition(replace(run, throttles=outcome.book, awaiting=sent), out.effects())


def _ended(run: RunState, restored: bool, out: Outbox) -> RunState:
    """The plan's end, once every partition and log-dir move ended and our throttles are restored."""
    end = _ending(run, restored)
    if end is None:
        execution = run.execution
        if execution is not None and not execution.in_flight_set and run.throttles.holds_originals:
            out.say(Log("debug", "plan ends once throttles are restored", {"plan": run.plan_id}))
        return run
    out.status = end.target
    out.say(
        Notify(end.event, {"plan_id": run.plan_id}),
        Log("info", "plan ended", {"plan": run.plan_id, "status": end.target.value}),
    )
    return replace(run, status=end.target)


def _ending(run: RunState, restored: bool) -> Change | None:
    execution = run.execution
    if execution is None or execution.in_flight_set or not restored or not execution.finished:
        return None
    if run.log_dirs.copying:
        return None  # a log-dir move still copies (and its throttle is ours until it ends)
    cancelling_ = run.cancel.goals is not None
    if run.status is PlanStatus.RUNNING and not cancelling_ and not run.log_dirs.unfinished:
        return run.status.change_to(PlanStatus.COMPLETED)
    if run.status is PlanStatus.CANCELLING and cancelling_:
        return run.status.change_to(PlanStatus.CANCELLED)
    return None


def _saved(run: RunState, out: Outbox) -> RunState:
    """The plan's figures go to the store when they changed enough, and at its end."""
    summary = summary_of(run)
    if not (worth_saving(run.progress.saved_summary, summary) or out.status is not None):
        return run
    out.summary = summary
    return replace(run, progress=replace(run.progress, saved_summary=summary))
