"""What one transition of the machine sends out, gathered part by part and handed over in the safe order.

Each part of the machine adds what it has to say: lines said before the commit, rows and journal entries
and throttle originals for the one commit, lines said after it, and writes to Kafka. `effects` puts them
in the order the safety argument needs (effects.py): the commit before the writes it describes, throttle
writes before the steps and log-dir moves they throttle, a replica's log dir before the step that adds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from reassignd.engine.journal import Event
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.log_dir_moves import LogDirRequests
from reassignd.engine.run.effects import (
    Effect,
    Elect,
    Log,
    MoveLogDirs,
    Notify,
    Persist,
    Reassign,
    WriteThrottles,
)
from reassignd.engine.run.rows import PartitionRow
from reassignd.engine.throttle import ConfigWrite
from reassignd.model import TopicPartition


@dataclass
class Outbox:
    plan_id: str | None
    """The plan the lines and the commit are about (None: no plan's, e.g. leftover throttles)."""
    before: list[Effect] = field(default_factory=list)
    """Said before the commit."""
    rows: dict[TopicPartition, PartitionRow] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    status: PlanStatus | None = None
    summary: Mapping[str, Any] | None = None
    record_originals: tuple[tuple[str, str, str, str | None], ...] = ()
    forget_originals: tuple[tuple[str, str, str], ...] = ()
    written: tuple[tuple[str, str, str, tuple[str | None, ...]], ...] = ()
    after: list[Effect] = field(default_factory=list)
    """Said once the commit is made."""
    throttle_writes: tuple[ConfigWrite, ...] = ()
    reassign: dict[TopicPartition, tuple[int, ...] | None] = field(default_factory=dict)
    log_dirs: LogDirRequests = field(default_factory=LogDirRequests)
    elect: tuple[TopicPartition, ...] = ()

    @property
    def plan_fields(self) -> dict[str, str]:
        """The `plan` field of a log line about this plan (none without a plan)."""
        return {} if self.plan_id is None else {"plan": self.plan_id}

    @property
    def about(self) -> dict[str, str]:
        """The `plan_id` of a notification about this plan (none without a plan)."""
        return {} if self.plan_id is None else {"plan_id": self.plan_id}

    def journal(self, event: Event) -> None:
        self.events.append(event)

    def say(self, *effects: Log | Notify) -> None:
        self.after.extend(effects)

    def effects(self, *, commit: bool = True) -> tuple[Effect, ...]:
        """Everything, in order; `commit=False` for a transition that has nothing to commit by nature."""
        persist = Persist(
            self.plan_id,
            rows=MappingProxyType(self.rows),
            events=tuple(self.events),
            status=self.status,
            summary=self.summary,
            record_originals=self.record_originals,
            forget_originals=self.forget_originals,
            written=self.written,
        )
        out: list[Effect] = [*self.before, *([persist] if commit else []), *self.after]
        if self.throttle_writes:
            out.append(WriteThrottles(self.throttle_writes))
        if self.log_dirs:
            out.append(MoveLogDirs(MappingProxyType(self.log_dirs.all())))
        if self.reassign:
            out.append(Reassign(MappingProxyType(self.reassign)))
        if self.elect:
            out.append(Elect(self.elect))
        return tuple(out)
