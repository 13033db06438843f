"""What the plan-run machine (run.py) asks its executor to do, in order, and what it is told back.

The machine never does I/O. Each of its transitions returns an ordered tuple of effects; the executor (the
daemon's controller, the rehearsal driver, the dry run) carries them out in that order and answers the
ones that talk to Kafka with an `Answered` event. The order is the safety argument: state is persisted
before the writes it describes, throttles are written before the steps they throttle start, and a step is
journaled as started in the same commit that records Kafka accepted it. A crash between any two effects
loses nothing the next start cannot rebuild from the store and the cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from reassignd.engine.journal import Event
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.run.rows import PartitionRow
from reassignd.engine.throttle import ConfigWrite
from reassignd.model import TopicPartition

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Persist:
    """One atomic commit to the store: all of it, or (on a crash or a fenced leader) none of it."""

    plan_id: str | None = None
    """The plan whose rows, status and summary these are (None: no plan's, e.g. leftover throttles)."""
    rows: Mapping[TopicPartition, PartitionRow] = field(default_factory=lambda: _EMPTY)
    """Partition rows to write."""
    events: tuple[Event, ...] = ()
    status: PlanStatus | None = None
    """A new plan status (`completed`, `cancelled`): the store journals its event with it."""
    summary: Mapping[str, Any] | None = None
    """The plan's figures, kept apart from its body: what status shows once the plan has ended."""
    record_originals: tuple[tuple[str, str, str, str | None], ...] = ()
    """(resource type, name, config key, value before our first write; None: unset)."""
    forget_originals: tuple[tuple[str, str, str], ...] = ()
    written: tuple[tuple[str, str, str, tuple[str | None, ...]], ...] = ()
    """(resource type, name, config key, values our writes may have left): kept with the original."""

    def __bool__(self) -> bool:
        return bool(
            self.rows
            or self.events
            or self.status
            or self.summary is not None
            or self.record_originals
            or self.forget_originals
            or self.written
        )


@dataclass(frozen=True, slots=True)
class WriteThrottles:
    """IncrementalAlterConfigs, per resource; answered with the resources whose write failed."""

    writes: tuple[ConfigWrite, ...]


@dataclass(frozen=True, slots=True)
class Reassign:
    """AlterPartitionReassignments: a replica list starts a step, None reverts one (KIP-455 cancel);
    answered per partition (None: accepted, else Kafka's error)."""

    targets: Mapping[TopicPartition, tuple[int, ...] | None]


@dataclass(frozen=True, slots=True)
class MoveLogDirs:
    """AlterReplicaLogDirs: each (partition, broker) replica to the log dir named, sent to its broker before
    the cycle's reassignments (a replica a step adds is given its dir before the step creates it); answered
    per replica (None: accepted, else Kafka's error as "NAME: message")."""

    moves: Mapping[tuple[TopicPartition, int], str]


@dataclass(frozen=True, slots=True)
class Elect:
    """Preferred-leader elections; answered per partition."""

    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class Notify:
    """An event for subscribers (MQTT): never persisted, never waited for."""

    kind: str
    data: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, slots=True)
class Log:
    level: str  # debug | info | warning | error
    message: str
    fields: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)


Effect = Persist | WriteThrottles | Reassign | MoveLogDirs | Elect | Notify | Log
"""Effects the executor answers: WriteThrottles, Reassign, MoveLogDirs, Elect (in one `Answered`)."""

CARRIED_BY: Final[Mapping[type[Effect], str]] = MappingProxyType(
    {
        Persist: "persist",
        WriteThrottles: "write_throttles",
        Reassign: "reassign",
        MoveLogDirs: "move_log_dirs",
        Elect: "elect",
        Notify: "notify",
        Log: "log",
    }
)
"""The method an executor carries each kind of effect out with (it takes the effect, and returns
Kafka's answer for the answered kinds)."""
ANSWERED_AS: Final[Mapping[type[Effect], str]] = MappingProxyType(
    {WriteThrottles: "throttles", Reassign: "reassign", MoveLogDirs: "log_dirs", Elect: "elect"}
)


def carrier_of(executor: object, effect: Effect) -> Callable[[Any], Any] | None:
    """The executor's method for this kind of effect; None where it has none (a model persists nothing)."""
    method: Callable[[Any], Any] | None = getattr(executor, CARRIED_BY[type(effect)], None)
    return method


@dataclass(frozen=True, slots=True)
class Answered:
    """What Kafka said to the writes of the last transition; None where that kind was not sent."""

    now: float
    reassign: Mapping[TopicPartition, str | None] | None = None
    throttles: Mapping[tuple[str, str], str] | None = None
    """Resources (type, name) whose write failed, with the error."""
    elect: Mapping[TopicPartition, str | None] | None = None
    log_dirs: Mapping[tuple[TopicPartition, int], str | None] | None = None


@dataclass
class Answers:
    """Kafka's answers to one transition's effects, gathered as the executor carries them out."""

    by_kind: dict[str, Any] = field(default_factory=dict)

    def add(self, effect: Effect, answer: object) -> None:
        kind = ANSWERED_AS.get(type(effect))
        if kind is not None:
            self.by_kind[kind] = answer

    def answered(self, now: float) -> Answered:
        return Answered(now, **self.by_kind)
