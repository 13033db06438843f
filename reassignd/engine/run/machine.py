"""The plan-run machine: one plan's policy from start to end, as a pure function of events.

    step(run, event, settings) -> Transition(run, effects)

Events: `Observed` (a snapshot of the plan's partitions), `Answered` (what Kafka said to the writes of the
last transition), `Unreachable` (the cluster could not be read), `Command` (pause, resume, cancel). The
executor reads what `read_request` asks for, feeds the snapshot in, carries out the effects in order
(effects.py) and feeds the answers back; a cycle is Observed, then Answered (writes), then Answered
(elections) when there were any. Nothing here knows whether the executor is the daemon on a real cluster,
a rehearsal on the simulator's model or the instant fake of a dry run: all three run this code.

The plan's status moves through the lifecycle table of lifecycle.py: commands from the operator, the
end from the machine.

Per partition, the engine's state machine (state.py). The rules for cancel are in cancel.py, for throttles
in throttle_book.py, for progress in tracking.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.log_dir_moves import LogDirMoves
from reassignd.engine.run.answering import answer
from reassignd.engine.run.effects import (
    Answered,
    Effect,
    Log,
    Notify,
    Persist,
)
from reassignd.engine.run.observing import observe
from reassignd.engine.run.state import (
    Command,
    Event,
    Observed,
    Reachability,
    ReadRequest,
    RunState,
    Settings,
    StoredRow,
    Transition,
    Unreachable,
)
from reassignd.engine.throttle import (
    ThrottleOriginals,
)
from reassignd.engine.throttle_book import ThrottleBook
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
    rows: Mapping[TopicPartition, StoredRow] | None = None,
    summary: Mapping[str, Any] | None = None,
    originals: ThrottleOriginals | None = None,
    written: Mapping[tuple[str, str, str], tuple[str | None, ...]] | None = None,
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
        stored_rows=MappingProxyType(dict(rows or {})),
        stored_summary=MappingProxyType(dict(summary or {})),
        throttles=ThrottleBook(originals=book_originals, expected=MappingProxyType(dict(written or {}))),
        saved_summary=dict(summary) if summary else None,
        log_dirs=LogDirMoves.of(plan),
    )


def read_request(run: RunState, settings: Settings) -> ReadRequest:
    """Log-dir sizes cost one DescribeLogDirs per broker, and most of a plan sits still between its steps:
    sizes of all partitions are read every `size_refresh_cycles` cycles (progress, ordering, produce
    rates), those in flight every cycle from their leader and adding replicas only."""
    targets = run.plan.targets
    deleted = run.deleted_topics
    polled = tuple(tp for tp in targets if tp.topic not in deleted) if deleted else tuple(targets)
    missing = tuple(sorted(t for t in run.plan.topics() if t not in run.min_insync))
    if run.execution is None or not run.sizes or run.cycles % settings.size_refresh_cycles == 0:
        return ReadRequest(polled, True, min_insync_topics=missing)
    moving = {tp: rec.adding for tp, rec in run.execution.in_flight()}
    for tp, brokers in run.log_dirs.running_partitions().items():  # their dirs, each cycle
        moving[tp] = (*moving.get(tp, ()), *brokers)
    return ReadRequest(polled, MappingProxyType(moving), min_insync_topics=missing)


# -- the step --------------------------------------------------------------------------------------------


def step(run: RunState, event: Event, settings: Settings) -> Transition:
    if isinstance(event, Observed):
        return observe(run, event, settings)
    if isinstance(event, Answered):
        return answer(run, event, settings)
    if isinstance(event, Unreachable):
        return _unreachable(run, event)
    return _command(run, event)


def _command(run: RunState, command: Command) -> Transition:
    change = run.status.command(run.plan_id, command.verb)
    to = change.target
    updated = replace(run, status=to, goals=None if to is PlanStatus.CANCELLING else run.goals)
    return Transition(
        updated,
        (
            Persist(run.plan_id, status=to),
            Notify(change.event, {"plan_id": run.plan_id}),
            Log("info", f"plan {command.verb}", {"plan": run.plan_id}),
        ),
    )


def _unreachable(run: RunState, event: Unreachable) -> Transition:
    effects: tuple[Effect, ...] = ()
    cluster = run.cluster
    if cluster.reachable:
        cluster = Reachability(False, event.now, cluster.unreachable_brokers, event.error)
        effects = (
            Log("error", "the cluster cannot be reached", {"plan": run.plan_id, "error": event.error}),
            Notify("cluster.unreachable", {"plan_id": run.plan_id, "error": event.error}),
        )
    return Transition(replace(run, cluster=cluster, awaiting=None), effects)


# -- observing ---------------------------------------------------------------------------------------------
