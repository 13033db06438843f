"""The machine on Kafka's answers: steps in flight or refused, throttles written, the end, elections."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from reassignd.engine.decide import acknowledge
from reassignd.engine.journal import Event, EventKind
from reassignd.engine.lifecycle import Change, PlanStatus
from reassignd.engine.log_dir_moves import refused as dirs_refused
from reassignd.engine.run.effects import (
    Answered,
    Effect,
    Elect,
    Log,
    Notify,
    Persist,
)
from reassignd.engine.run.figures import summary_of, worth_saving
from reassignd.engine.run.scheduling import row_of
from reassignd.engine.run.state import (
    Awaiting,
    RunState,
    Settings,
    Transition,
    effective_limits,
)
from reassignd.engine.throttle_book import written
from reassignd.model import copy_of


def answer(run: RunState, answer: Answered, settings: Settings) -> Transition:
    awaiting = run.awaiting
    if awaiting is None:
        return Transition(run)
    if awaiting.stage == "elections":
        return _elected(run, answer, awaiting)
    assert run.execution is not None and awaiting.sync is not None
    now = answer.now
    results = answer.reassign or {}
    starting = {s.tp for s in awaiting.starts}
    refused = {tp: str(err) for tp, err in results.items() if err is not None and tp in starting}
    execution = acknowledge(awaiting.view, run.execution, effective_limits(run, settings.limits), refused)
    events: list[Event] = []
    effects: list[Effect] = []
    started_at = copy_of(run.step_started_at)
    for start in awaiting.starts:
        if start.tp in refused:
            events.append(
                Event(
                    EventKind.ERROR,
                    run.plan_id,
                    start.tp,
                    start.step_index,
                    {"api": "alter_partition_reassignments", "error": refused[start.tp]},
                )
            )
            effects.append(
                Log(
                    "warning",
                    "step refused by Kafka; retried",
                    {
                        "plan": run.plan_id,
                        "partition": str(start.tp),
                        "step": start.step_index,
                        "error": refused[start.tp],
                    },
                )
            )
            continue
        started_at[start.tp] = now
        data = {
            "target": list(start.target),
            "adding": list(start.adding),
            "removing": list(start.removing),
            "moves_leadership": start.moves_leadership,
        }
        events.append(Event(EventKind.STEP_STARTED, run.plan_id, start.tp, start.step_index, data))
        effects += [
            Log(
                "info",
                "step started",
                {
                    "plan": run.plan_id,
                    "partition": str(start.tp),
                    "step": start.step_index,
                    "target": list(start.target),
                },
            ),
            Notify(
                "step.started",
                {
                    "plan_id": run.plan_id,
                    "tp": start.tp,
                    "step": start.step_index,
                    "target": list(start.target),
                },
            ),
        ]
    for tp in awaiting.reverts:
        error = results.get(tp)
        if error is not None and "NO_REASSIGNMENT_IN_PROGRESS" not in str(error):
            effects.append(
                Log(
                    "warning",
                    "revert refused; retried",
                    {"plan": run.plan_id, "partition": str(tp), "error": str(error)},
                )
            )
    dir_answers = answer.log_dirs or {}
    for (tp, broker), path in awaiting.log_dirs.items():
        error = dir_answers.get((tp, broker))
        data = {"broker": broker, "log_dir": path}
        if error is None:
            events.append(Event(EventKind.LOG_DIR_STARTED, run.plan_id, tp, None, data))
            effects += [
                Log("info", "log dir move started", {"plan": run.plan_id, "partition": str(tp), **data}),
                Notify("log_dir.started", {"plan_id": run.plan_id, "tp": tp, **data}),
            ]
        else:
            events.append(
                Event(
                    EventKind.ERROR,
                    run.plan_id,
                    tp,
                    None,
                    {"api": "alter_replica_log_dirs", "error": error, **data},
                )
            )
            effects.append(
                Log(
                    "warning",
                    "log dir move refused by Kafka; retried",
                    {"plan": run.plan_id, "partition": str(tp), "error": error, **data},
                )
            )
    if awaiting.log_dirs:
        run = replace(
            run, log_dirs=dirs_refused(run.log_dirs, {k: dir_answers.get(k) for k in awaiting.log_dirs})
        )
    failed = dict(answer.throttles or {})
    outcome_ = written(awaiting.sync, failed)
    for write in outcome_.applied:
        kind = "throttle.set" if write.op in ("SET", "APPEND") else "throttle.restored"
        data = {
            "resource": write.resource,
            "name": write.name,
            "config": write.key,
            "op": write.op,
            "value": write.value,
        }
        events.append(Event(EventKind(kind), run.plan_id, None, None, data))
    if outcome_.applied:
        effects.append(Notify("throttle.changed", {"plan_id": run.plan_id, "writes": len(outcome_.applied)}))
    for (kind, name), error in sorted(failed.items()):
        effects.append(
            Log(
                "warning",
                "throttle write failed; retried next cycle",
                {"resource": kind, "name": name, "error": error},
            )
        )
    run = replace(
        run, execution=execution, throttles=outcome_.book, step_started_at=MappingProxyType(started_at)
    )
    rows = {}
    for tp in starting:
        row = row_of(run, execution, tp, now)
        if run.rows.get(tp) != row:
            rows[tp] = row
    run = replace(run, rows=MappingProxyType(copy_of(run.rows) | rows))
    end = _ending(run, outcome_.restored or not outcome_.book.holds_originals)
    status = None if end is None else end.target
    if end is not None:
        run = replace(run, status=end.target)
        effects += [
            Notify(end.event, {"plan_id": run.plan_id}),
            Log("info", "plan ended", {"plan": run.plan_id, "status": end.target.value}),
        ]
    elif run.execution is not None and not run.execution.in_flight_set and run.throttles.holds_originals:
        effects.append(Log("debug", "plan ends once throttles are restored", {"plan": run.plan_id}))
    summary = summary_of(run)
    save = worth_saving(run.saved_summary, summary) or status is not None
    run = replace(run, saved_summary=summary if save else run.saved_summary)
    persist = Persist(
        plan_id=run.plan_id,
        rows=MappingProxyType(rows),
        events=tuple(events),
        status=status,
        summary=summary if save else None,
        forget_originals=outcome_.forget,
        written=outcome_.notes,
    )
    elect = tuple(e for e in awaiting.elect if e.tp not in refused)
    out: list[Effect] = [persist, *effects]
    if elect:
        out.append(Elect(tuple(e.tp for e in elect)))
        run = replace(run, awaiting=Awaiting("elections", awaiting.view, elect=elect))
    else:
        run = replace(run, awaiting=None)
    return Transition(run, tuple(out))


def _ending(run: RunState, restored: bool) -> Change | None:
    execution = run.execution
    if execution is None or execution.in_flight_set or not restored or not execution.finished:
        return None
    if run.log_dirs.running:
        return None  # a log-dir move still copies (and its throttle is ours until it ends)
    if run.status is PlanStatus.RUNNING and run.goals is None and not run.log_dirs.unfinished:
        return run.status.change_to(PlanStatus.COMPLETED)
    if run.status is PlanStatus.CANCELLING and run.goals is not None:
        return run.status.change_to(PlanStatus.CANCELLED)
    return None


def _elected(run: RunState, answer: Answered, awaiting: Awaiting) -> Transition:
    results = answer.elect or {}
    events = tuple(
        Event(
            EventKind.LEADER_ELECTED,
            run.plan_id,
            e.tp,
            None,
            {
                "leader": e.leader,
                "reason": e.reason,
                "error": None if results.get(e.tp) is None else str(results.get(e.tp)),
            },
        )
        for e in awaiting.elect
    )
    return Transition(replace(run, awaiting=None), (Persist(run.plan_id, events=events),))


# -- figures -------------------------------------------------------------------------------------------------
