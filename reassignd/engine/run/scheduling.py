"""The scheduling part: the steps decided each cycle (decide.py), what they journal, and the rows they
change.

Each observation makes one decision, two when a cancel starts (the plan's last one, which starts nothing,
then the cancel's first: cancelling.py). A step ending is journaled as it is seen (`step.finished`,
`step.cancelled`, `partition.dropped`, `step.started` for one recovered after a restart); a step
starting only once Kafka accepted it (`answered`), in the commit that records it as in flight. Rows are
written only where a decision reconciled or acted.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final

from reassignd.engine.actions import Decision, ElectLeader, StartStep
from reassignd.engine.decide import TOPIC_DELETED, acknowledge, decide
from reassignd.engine.journal import Event, EventKind
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.limits import Limits
from reassignd.engine.run.effects import Answered, Log, Notify
from reassignd.engine.run.outbox import Outbox
from reassignd.engine.run.reading import Sight
from reassignd.engine.run.restart import PlanStart
from reassignd.engine.run.rows import PartitionRow, Replicas
from reassignd.engine.state import ExecutionState, PartitionProgress
from reassignd.model import ClusterSnapshot, TopicPartition, copy_of

_EMPTY: Mapping[Any, Any] = MappingProxyType({})
METADATA_LAG_SECONDS: Final = 10.0
"""How long after Kafka accepted a step brokers' Metadata may still show the partition as it was before
(KafkaClusterAdmin reads replicas from Metadata; a broker replays the controller's records a moment after
it answered: measured on Kafka 4.4 up to 0.35 s, on 3.9 in ZooKeeper mode up to 1.2 s for configs). Within
it, a step read as its source and not listed is read again; after it, that step was reverted."""


@dataclass(frozen=True, slots=True)
class Schedule:
    execution: ExecutionState | None = None
    """Towards the plan's targets, or, once cancelling, towards the cancel's goals."""
    started_at: Mapping[TopicPartition, float] = field(default_factory=lambda: _EMPTY)
    """When each step in flight started."""
    rows: Mapping[TopicPartition, PartitionRow] = field(default_factory=lambda: _EMPTY)
    """The rows as the store has them now."""


@dataclass(frozen=True, slots=True)
class Round:
    decision: Decision
    prior: ExecutionState
    """The state the decision started from."""


@dataclass(frozen=True, slots=True)
class Reported:
    """What the observation's decisions report happened, over all of them."""

    completed: tuple[TopicPartition, ...] = ()
    aborted: tuple[TopicPartition, ...] = ()
    dropped: tuple[TopicPartition, ...] = ()
    recovered: tuple[TopicPartition, ...] = ()
    elect: tuple[ElectLeader, ...] = ()

    @classmethod
    def of(cls, rounds: Collection[Round]) -> Reported:
        decisions = [r.decision for r in rounds]
        return cls(
            tuple(tp for d in decisions for tp in d.completed),
            tuple(tp for d in decisions for tp in d.aborted),
            tuple(tp for d in decisions for tp in d.dropped),
            tuple(tp for d in decisions for tp in d.recovered),
            tuple(e for d in decisions for e in d.elect),
        )

    def changed(self) -> list[TopicPartition]:
        """The partitions a step ended, dropped or recovered for (their rows and ETA terms change)."""
        return [*self.completed, *self.aborted, *self.dropped, *self.recovered]


@dataclass(frozen=True, slots=True)
class Decided:
    """What the observation's decisions did, for the parts after scheduling."""

    rounds: tuple[Round, ...]
    changed: set[TopicPartition] | None
    """What the last decision reconciled (None: every partition, e.g. the cancel's first)."""
    report: Reported
    finished_copies: int
    """Bytes of the copies that finished."""

    @property
    def state(self) -> ExecutionState:
        return self.rounds[-1].decision.state

    @property
    def starts(self) -> tuple[StartStep, ...]:
        return self.rounds[-1].decision.start

    def changed_partitions(self) -> set[TopicPartition]:
        """Every partition a decision reported a change of."""
        return set(self.report.changed())


@dataclass(frozen=True, slots=True)
class Opening:
    """The cancel's first observation (cancelling.py): the plan's last decision, which starts nothing,
    and the cancel's own state towards its goals."""

    settled: Round
    goals: Mapping[TopicPartition, Replicas]
    execution: ExecutionState


def in_force_now(limits: Limits, status: PlanStatus) -> Limits:
    """The limits a decision runs under: a paused plan starts nothing new."""
    if status in (PlanStatus.RUNNING, PlanStatus.CANCELLING):
        return limits
    return replace(limits, parallel_partition_count=0)


def reordered(
    schedule: Schedule, ordering: tuple[str, ...], sized: Callable[[], ClusterSnapshot]
) -> Schedule:
    """The state ranked by a new `reassignment.ordering` (`sized`: the view with every partition's size,
    made only then: putting the sizes back on a 100,000-partition plan cost 0.3 s of every quiet cycle)."""
    execution = schedule.execution
    if execution is None or ordering == execution.ordering:
        return schedule
    return replace(schedule, execution=execution.reordered(ordering, sized()))


def decided(
    schedule: Schedule,
    sight: Sight,
    limits: Limits,
    out: Outbox,
    *,
    start: PlanStart,
    goals: Mapping[TopicPartition, Replicas] | None,
    opening: Opening | None,
) -> tuple[Schedule, Decided]:
    """This observation's decisions, journaled, and the rows they changed (`limits`: in force now)."""
    assert schedule.execution is not None
    rows: dict[TopicPartition, PartitionRow] = {}
    rounds: list[Round] = []
    execution, changed = schedule.execution, sight.changed
    if opening is not None:
        rounds.append(opening.settled)
        # what the plan's last decision changed is written too (a step it saw end is journaled now: its
        # row must say so, or a restart would see it end again)
        settled = _Rows(schedule, start, None, sight.now)
        rows = {
            tp: row
            for tp, row in settled.changed(
                opening.settled, changed, Reported.of([opening.settled]), ()
            ).items()
            if tp not in opening.goals
        }
        execution, changed = opening.execution, None  # a new state: every row of the cancel is written
    changed, recent = settling(execution, schedule.started_at, sight, changed)
    made = decide(sight.view, execution.plan, execution, limits, changed, recent=recent)
    rounds.append(Round(made, execution))
    report = Reported.of(rounds)
    started_at, finished_copies = _journal_ends(rounds, sight, schedule.started_at, out)
    done = Decided(tuple(rounds), changed, report, finished_copies)
    schedule = replace(schedule, started_at=MappingProxyType(started_at))
    rows |= _Rows(schedule, start, goals, sight.now).changed(rounds[-1], changed, report, done.starts)
    out.rows.update(rows)
    out.reassign.update({s.tp: s.target for s in done.starts})
    return replace(schedule, execution=done.state, rows=MappingProxyType(copy_of(schedule.rows) | rows)), done


def settling(
    execution: ExecutionState,
    started_at: Mapping[TopicPartition, float],
    sight: Sight,
    changed: set[TopicPartition] | None,
) -> tuple[set[TopicPartition] | None, frozenset[TopicPartition]]:
    """(what to reconcile, the steps too recent for Metadata to show): the steps in flight that the read
    does not show moving are reconciled every cycle, changed or not, so one read as its source is judged
    again once its start is older than METADATA_LAG_SECONDS."""
    partitions = sight.view.partitions
    still = [
        tp for tp in execution.in_flight_set if (p := partitions.get(tp)) is not None and not p.is_reassigning
    ]
    recent = frozenset(
        tp
        for tp in still
        if (began := started_at.get(tp)) is not None and sight.now - began < METADATA_LAG_SECONDS
    )
    if changed is None or not still:
        return changed, recent
    return changed | set(still), recent


def _journal_ends(
    rounds: list[Round], sight: Sight, started_at: Mapping[TopicPartition, float], out: Outbox
) -> tuple[dict[TopicPartition, float], int]:
    """Steps recovered, finished, cancelled and dropped, journaled; (when the steps left in flight
    started, bytes of the copies that finished)."""
    began_at = copy_of(started_at)
    finished_copies = 0
    for made, prior in ((r.decision, r.prior) for r in rounds):
        for tp in made.recovered:
            rec = prior[tp]  # as written before the restart: the step's own index and target
            data = {"target": list(rec.target), "recovered": True}
            out.journal(Event(EventKind.STEP_STARTED, out.plan_id, tp, rec.step, data))
        for tp in made.completed:
            rec = prior[tp]
            p = sight.full.partitions.get(tp)
            copied = (p.size_bytes if p else 0) * len(rec.adding)
            finished_copies += copied
            began = began_at.pop(tp, None)
            _journal_finished(tp, rec, copied, None if began is None else max(0.0, sight.now - began), out)
        for tp in made.aborted:
            rec = prior[tp]
            began_at.pop(tp, None)
            target = {"target": list(rec.target)}
            out.journal(Event(EventKind.STEP_CANCELLED, out.plan_id, tp, rec.step, target))
        for tp in made.dropped:
            began_at.pop(tp, None)
            reason = {"reason": TOPIC_DELETED}
            out.journal(Event(EventKind.PARTITION_DROPPED, out.plan_id, tp, None, reason))
            out.say(Notify("partition.dropped", {"plan_id": out.plan_id, "tp": tp, **reason}))
    return began_at, finished_copies


def _journal_finished(
    tp: TopicPartition, rec: PartitionProgress, copied: int, seconds: float | None, out: Outbox
) -> None:
    target = list(rec.target)
    data = {"target": target, "adding": list(rec.adding), "leader": rec.leader, "bytes": copied}
    data["seconds"] = seconds
    out.journal(Event(EventKind.STEP_FINISHED, out.plan_id, tp, rec.step, data))
    rounded = None if seconds is None else round(seconds, 1)
    shown = {"step": rec.step, "target": target, "bytes": copied, "seconds": rounded}
    out.say(
        Log("info", "step finished", {"plan": out.plan_id, "partition": str(tp), **shown}),
        Notify("step.finished", {"plan_id": out.plan_id, "tp": tp, "step": rec.step, **data}),
    )


@dataclass(frozen=True, slots=True)
class _Rows:
    """Rows as a schedule writes them: its progress, the plan's start, the cancel's goals."""

    schedule: Schedule
    start: PlanStart
    goals: Mapping[TopicPartition, Replicas] | None
    now: float

    def row(self, state: ExecutionState, tp: TopicPartition) -> PartitionRow:
        began = self.schedule.started_at.get(tp)
        return PartitionRow.of(
            tp,
            state[tp],
            baseline=self.start.baseline.get(tp),
            start_size=self.start.sizes.get(tp, 0),
            goal=None if self.goals is None else self.goals.get(tp),
            started_at=self.now if began is None else began,
        )

    def changed(
        self,
        made: Round,
        changed: set[TopicPartition] | None,
        report: Reported,
        starts: tuple[StartStep, ...],
    ) -> dict[TopicPartition, PartitionRow]:
        """Rows to write: a record changes only where the decision reconciled (changed) or acted."""
        state, previous, written = made.decision.state, made.prior, self.schedule.rows
        if changed is None or not written:
            touched: set[TopicPartition] = set(state.plan.targets)
        else:
            touched = set(changed).union((s.tp for s in starts), report.changed())
            touched |= {tp for tp in state.in_flight_set if tp not in previous.in_flight_set}
        out: dict[TopicPartition, PartitionRow] = {}
        for tp in touched:
            if tp not in state.rank_of:
                continue
            row = self.row(state, tp)
            if written.get(tp) != row:
                out[tp] = row
        return out


def answered(
    schedule: Schedule,
    answer: Answered,
    limits: Limits,
    out: Outbox,
    *,
    starts: tuple[StartStep, ...],
    view: ClusterSnapshot,
    start: PlanStart,
    goals: Mapping[TopicPartition, Replicas] | None,
    held: Mapping[TopicPartition, str] | None = None,
) -> tuple[Schedule, frozenset[TopicPartition]]:
    """Kafka's answer to the steps started: accepted ones in flight and journaled as started, refused
    ones pending again, and so are those `held` back unsent (their throttle could not be written); (the
    schedule, the partitions whose step Kafka refused)."""
    assert schedule.execution is not None
    now = answer.now
    results = answer.reassign or {}
    held = held or {}
    starting = {s.tp for s in starts}
    refused = {
        tp: str(err) for tp, err in results.items() if err is not None and tp in starting and tp not in held
    }
    execution = acknowledge(view, schedule.execution, limits, refused, held)
    began_at = copy_of(schedule.started_at)
    for step in starts:
        if step.tp in held:
            continue  # said once for the cycle (throttles.held_back)
        if step.tp in refused:
            _journal_refused(step, refused[step.tp], out)
        else:
            began_at[step.tp] = now
            _journal_started(step, out)
    schedule = replace(schedule, execution=execution, started_at=MappingProxyType(began_at))
    rows = _Rows(schedule, start, goals, now)
    changed = {tp: row for tp in starting if schedule.rows.get(tp) != (row := rows.row(execution, tp))}
    out.rows.update(changed)
    return replace(schedule, rows=MappingProxyType(copy_of(schedule.rows) | changed)), frozenset(refused)


def _journal_refused(start: StartStep, error: str, out: Outbox) -> None:
    data = {"api": "alter_partition_reassignments", "error": error}
    out.journal(Event(EventKind.ERROR, out.plan_id, start.tp, start.step_index, data))
    where = {"plan": out.plan_id, "partition": str(start.tp), "step": start.step_index}
    out.say(Log("warning", "step refused by Kafka; retried", {**where, "error": error}))


def _journal_started(start: StartStep, out: Outbox) -> None:
    data = {
        "target": list(start.target),
        "adding": list(start.adding),
        "removing": list(start.removing),
        "moves_leadership": start.moves_leadership,
    }
    out.journal(Event(EventKind.STEP_STARTED, out.plan_id, start.tp, start.step_index, data))
    where = {"partition": str(start.tp), "step": start.step_index, "target": list(start.target)}
    out.say(
        Log("info", "step started", {"plan": out.plan_id, **where}),
        Notify(
            "step.started",
            {"plan_id": out.plan_id, "tp": start.tp, "step": start.step_index, "target": list(start.target)},
        ),
    )


def elected(elect: tuple[ElectLeader, ...], answer: Answered, out: Outbox) -> None:
    """The elections' outcome, journaled."""
    results = answer.elect or {}
    for e in elect:
        error = results.get(e.tp)
        data = {"leader": e.leader, "reason": e.reason, "error": None if error is None else str(error)}
        out.journal(Event(EventKind.LEADER_ELECTED, out.plan_id, e.tp, None, data))
