"""The state store interface: plans, per-partition progress, original configs and the event journal.

One interface, two implementations: SQLite (embedded default, one daemon) and ZooKeeper (HA, shared by
standby daemons), like Patroni's `AbstractDCS`. Every write goes through `commit(batch)`, which applies a
whole `WriteBatch` atomically or not at all — one transaction per controller cycle — and first checks the
store's `Fence`: a daemon that lost leadership gets `FencedError` and has written nothing. That is the one
call a ZooKeeper implementation must make conditional (a multi-op transaction with a version check on the
leader's node); the reads need no such care.

A status change is checked against the plan lifecycle's table (engine/lifecycle.py) and journaled with its
event; one the table does not list raises `IllegalTransitionError` and writes nothing.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

# the journal's events and the plan lifecycle are the engine's; the store's callers know them from here too
from reassignd.engine.anomalies import AnomalyState
from reassignd.engine.journal import Event as Event  # noqa: PLC0414
from reassignd.engine.journal import EventKind as EventKind  # noqa: PLC0414
from reassignd.engine.lifecycle import TRANSITIONS as TRANSITIONS  # noqa: PLC0414
from reassignd.engine.lifecycle import PlanStatus as PlanStatus  # noqa: PLC0414
from reassignd.model import TopicPartition


class StoreError(Exception):
    """Base of the store's errors; a failed commit has written nothing."""


class StoreUnavailable(StoreError):
    """The store cannot be read or written now (a full disk, a lock held elsewhere, an I/O error, a
    read-only directory): nothing was written, and the same call may succeed once the cause is gone. The
    message names the file and the cause as the storage reported it."""


class StoreCorrupt(StoreError):
    """The store's file is not a sound database (not one at all, or its integrity check fails): named in
    the message; an operator restores it from a backup or moves it aside."""


class FencedError(StoreError):
    """This daemon no longer holds leadership (or a newer leader has written): nothing was written."""


class IllegalTransitionError(StoreError):
    pass


class UnknownPlanError(StoreError):
    pass


class DuplicatePlanError(StoreError):
    pass


class StepReplayError(StoreError):
    """A step-started (or step-finished) entry for this (plan, partition, step) is already journaled.

    The controller treats this as "the step was already applied before a crash": it must not apply it again.
    """

    def __init__(self, existing: JournalEntry) -> None:
        self.existing = existing
        super().__init__(
            f"{existing.kind.value} already journaled for plan {existing.plan_id} partition "
            f"{existing.tp} step {existing.step_index} (seq {existing.seq})"
        )


ACTIVE_STATUSES: Final = frozenset(s for s in PlanStatus if s.active)


@dataclass(frozen=True, slots=True)
class StatusChange:
    """What one status change writes, the same in every store: the checked transition, the times, the
    journal event. Adapters only persist it."""

    status: PlanStatus
    started_at: float | None
    finished_at: float | None
    updated_at: float
    error: str | None
    event: Event


def status_change(
    plan_id: str,
    current: PlanStatus,
    new: PlanStatus,
    *,
    started_at: float | None,
    error: str | None,
    now: float,
) -> StatusChange:
    """The first start sets `started_at`, a terminal status `finished_at`; the change's event is the
    lifecycle table's."""
    change = current.change_to(new)
    if change is None:
        raise IllegalTransitionError(f"plan {plan_id}: cannot go from {current.value} to {new.value}")
    kind = EventKind(change.event)
    data = {"from": current.value, "to": new.value, **({"error": error} if error else {})}
    return StatusChange(
        status=new,
        started_at=started_at if started_at is not None or new is not PlanStatus.RUNNING else now,
        finished_at=now if new.terminal else None,
        updated_at=now,
        error=error,
        event=Event(kind, plan_id, data=data),
    )


def submitted_event(plan_id: str, plan: Mapping[str, Any]) -> Event:
    """The one `plan.submitted` entry of a submission, journaled by the store with the plan."""
    return Event(EventKind.PLAN_SUBMITTED, plan_id, data={"partitions": partition_count(plan)})


def partition_count(plan: Mapping[str, Any]) -> int:
    partitions = plan.get("partitions")
    return len(partitions) if isinstance(partitions, list) else 0


@dataclass(frozen=True, slots=True)
class JournalEntry:
    seq: int
    at: float
    kind: EventKind
    plan_id: str | None
    tp: TopicPartition | None
    step_index: int | None
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PlanSummary:
    """A plan without its body: what lists and status views need, cheap to read for many plans."""

    id: str
    options: Mapping[str, Any]
    status: PlanStatus
    submitted_at: float
    updated_at: float
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    summary: Mapping[str, Any] | None = None
    """The plan's figures (progress, bytes, where its partitions ended), written by the controller: what
    status shows of a plan after it ended, across restarts and failovers."""
    partitions: int = 0


@dataclass(frozen=True, slots=True)
class PlanRecord(PlanSummary):
    """A plan with its body, the submitted Kafka reassignment JSON as parsed."""

    plan: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SettingsRecord:
    """The runtime settings record: changes made through the API or MQTT, and the config file's values they
    replaced (so a later config change of that key wins; see daemon/settings.py). `version` grows by one
    with every write; a write names the version it read (compare and set)."""

    version: int = 0
    document: Mapping[str, Any] = field(default_factory=dict)


DECOMMISSIONED: Final = "decommissioned"
BROKER_ROLES: Final = (DECOMMISSIONED,)
"""The lasting roles a broker can be given (`reassignd brokers decommission`); a broker with none is an
ordinary member of the cluster."""


@dataclass(frozen=True, slots=True)
class BrokerRole:
    """A broker's lasting role, kept by the store until changed: who gave it, when and why."""

    broker: int
    role: str
    since: float
    reason: str = ""
    by: Mapping[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "broker": self.broker,
            "role": self.role,
            "since": self.since,
            "reason": self.reason,
            "by": dict(self.by) if self.by is not None else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BrokerRole:
        by = data.get("by")
        return cls(
            int(data["broker"]),
            str(data["role"]),
            float(data["since"]),
            str(data.get("reason") or ""),
            {str(k): str(v) for k, v in by.items()} if isinstance(by, Mapping) else None,
        )


def role_event(broker: int, role: str | None, reason: str) -> Event:
    """The journal entry of a broker's role change, written by the store in the commit that makes it."""
    kind = EventKind.BROKER_RECOMMISSIONED if role is None else EventKind.BROKER_DECOMMISSIONED
    return Event(kind, data={"broker": broker, **({"reason": reason} if reason else {})})


def check_role(broker: int, role: str | None) -> None:
    if isinstance(broker, bool) or not isinstance(broker, int) or broker < 0:
        raise StoreError(f"broker id must be a non-negative integer, got {broker!r}")
    if role is not None and role not in BROKER_ROLES:
        raise StoreError(f"broker {broker}: role must be one of {list(BROKER_ROLES)}, got {role!r}")


ANOMALY_ID: Final = re.compile(r"[A-Za-z0-9._-]{1,200}")
"""What an anomaly id may be (self-healing makes `<kind>-<subject>-<first seen>`): a name in every store."""


ENDED_ANOMALY_STATES: Final = frozenset(s.value for s in AnomalyState if s.terminal)
"""The states of an anomaly that changes no more (fixed, ignored, expired): what retention may prune."""


def prunable_anomaly(record: Mapping[str, Any], before: float) -> bool:
    """An anomaly record that ended (`ENDED_ANOMALY_STATES`) and last changed (`last_seen`, the daemon's
    clock at its last change) before `before`; an open one, or one whose record says neither, never is."""
    last = record.get("last_seen")
    fresh = isinstance(last, bool) or not isinstance(last, int | float) or last >= before
    return record.get("state") in ENDED_ANOMALY_STATES and not fresh


def oldest_prunable(records: Mapping[str, Mapping[str, Any]], before: float, limit: int) -> tuple[str, ...]:
    """The ids of up to `limit` prunable anomaly records (`prunable_anomaly`), the oldest change first."""
    doomed = sorted((r["last_seen"], i) for i, r in records.items() if prunable_anomaly(r, before))
    return tuple(anomaly_id for _, anomaly_id in doomed[: max(0, limit)])


def check_anomaly_id(anomaly_id: object) -> None:
    if not isinstance(anomaly_id, str) or not ANOMALY_ID.fullmatch(anomaly_id):
        raise StoreError(f"anomaly id must be 1 to 200 letters, digits, '.', '_' or '-', got {anomaly_id!r}")


class SettingsConflict(StoreError):
    """The settings record changed since it was read: nothing was written."""


@dataclass(frozen=True, slots=True)
class Pruned:
    plans: tuple[str, ...] = ()
    journal_entries: int = 0


@dataclass(frozen=True, slots=True, order=True)
class ConfigResource:
    """A Kafka config resource: `broker` with its id as name, or `topic` with the topic name."""

    type: str
    name: str

    def __post_init__(self) -> None:
        if self.type not in ("broker", "topic"):
            raise ValueError(f"config resource type must be broker or topic, got {self.type!r}")


@dataclass(frozen=True, slots=True)
class OriginalValue:
    """What a config was before we first changed it; `value=None` means it was absent (restore = delete).

    `written`: the values the config may hold because of our own writes (None: we never wrote it). Two
    while a write is under way (before and after), one once Kafka answered; so after a crash our own value
    is still told apart from someone else's.
    """

    value: str | None
    recorded_at: float
    written: tuple[str | None, ...] | None = None


@dataclass(frozen=True, slots=True)
class WriteBatch:
    """Everything one controller cycle writes, committed atomically by `StateStore.commit`."""

    new_plans: list[tuple[str, Mapping[str, Any], Mapping[str, Any]]] = field(default_factory=list)
    status_changes: list[tuple[str, PlanStatus, str | None]] = field(default_factory=list)
    partition_states: dict[tuple[str, TopicPartition], Mapping[str, Any] | None] = field(default_factory=dict)
    originals_to_record: list[tuple[ConfigResource, str, str | None]] = field(default_factory=list)
    originals_to_forget: list[tuple[ConfigResource, str]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    summaries: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    written: dict[tuple[ConfigResource, str], tuple[str | None, ...]] = field(default_factory=dict)
    new_settings: list[tuple[int, Mapping[str, Any]]] = field(default_factory=list)
    broker_roles: dict[int, tuple[str | None, str]] = field(default_factory=dict)
    anomalies: dict[str, Mapping[str, Any]] = field(default_factory=dict)

    def put_anomaly(self, anomaly_id: str, record: Mapping[str, Any]) -> WriteBatch:
        """Keep self-healing's anomaly `anomaly_id` as `record` (replacing what was kept of it): what a
        restart or the standby that takes over reads back (`StateStore.anomalies`)."""
        check_anomaly_id(anomaly_id)
        self.anomalies[anomaly_id] = record
        return self

    def set_broker_role(self, broker: int, role: str | None, reason: str = "") -> WriteBatch:
        """Give `broker` a lasting role (`DECOMMISSIONED`), or take its role away (None); the store stamps
        when and by whom (store/actor.py) and journals the change in the same commit."""
        check_role(broker, role)
        self.broker_roles[broker] = (role, reason)
        return self

    def submit_plan(self, plan_id: str, plan: Mapping[str, Any], options: Mapping[str, Any]) -> WriteBatch:
        self.new_plans.append((plan_id, plan, options))
        return self

    def set_status(self, plan_id: str, status: PlanStatus, error: str | None = None) -> WriteBatch:
        """Also journals the matching plan event (resumed when it leaves paused for running)."""
        self.status_changes.append((plan_id, status, error))
        return self

    def put_settings(self, read_version: int, document: Mapping[str, Any]) -> WriteBatch:
        """Replace the runtime settings record, if it is still at `read_version` (SettingsConflict else)."""
        self.new_settings[:] = [(read_version, document)]
        return self

    def set_summary(self, plan_id: str, summary: Mapping[str, Any]) -> WriteBatch:
        """Replace the plan's figures (`PlanRecord.summary`)."""
        self.summaries[plan_id] = summary
        return self

    def put_partition_state(
        self, plan_id: str, tp: TopicPartition, state: Mapping[str, Any] | None
    ) -> WriteBatch:
        """The engine's serialised state of one partition; None deletes it."""
        self.partition_states[(plan_id, tp)] = state
        return self

    def record_original(self, resource: ConfigResource, key: str, value: str | None) -> WriteBatch:
        """Remember `value` (None: absent) unless an original of this key is already recorded."""
        self.originals_to_record.append((resource, key, value))
        return self

    def note_written(self, resource: ConfigResource, key: str, values: tuple[str | None, ...]) -> WriteBatch:
        """What our writes may have left in this config (`OriginalValue.written`); its original must be
        recorded (in this batch or before). Applied after forgets and records."""
        self.written[(resource, key)] = tuple(values)
        return self

    def forget_original(self, resource: ConfigResource, key: str) -> WriteBatch:
        """Forgets apply before records within a batch: forget + record of one key replaces its original."""
        self.originals_to_forget.append((resource, key))
        return self

    def append(self, event: Event) -> WriteBatch:
        self.events.append(event)
        return self

    def __bool__(self) -> bool:
        return any(
            (
                self.new_plans,
                self.status_changes,
                self.partition_states,
                self.originals_to_record,
                self.originals_to_forget,
                self.events,
                self.summaries,
                self.written,
                self.new_settings,
                self.broker_roles,
                self.anomalies,
            )
        )


class Fence(Protocol):
    """Leadership guard consulted inside every commit.

    `epoch()` returns the current leadership epoch (monotonic across leaders, e.g. the ZooKeeper election
    node's sequence) or raises FencedError when leadership is not (or no longer) held. A store refuses a
    commit whose epoch is lower than one it has already seen, so a paused old leader cannot write after a
    new one has.
    """

    def epoch(self) -> int: ...


class Unfenced:
    """The fence of a lone daemon (no HA): always epoch 0."""

    def epoch(self) -> int:
        return 0


@dataclass(frozen=True, slots=True)
class CommitResult:
    seqs: tuple[int, ...]  # journal sequence numbers of the batch's events, in order
    recorded_originals: tuple[tuple[ConfigResource, str], ...]  # originals that were new


class StateStore(abc.ABC):
    """The store interface. Implementations: SqliteStore; ZooKeeper (HA issue) later."""

    @abc.abstractmethod
    def commit(self, batch: WriteBatch) -> CommitResult:
        """Apply the whole batch in one transaction after checking the fence; on any error write nothing.

        Raises FencedError, UnknownPlanError, DuplicatePlanError, IllegalTransitionError, StepReplayError.
        """

    @abc.abstractmethod
    def get_plan(self, plan_id: str) -> PlanRecord | None: ...

    @abc.abstractmethod
    def list_plans(self, statuses: Iterable[PlanStatus] | None = None) -> list[PlanSummary]:
        """Plans in submission order, without their bodies, optionally only those with one of `statuses`.
        Costs what is kept (retention bounds it), never a parse of every plan body."""

    @abc.abstractmethod
    def settings(self) -> SettingsRecord:
        """The runtime settings record (version 0, empty, before the first write)."""

    @abc.abstractmethod
    def broker_roles(self) -> dict[int, BrokerRole]:
        """Every broker with a lasting role, by id (empty before the first)."""

    @abc.abstractmethod
    def anomalies(self) -> dict[str, Mapping[str, Any]]:
        """Self-healing's anomalies as last put, by id (empty before the first)."""

    @abc.abstractmethod
    def prune(self, before: float, keep_plans: int, limit: int) -> Pruned:
        """Delete up to `limit` ended plans, oldest first, that finished before `before` or are beyond the
        newest `keep_plans` ended ones: the record, body, partition rows, journal entries and step keys.
        Unfinished plans are never pruned. Fenced like a commit."""

    @abc.abstractmethod
    def prune_anomalies(self, before: float, limit: int) -> tuple[str, ...]:
        """Delete up to `limit` anomalies that ended (fixed, ignored, expired) and last changed before
        `before` (`prunable_anomaly`), oldest first; their ids. An open anomaly is never pruned. Fenced like
        a commit."""

    @abc.abstractmethod
    def partition_states(self, plan_id: str) -> dict[TopicPartition, Mapping[str, Any]]: ...

    @abc.abstractmethod
    def original_configs(self) -> dict[tuple[ConfigResource, str], OriginalValue]: ...

    def last_seq(self) -> int:
        """The newest journal sequence number ever given (0: none); pruning never lowers it."""
        entries = self.journal(0)
        return entries[-1].seq if entries else 0

    @abc.abstractmethod
    def journal(
        self,
        after_seq: int = 0,
        *,
        plan_id: str | None = None,
        kinds: Iterable[EventKind] | None = None,
        limit: int | None = None,
    ) -> list[JournalEntry]:
        """Entries with seq > after_seq in seq order (seqs only grow, never reused)."""

    @abc.abstractmethod
    def step_entry(
        self, kind: EventKind, plan_id: str, tp: TopicPartition, step_index: int
    ) -> JournalEntry | None:
        """The idempotent step entry of that kind, if journaled: was this step already started/finished?"""

    @abc.abstractmethod
    def close(self) -> None: ...

    # Conveniences built on commit(): each is one transaction.

    def submit_plan(
        self, plan_id: str, plan: Mapping[str, Any], options: Mapping[str, Any] | None = None
    ) -> None:
        self.commit(WriteBatch().submit_plan(plan_id, plan, options or {}))

    def set_plan_status(self, plan_id: str, status: PlanStatus, error: str | None = None) -> None:
        self.commit(WriteBatch().set_status(plan_id, status, error))

    def append(self, *events: Event) -> tuple[int, ...]:
        batch = WriteBatch()
        for event in events:
            batch.append(event)
        return self.commit(batch).seqs

    def record_original(self, resource: ConfigResource, key: str, value: str | None) -> bool:
        """True when this was the first recording (an existing original is never overwritten)."""
        return bool(self.commit(WriteBatch().record_original(resource, key, value)).recorded_originals)

    def active_plan(self) -> PlanRecord | None:
        active = self.list_plans(ACTIVE_STATUSES)
        return self.get_plan(active[0].id) if active else None

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def replayed_steps(entries: Sequence[JournalEntry]) -> list[tuple[str, TopicPartition, int]]:
    """(plan, partition, step) journaled as started more than once: must always be empty."""
    seen: set[tuple[str, TopicPartition, int]] = set()
    twice = []
    for entry in entries:
        if (
            entry.kind is EventKind.STEP_STARTED
            and entry.plan_id
            and entry.tp
            and entry.step_index is not None
        ):
            key = (entry.plan_id, entry.tp, entry.step_index)
            if key in seen:
                twice.append(key)
            seen.add(key)
    return twice
