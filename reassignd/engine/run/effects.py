"""What the plan-run machine (run.py) asks its executor to do, in order, and what it is told back.

The machine never does I/O. Each of its transitions returns an ordered tuple of effects; the executor (the
daemon's controller, the rehearsal driver, the dry run) carries them out in that order and answers the
ones that talk to Kafka with an `Answered` event. The order is the safety argument: state is persisted
before the writes it describes, throttles are written before the steps they throttle start, and a step is
journaled as started in the same commit that records Kafka accepted it. A crash between any two effects
loses nothing the next start cannot rebuild from the store and the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from reassignd.engine.journal import Event
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.run.rows import PartitionRow
from reassignd.engine.throttle import ConfigWrite
from reassignd.model import TopicPartition

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Persist:
    """One atomic commit to the store: all of it, or (on a crash or a fenced leader) none of it."""

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
    """AlterReplicaLogDirs: each (partition, broker) replica to the log dir named, sent to its broker;
    answered per replica (None: accepted, else Kafka's error)."""

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


@dataclass(frozen=True, slots=True)
class Answered:
    """What Kafka said to the writes of the last transition; None where that kind was not sent."""

    now: float
    reassign: Mapping[TopicPartition, str | None] | None = None
    throttles: Mapping[tuple[str, str], str] | None = None
    """Resources (type, name) whose write failed, with the error."""
    elect: Mapping[TopicPartition, str | None] | None = None
    log_dirs: Mapping[tuple[TopicPartition, int], str | None] | None = None
