"""The plan-run machine: one plan's policy from start to end, as a pure function of events.

    step(run, event, settings) -> Transition(run, effects)

Events: `Observed` (a snapshot of the plan's partitions), `Answered` (what Kafka said to the writes of the
last transition), `Unreachable` (the cluster could not be read), `Command` (pause, resume, cancel). The
executor reads what `read_request` asks for, feeds the snapshot in, carries out the effects in order
(effects.py) and feeds the answers back; a cycle is Observed, then Answered (writes), then Answered
(elections) when there were any. Nothing here knows whether the executor is the daemon on a real cluster,
a rehearsal on the simulator's model or the instant fake of a dry run: all three run this code.

Plan lifecycle (the store keeps the same transitions, store/base.py)::

    running ──pause──> paused ──resume──> running ──all partitions ended, throttles restored──> completed
       │                  │
       └──cancel──────────┴──> cancelling ──every goal reached, throttles restored──> cancelled

Per partition, the engine's state machine (state.py). The rules for cancel are in cancel.py, for throttles
in throttle_book.py, for progress in tracking.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final

from reassignd.engine.actions import Decision, ElectLeader, StartStep
from reassignd.engine.broker_summary import broker_moves, throttle_peaks
from reassignd.engine.cancel import OUTCOMES, cancel_goals, cancel_state, outcome, reverting, touched
from reassignd.engine.decide import TOPIC_DELETED, acknowledge, changed_partitions, decide
from reassignd.engine.effects import (
    Answered,
    Effect,
    Elect,
    JournalEvent,
    Log,
    Notify,
    Persist,
    Reassign,
    WriteThrottles,
)
from reassignd.engine.eta import estimate
from reassignd.engine.limits import Limits
from reassignd.engine.progress import source_size
from reassignd.engine.state import (
    ENDED,
    MOVING,
    STATE_VERSION,
    ExecutionState,
    Status,
)
from reassignd.engine.throttle import (
    BROKER_KEYS,
    FOLLOWER_RATE,
    LEADER_RATE,
    TOPIC_KEYS,
    ThrottleOriginals,
    moves_in_flight,
)
from reassignd.engine.throttle_book import ThrottleBook, ThrottleSync, sync_throttles, written
from reassignd.engine.tracking import Tracking, produce_rates, started
from reassignd.engine.tracking import observe as track
from reassignd.model import ClusterSnapshot, ReassignmentPlan, TopicPartition

MIN_INSYNC: Final = "min.insync.replicas"
SNAPSHOT_TOPIC_KEYS: Final = (*TOPIC_KEYS, MIN_INSYNC)
SIZE_REFRESH_CYCLES: Final = 30
OUTCOMES_LISTED: Final = 1000
Replicas = tuple[int, ...]
Row = Mapping[str, Any]
_EMPTY: Mapping[Any, Any] = MappingProxyType({})


class Phase(StrEnum):
    RUNNING = "running"
    PAUSED = "paused"
    CANCELLING = "cancelling"
    COMPLETED = "completed"
    CANCELLED = "cancelled"

    @property
    def ended(self) -> bool:
        return self in (Phase.COMPLETED, Phase.CANCELLED)


COMMANDS: Final[Mapping[str, tuple[frozenset[Phase], Phase]]] = MappingProxyType(
    {
        "pause": (frozenset({Phase.RUNNING}), Phase.PAUSED),
        "resume": (frozenset({Phase.PAUSED}), Phase.RUNNING),
        "cancel": (frozenset({Phase.RUNNING, Phase.PAUSED}), Phase.CANCELLING),
    }
)
_EVENT_OF: Final = {
    Phase.PAUSED: "plan.paused",
    Phase.RUNNING: "plan.resumed",
    Phase.CANCELLING: "plan.cancelling",
    Phase.COMPLETED: "plan.completed",
    Phase.CANCELLED: "plan.cancelled",
}


class CommandRefused(ValueError):
    """A lifecycle command that the plan's phase does not allow (e.g. resume a running plan)."""


@dataclass(frozen=True, slots=True)
class AutoThrottle:
    """Raise a stalled move's rates in steps of `step` up to `ceiling` (bytes/s), once per stall window."""

    step: int
    ceiling: int


@dataclass(frozen=True, slots=True)
class Settings:
    limits: Limits
    auto_throttle: AutoThrottle | None = None
    size_refresh_cycles: int = SIZE_REFRESH_CYCLES


@dataclass(frozen=True, slots=True)
class Reachability:
    reachable: bool = True
    since: float | None = None
    unreachable_brokers: tuple[int, ...] = ()
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "reachable": self.reachable,
            "since": self.since,
            "unreachable_brokers": list(self.unreachable_brokers),
        }


@dataclass(frozen=True, slots=True)
class ReadRequest:
    """What the next observation must read (the executor's snapshot call)."""

    partitions: tuple[TopicPartition, ...]
    with_sizes: bool | Mapping[TopicPartition, tuple[int, ...]]
    """True: every replica's size; a mapping: the leader's and these brokers' only (copies in flight)."""
    broker_config_keys: tuple[str, ...] = BROKER_KEYS
    topic_config_keys: tuple[str, ...] = SNAPSHOT_TOPIC_KEYS
    min_insync_topics: tuple[str, ...] = ()
    """Topics whose effective min.insync.replicas (static broker configs included) is still unknown."""


@dataclass(frozen=True, slots=True)
class Observed:
    now: float
    snapshot: ClusterSnapshot
    request: ReadRequest
    min_insync: Mapping[str, str] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, slots=True)
class Unreachable:
    now: float
    error: str


@dataclass(frozen=True, slots=True)
class Command:
    now: float
    verb: str


Event = Observed | Answered | Unreachable | Command


@dataclass(frozen=True, slots=True)
class Awaiting:
    """The writes of a transition waiting for Kafka's answer."""

    stage: str  # "writes" | "elections"
    view: ClusterSnapshot
    starts: tuple[StartStep, ...] = ()
    reverts: tuple[TopicPartition, ...] = ()
    elect: tuple[ElectLeader, ...] = ()
    sync: ThrottleSync | None = None


@dataclass(frozen=True, slots=True)
class RunState:
    """Everything the machine knows of one plan's run; rebuilt from the store and the cluster at start."""

    plan_id: str
    plan: ReassignmentPlan
    phase: Phase
    owned: Mapping[str, frozenset[int]]
    stored_rows: Mapping[TopicPartition, Row] = field(default_factory=lambda: _EMPTY)
    """Rows read from the store at a (re)start; the first observation rebuilds the state from them."""
    stored_summary: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    execution: ExecutionState | None = None
    """Towards the plan's targets, or, once cancelling, towards the cancel's goals."""
    goals: Mapping[TopicPartition, Replicas] | None = None
    baseline: Mapping[TopicPartition, Replicas] = field(default_factory=lambda: _EMPTY)
    start_sizes: Mapping[TopicPartition, int] = field(default_factory=lambda: _EMPTY)
    rows: Mapping[TopicPartition, Row] = field(default_factory=lambda: _EMPTY)
    throttles: ThrottleBook = field(default_factory=ThrottleBook)
    tracking: Tracking = field(default_factory=Tracking)
    sizes: Mapping[TopicPartition, tuple[int, Mapping[int, int]]] = field(default_factory=lambda: _EMPTY)
    readings: Mapping[TopicPartition, tuple[float, int]] = field(default_factory=lambda: _EMPTY)
    produce: Mapping[TopicPartition, float] = field(default_factory=lambda: _EMPTY)
    cycles: int = 0
    min_insync: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    last_view: ClusterSnapshot | None = None
    fresh: frozenset[TopicPartition] = frozenset()
    under_min_isr: frozenset[TopicPartition] = frozenset()
    deleted_topics: frozenset[str] = frozenset()
    boosts: Mapping[int, Mapping[str, int]] = field(default_factory=lambda: _EMPTY)
    boosted_at: Mapping[int, float] = field(default_factory=lambda: _EMPTY)
    step_started_at: Mapping[TopicPartition, float] = field(default_factory=lambda: _EMPTY)
    cluster: Reachability = field(default_factory=Reachability)
    awaiting: Awaiting | None = None
    saved_summary: Mapping[str, Any] | None = None
    replicas_now: Mapping[TopicPartition, Replicas] = field(default_factory=lambda: _EMPTY)

    @property
    def ended(self) -> bool:
        return self.phase.ended


@dataclass(frozen=True, slots=True)
class Transition:
    run: RunState
    effects: tuple[Effect, ...] = ()

    @property
    def awaits_answer(self) -> bool:
        return self.run.awaiting is not None


# -- building a run --------------------------------------------------------------------------------------


def owned_partitions(plan: ReassignmentPlan) -> Mapping[str, frozenset[int]]:
    owned: dict[str, set[int]] = {}
    for tp in plan.targets:
        owned.setdefault(tp.topic, set()).add(tp.partition)
    return MappingProxyType({t: frozenset(p) for t, p in owned.items()})


def new_run(
    plan_id: str,
    plan: ReassignmentPlan,
    phase: Phase,
    *,
    rows: Mapping[TopicPartition, Row] | None = None,
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
        phase=phase,
        owned=owned,
        stored_rows=MappingProxyType(dict(rows or {})),
        stored_summary=MappingProxyType(dict(summary or {})),
        throttles=ThrottleBook(originals=book_originals, expected=MappingProxyType(dict(written or {}))),
        saved_summary=dict(summary) if summary else None,
    )


def read_request(run: RunState, settings: Settings) -> ReadRequest:
    """Log-dir sizes cost one DescribeLogDirs per broker, and most of a plan sits still between its steps:
    sizes of all partitions are read every `size_refresh_cycles` cycles (progress, ordering, produce
    rates), those in flight every cycle from their leader and adding replicas only."""
    polled = tuple(tp for tp in run.plan.targets if tp.topic not in run.deleted_topics)
    missing = tuple(sorted(t for t in run.plan.topics() if t not in run.min_insync))
    if run.execution is None or not run.sizes or run.cycles % settings.size_refresh_cycles == 0:
        return ReadRequest(polled, True, min_insync_topics=missing)
    moving = {tp: rec.adding for tp, rec in run.execution.in_flight()}
    return ReadRequest(polled, MappingProxyType(moving), min_insync_topics=missing)


# -- the step --------------------------------------------------------------------------------------------


def step(run: RunState, event: Event, settings: Settings) -> Transition:
    if isinstance(event, Observed):
        return _observe(run, event, settings)
    if isinstance(event, Answered):
        return _answer(run, event, settings)
    if isinstance(event, Unreachable):
        return _unreachable(run, event)
    return _command(run, event)


def _command(run: RunState, command: Command) -> Transition:
    allowed = COMMANDS.get(command.verb)
    if allowed is None:
        raise CommandRefused(f"unknown command {command.verb!r}")
    sources, to = allowed
    if run.phase not in sources:
        raise CommandRefused(f"plan {run.plan_id} is {run.phase.value}: cannot {command.verb}")
    updated = replace(run, phase=to, goals=None if to is Phase.CANCELLING else run.goals)
    return Transition(
        updated,
        (
            Persist(status=to.value),
            Notify(_EVENT_OF[to], {"plan_id": run.plan_id}),
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


def _effective_limits(run: RunState, limits: Limits) -> Limits:
    if run.phase in (Phase.RUNNING, Phase.CANCELLING):
        return limits
    return replace(limits, parallel_partition_count=0)  # paused: nothing new starts


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


def _views(run: RunState, event: Observed) -> tuple[RunState, ClusterSnapshot, ClusterSnapshot, list[Effect]]:
    """(run with sizes cached, the full view with every size known, the engine's view, effects).

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
    sizes = dict(run.sizes)
    readings = dict(run.readings)
    now_readings = {}
    for tp in fresh:
        p = snapshot.partitions.get(tp)
        if p is not None and (p.replica_sizes or p.size_bytes):
            sizes[tp] = (p.size_bytes, p.replica_sizes)
            now_readings[tp] = (event.now, source_size(p))
    produce = dict(run.produce)
    if full:
        produce.update(produce_rates(readings, now_readings))
        readings.update(now_readings)
    run = replace(
        run,
        sizes=MappingProxyType(sizes),
        readings=MappingProxyType(readings),
        produce=MappingProxyType(produce),
        min_insync=MappingProxyType(min_insync),
        deleted_topics=deleted,
        fresh=fresh,
        cycles=run.cycles + 1,
    )
    moving = run.execution.in_flight_set if run.execution else frozenset()
    if full:
        stripped = [
            replace(p, size_bytes=0, replica_sizes={})
            for tp, p in snapshot.partitions.items()
            if tp not in moving and (p.size_bytes or p.replica_sizes)
        ]
        view = snapshot.with_partitions(stripped) if stripped else snapshot
        return run, snapshot, view, effects
    patched = [
        replace(p, size_bytes=sizes[tp][0], replica_sizes=sizes[tp][1])
        for tp, p in snapshot.partitions.items()
        if tp in sizes and tp not in fresh
    ]
    return run, snapshot.with_partitions(patched), snapshot, effects


def _rebuild(run: RunState, full: ClusterSnapshot, limits: Limits, now: float) -> RunState:
    """The execution state after a start or restart: the store's rows, checked against Kafka's view."""
    rows = run.stored_rows
    ordering = tuple(limits.ordering)
    baseline: dict[TopicPartition, Replicas] = {}
    sizes: dict[TopicPartition, int] = {}
    for tp in run.plan.targets:
        row = rows.get(tp)
        p = full.partitions.get(tp)
        if row is not None and "from" in row:
            baseline[tp] = tuple(int(b) for b in row["from"])
            sizes[tp] = int(row.get("size", 0))
        elif p is not None and (row is None or int(row.get("step", 0)) == 0):
            baseline[tp] = p.original_replicas
            sizes[tp] = source_size(p)
    header = {"version": STATE_VERSION, "ordering": list(ordering)}
    goals = {tp: tuple(int(b) for b in row["goal"]) for tp, row in rows.items() if "goal" in row}
    if goals:
        plan = ReassignmentPlan(goals)
        entries = [dict(rows[tp]) for tp in sorted(goals)]
        execution = ExecutionState.from_json_dict({**header, "partitions": entries}, plan, full)
    elif rows:
        entries = [dict(rows[tp]) for tp in sorted(rows)]
        execution = ExecutionState.from_json_dict({**header, "partitions": entries}, run.plan, full)
    else:
        execution = ExecutionState.initial(run.plan, full, ordering)
    summary = run.stored_summary
    started_at = {
        tp: float(row["started_at"]) for tp, row in rows.items() if row.get("started_at") is not None
    }
    return replace(
        run,
        execution=execution,
        goals=MappingProxyType(goals) if goals else None,
        baseline=MappingProxyType(baseline),
        start_sizes=MappingProxyType(sizes),
        rows=MappingProxyType(dict(rows)),
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


def _reports(*decisions: Decision) -> dict[str, tuple[Any, ...]]:
    """What the decisions of one observation report, together (a cancel's first one makes two)."""
    return {
        name: tuple(item for d in decisions for item in getattr(d, name))
        for name in ("completed", "aborted", "dropped", "recovered", "elect")
    }


def _observe(run: RunState, event: Observed, settings: Settings) -> Transition:
    limits = settings.limits
    now = event.now
    cluster, effects = _reachability(run, now, event.snapshot)
    run = replace(run, cluster=cluster)
    run, full, view, view_effects = _views(run, event)
    effects += view_effects
    changed: set[TopicPartition] | None
    if run.execution is None:
        run = _rebuild(run, full, limits, now)
        changed = None
    else:
        changed = None if run.last_view is None else changed_partitions(run.last_view, view)
    assert run.execution is not None
    execution = run.execution
    if tuple(limits.ordering) != execution.ordering:
        execution = execution.reordered(tuple(limits.ordering), full)
    rounds: list[tuple[Decision, ExecutionState]] = []
    plan_rows: dict[TopicPartition, Row | None] = {}
    if run.phase is Phase.CANCELLING and run.goals is None:
        settled = decide(
            view, execution.plan, execution, replace(limits, parallel_partition_count=0), changed
        )
        rounds.append((settled, execution))
        goals = cancel_goals(settled.state, view, run.baseline)
        # what the last plan-phase decision changed is written too (a step it saw end is journaled now:
        # its row must say so, or a restart would see it end again)
        plan_rows = _changed_rows(
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
        decision = decide(view, execution.plan, execution, _effective_limits(run, limits), changed)
    rounds.append((decision, execution))
    report = _reports(*(d for d, _ in rounds))
    state = decision.state
    reverts = tuple(reverting(state, view, limits)) if run.phase is Phase.CANCELLING else ()

    events: list[JournalEvent] = []
    notes: list[Effect] = []
    finished_copies = 0
    started_at = dict(run.step_started_at)
    for made, prior in rounds:
        for tp in made.recovered:
            rec = prior[tp]  # as written before the restart: the step's own index and target
            data = {"target": list(rec.target), "recovered": True}
            events.append(JournalEvent("step.started", tp, rec.step, data))
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
            events.append(JournalEvent("step.finished", tp, rec.step, data))
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
            events.append(JournalEvent("step.cancelled", tp, rec.step, {"target": list(rec.target)}))
        for tp in made.dropped:
            started_at.pop(tp, None)
            events.append(JournalEvent("partition.dropped", tp, None, {"reason": TOPIC_DELETED}))
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
        moving=run.phase is not Phase.PAUSED,
        count_work=counting,
    )
    if run.phase is not Phase.PAUSED:
        tracking = _with_eta(tracking, full, state, limits, run.produce)
    for move in tracking.stalled:
        if (move.tp, move.broker) in before.stalled_keys:
            continue
        events.append(JournalEvent("stall.detected", move.tp, None, move.to_json()))
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
        under_min_isr=frozenset(under),
        step_started_at=MappingProxyType(started_at),
    )
    run, boost_events, boost_notes = _raise_stalled_rates(run, full, settings, now)
    events += boost_events
    notes += boost_notes

    sync = sync_throttles(
        run.throttles, event.snapshot, moves_in_flight(state), limits, run.owned, boosts=run.boosts
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
        events.append(JournalEvent("foreign.change", None, None, data))
        notes.append(Log("warning", "throttle changed by someone else", data))
    if sync.foreign:
        notes.append(
            Notify(
                "throttle.foreign_change",
                {"plan_id": run.plan_id, "configs": [list(c.key) for c in sync.foreign]},
            )
        )

    rows = plan_rows | _changed_rows(
        run, state, execution, changed=changed, report=report, now=now, starts=decision.start
    )
    run = replace(
        run,
        execution=state,
        throttles=sync.book,
        last_view=view,
        replicas_now=_replicas(run, full),
        rows=MappingProxyType({**run.rows, **{tp: r for tp, r in rows.items() if r is not None}}),
        awaiting=Awaiting("writes", view, decision.start, reverts, report["elect"], sync),
    )
    persist = Persist(
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
    return Transition(run, tuple(effects))


def _with_eta(
    tracking: Tracking,
    full: ClusterSnapshot,
    state: ExecutionState,
    limits: Limits,
    produce: Mapping[TopicPartition, float],
) -> Tracking:
    """The ETA: the work left at the rates in force (eta.py). The slowest copy's own pace is no guide
    while it shares its broker's rate with others (it speeds up as they finish), so it counts only when
    no rate is known at all."""

    def rate(broker: int, key: str, ours: int | None, seen: Mapping[int, float]) -> float | None:
        configured = full.broker_config(broker, key) if full.configs_known("broker", str(broker)) else None
        for value in (configured, ours):
            if value is not None and float(value) > 0:
                return float(value)
        return seen.get(broker)

    def ended(tp: TopicPartition) -> bool:
        return state[tp].status in ENDED

    online = full.online_broker_ids()
    waiting_for = sorted(b for b, parts in state.blocked_by_broker.items() if parts and b not in online)
    if waiting_for:
        count = sum(len(state.blocked_by_broker[b]) for b in waiting_for)
        brokers = ", ".join(map(str, waiting_for))
        return replace(
            tracking, eta=None, eta_reason=f"{count} partition(s) wait for offline broker(s) {brokers}"
        )

    found = estimate(
        full,
        state.plan.targets,
        ended,
        {tp: rec.leader for tp, rec in state.in_flight()},
        rate_in=lambda b: rate(b, FOLLOWER_RATE, limits.follower_throttled_rate, tracking.seen_in),
        rate_out=lambda b: rate(b, LEADER_RATE, limits.leader_throttled_rate, tracking.seen_out),
        produce={**produce, **tracking.produce},
        replica_count=min(
            limits.parallel_replica_count,
            limits.max_outgoing_per_broker,
            limits.max_concurrent_replica_movements,
        ),
        concurrent_in=limits.max_incoming_per_broker,
        concurrent_out=limits.max_outgoing_per_broker,
    )
    if found.seconds == 0.0 and tracking.slowest_copy:
        # no rate known anywhere (unthrottled, not yet seen): the copies' own pace is all there is
        return replace(tracking, eta=tracking.slowest_copy, eta_reason="the slowest copy in flight")
    if found.seconds is None or found.seconds == 0.0:
        return replace(tracking, eta=found.seconds, eta_reason=found.bottleneck)
    # the plan ends at the cycle that sees its last copy done (and restores the throttles): one cycle more
    samples = tracking.plan_samples
    cycle = samples[-1].time - samples[-2].time if len(samples) >= 2 else 0.0
    return replace(tracking, eta=found.seconds + cycle, eta_reason=found.bottleneck)


def _replicas(run: RunState, full: ClusterSnapshot) -> Mapping[TopicPartition, Replicas]:
    replicas = dict(run.replicas_now)
    for tp in run.plan.targets:
        p = full.partitions.get(tp)
        if p is not None:
            replicas[tp] = p.replicas
    return MappingProxyType(replicas)


def _row(run: RunState, state: ExecutionState, tp: TopicPartition, now: float) -> dict[str, Any]:
    row = state.entry(tp)
    if tp in run.baseline:
        row["from"] = list(run.baseline[tp])
        row["size"] = run.start_sizes.get(tp, 0)
    if run.goals is not None and tp in run.goals:
        row["goal"] = list(run.goals[tp])
    rec = state[tp]
    if rec.status in MOVING:
        began = run.step_started_at.get(tp)
        row["started_at"] = now if began is None else began
    return row


def _changed_rows(
    run: RunState,
    state: ExecutionState,
    previous: ExecutionState,
    *,
    changed: set[TopicPartition] | None,
    report: Mapping[str, tuple[Any, ...]],
    now: float,
    starts: tuple[StartStep, ...],
) -> dict[TopicPartition, Row | None]:
    """Rows to write: a record changes only where the decision reconciled (changed) or acted."""
    if changed is None or not run.rows:
        touched_now = set(state.plan.targets)
    else:
        touched_now = set(changed).union(
            (s.tp for s in starts),
            report["completed"],
            report["aborted"],
            report["dropped"],
            report["recovered"],
        )
        touched_now |= {tp for tp in state.in_flight_set if tp not in previous.in_flight_set}
    out: dict[TopicPartition, Row | None] = {}
    for tp in touched_now:
        if tp not in state.rank_of:
            continue
        row = _row(run, state, tp, now)
        if run.rows.get(tp) != row:
            out[tp] = row
    return out


def _raise_stalled_rates(
    run: RunState, snapshot: ClusterSnapshot, settings: Settings, now: float
) -> tuple[RunState, list[JournalEvent], list[Effect]]:
    """Auto-throttle: a move that cannot converge gets its brokers' rates raised, one step per window."""
    auto = settings.auto_throttle
    if auto is None or not run.tracking.stalled:
        return run, [], []
    limits = settings.limits
    window = limits.stall_window_seconds
    base = {LEADER_RATE: limits.leader_throttled_rate, FOLLOWER_RATE: limits.follower_throttled_rate}
    raised: dict[int, dict[str, int]] = {}
    for move in run.tracking.stalled:
        p = snapshot.partitions.get(move.tp)
        for broker, key in ((move.broker, FOLLOWER_RATE), (p.leader if p else None, LEADER_RATE)):
            start = base[key]
            if broker is None or start is None or now - run.boosted_at.get(broker, -1e18) < window:
                continue
            current = run.boosts.get(broker, {}).get(key, start)
            new = min(auto.ceiling, current + auto.step)
            if new > current:
                raised.setdefault(broker, {})[key] = new
    if not raised:
        return run, [], []
    boosts = {b: dict(r) for b, r in run.boosts.items()}
    boosted_at = dict(run.boosted_at)
    events: list[JournalEvent] = []
    notes: list[Effect] = []
    for broker, rates in sorted(raised.items()):
        boosts.setdefault(broker, {}).update(rates)
        boosted_at[broker] = now
        events.append(
            JournalEvent("throttle.set", None, None, {"auto_throttle": True, "broker": broker, **rates})
        )
        notes += [
            Log(
                "warning",
                "auto-throttle raised rates for a stalled move",
                {"plan": run.plan_id, "broker": broker, "rates": rates},
            ),
            Notify("throttle.auto_raised", {"plan_id": run.plan_id, "broker": broker, "rates": rates}),
        ]
    updated = replace(run, boosts=MappingProxyType(boosts), boosted_at=MappingProxyType(boosted_at))
    return updated, events, notes


# -- answers -----------------------------------------------------------------------------------------------


def _answer(run: RunState, answer: Answered, settings: Settings) -> Transition:
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
    execution = acknowledge(awaiting.view, run.execution, _effective_limits(run, settings.limits), refused)
    events: list[JournalEvent] = []
    effects: list[Effect] = []
    started_at = dict(run.step_started_at)
    for start in awaiting.starts:
        if start.tp in refused:
            events.append(
                JournalEvent(
                    "error",
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
        events.append(JournalEvent("step.started", start.tp, start.step_index, data))
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
        events.append(JournalEvent(kind, None, None, data))
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
        row = _row(run, execution, tp, now)
        if run.rows.get(tp) != row:
            rows[tp] = row
    run = replace(run, rows=MappingProxyType({**run.rows, **rows}))
    status = _ending(run, outcome_.restored or not outcome_.book.holds_originals)
    if status is not None:
        run = replace(run, phase=status)
        effects += [
            Notify(_EVENT_OF[status], {"plan_id": run.plan_id}),
            Log("info", "plan ended", {"plan": run.plan_id, "status": status.value}),
        ]
    elif run.execution is not None and not run.execution.in_flight_set and run.throttles.holds_originals:
        effects.append(Log("debug", "plan ends once throttles are restored", {"plan": run.plan_id}))
    summary = summary_of(run)
    save = _worth_saving(run.saved_summary, summary) or status is not None
    run = replace(run, saved_summary=summary if save else run.saved_summary)
    persist = Persist(
        rows=MappingProxyType(rows),
        events=tuple(events),
        status=status.value if status is not None else None,
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


def _ending(run: RunState, restored: bool) -> Phase | None:
    execution = run.execution
    if execution is None or execution.in_flight_set or not restored or not execution.finished:
        return None
    if run.phase is Phase.RUNNING and run.goals is None:
        return Phase.COMPLETED
    if run.phase is Phase.CANCELLING and run.goals is not None:
        return Phase.CANCELLED
    return None


def _elected(run: RunState, answer: Answered, awaiting: Awaiting) -> Transition:
    results = answer.elect or {}
    events = tuple(
        JournalEvent(
            "leader.elected",
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
    return Transition(replace(run, awaiting=None), (Persist(events=events),))


# -- figures -------------------------------------------------------------------------------------------------


def _worth_saving(saved: Mapping[str, Any] | None, summary: Mapping[str, Any]) -> bool:
    if saved is None:
        return True
    for key in ("state", "partitions_done", "partitions_dropped", "bytes_total", "throttles_peak"):
        if saved.get(key) != summary.get(key):
            return True
    return abs(float(saved.get("percent") or 0) - float(summary.get("percent") or 0)) >= 0.5


def summary_of(run: RunState) -> dict[str, Any]:
    """The plan's figures, as status shows them and the store keeps them once the plan has ended."""
    t = run.tracking
    execution = run.execution
    counts = execution.counts if execution is not None else {}
    total = len(run.plan)
    if run.goals is None:
        done = counts.get(Status.DONE, 0)
        dropped = counts.get(Status.DROPPED, 0)
    else:
        done = int((run.saved_summary or {}).get("partitions_done", 0))
        dropped = len(t.dropped) + counts.get(Status.DROPPED, 0)
    summary: dict[str, Any] = {
        "state": run.phase.value,
        "partitions_total": total,
        "partitions_done": done,
        "partitions_dropped": dropped,
        "partitions_in_flight": len(execution.in_flight_set) if execution is not None else 0,
        "partitions_waiting": execution.waiting_count if execution is not None else 0,
        "bytes_total": t.total_bytes,
        "bytes_moved": t.moved_bytes,
        "bytes_remaining": t.remaining_bytes,
        "bytes_grown": t.grown_bytes,
        "bytes_dropped": int(t.dropped_bytes),
        "percent": round(t.percent, 2),
        "rate_bytes_per_sec": t.rate,
        "eta_seconds": t.eta,
        "eta_reason": t.eta_reason,
        "finished_bytes": t.finished_bytes,
        "throttles_peak": throttle_peaks(run.saved_summary, *run.throttles.applied_rates()),
    }
    if run.phase.ended:
        summary["partitions_in_flight"] = 0
        summary["partitions_waiting"] = 0
        summary["bytes_remaining"] = 0 if run.phase is Phase.COMPLETED else t.remaining_bytes
        summary["eta_seconds"] = 0.0 if run.phase is Phase.COMPLETED else None
        summary["rate_bytes_per_sec"] = None
        summary["outcome"] = {
            **outcomes(run),
            "brokers": broker_moves(run.baseline, run.replicas_now, run.start_sizes),
            "throttles": summary["throttles_peak"],
        }
    if run.goals is not None:
        summary["cancel"] = {
            "partitions": len(run.goals),
            "to_target": sum(1 for tp, g in run.goals.items() if g == run.plan.targets[tp]),
            "to_pre_plan": sum(1 for tp, g in run.goals.items() if g != run.plan.targets[tp]),
            "remaining": 0
            if execution is None
            else len(execution.plan) - execution.counts[Status.DONE] - execution.counts[Status.DROPPED],
        }
    return summary


def outcomes(run: RunState) -> dict[str, Any]:
    """Where each partition ended: counts, and the partitions listed (up to OUTCOMES_LISTED each)."""
    lists: dict[str, list[str]] = {name: [] for name in OUTCOMES}
    execution = run.execution
    for tp, final in sorted(run.plan.targets.items()):
        row = run.rows.get(tp, {})
        moved = int(row.get("step", 0)) > 0
        status = str(row.get("status", ""))
        if execution is not None and tp in execution.rank_of:
            rec = execution[tp]
            moved = moved or touched(rec)
            status = rec.status.value if rec.status is Status.DROPPED else status
        where = outcome(
            final,
            run.baseline.get(tp),
            run.replicas_now.get(tp),
            moved=moved,
            dropped=status == Status.DROPPED.value or tp in run.tracking.dropped,
        )
        lists[where].append(str(tp))
    return {
        "counts": {name: len(items) for name, items in lists.items()},
        "partitions": {name: items[:OUTCOMES_LISTED] for name, items in lists.items() if name != "target"},
    }
