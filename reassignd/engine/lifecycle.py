"""A plan's lifecycle: its statuses and the one table of changes between them.

The status owns its table, as Cruise Control's `ExecutionTask` owns its valid transfers: the plan-run
machine asks it which command moves a plan where, the controller starts queued plans by it, and every store
checks each status it writes against it (`PlanStatus.check`)::

    queued ──start──> running ──pause──> paused ──resume──> running
       │                 │                  │
       │                 ├──cancel──────────┴──cancel──> cancelling ──end──> cancelled
       │                 └──end──> completed
       └──cancel──> cancelled

`end` is the machine's own: every partition ended and our throttles restored (run/answering.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final


class IllegalTransitionError(ValueError):
    """A status change the lifecycle table does not list (a store refuses to write it)."""


class CommandRefused(ValueError):
    """A lifecycle command that the plan's status does not allow (e.g. resume a running plan)."""


class PlanStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    CANCELLING = "cancelling"
    COMPLETED = "completed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return not _NEXT[self]

    @property
    def active(self) -> bool:
        """Taken by the plan-run machine: started and not ended."""
        return self is not PlanStatus.QUEUED and not self.terminal

    def change_to(self, new: PlanStatus) -> Change | None:
        return _BY_ENDS.get((self, new))

    def check(self, plan_id: str, new: PlanStatus) -> Change:
        change = self.change_to(new)
        if change is None:
            raise IllegalTransitionError(f"plan {plan_id}: cannot go from {self.value} to {new.value}")
        return change

    def command(self, plan_id: str, verb: str) -> Change:
        """The change an operator's `verb` makes from this status (CommandRefused when none)."""
        if verb not in COMMANDS:
            raise CommandRefused(f"unknown command {verb!r}")
        change = _BY_COMMAND.get((self, verb))
        if change is None:
            raise CommandRefused(f"plan {plan_id} is {self.value}: cannot {verb}")
        return change


@dataclass(frozen=True, slots=True)
class Change:
    source: PlanStatus
    target: PlanStatus
    by: str
    """What makes it: an operator's command (pause, resume, cancel), the controller (start) or the
    plan-run machine (end)."""
    event: str
    """The journal event and the notification of the change."""


LIFECYCLE: Final = (
    Change(PlanStatus.QUEUED, PlanStatus.RUNNING, "start", "plan.started"),
    Change(PlanStatus.QUEUED, PlanStatus.CANCELLED, "cancel", "plan.cancelled"),
    Change(PlanStatus.RUNNING, PlanStatus.PAUSED, "pause", "plan.paused"),
    Change(PlanStatus.PAUSED, PlanStatus.RUNNING, "resume", "plan.resumed"),
    Change(PlanStatus.RUNNING, PlanStatus.CANCELLING, "cancel", "plan.cancelling"),
    Change(PlanStatus.PAUSED, PlanStatus.CANCELLING, "cancel", "plan.cancelling"),
    Change(PlanStatus.RUNNING, PlanStatus.COMPLETED, "end", "plan.completed"),
    Change(PlanStatus.CANCELLING, PlanStatus.CANCELLED, "end", "plan.cancelled"),
)
"""The table: every change a plan's status can make, and nothing else."""

COMMANDS: Final = frozenset({"pause", "resume", "cancel"})
"""The commands an operator gives a plan the machine runs (a queued plan's cancel is the controller's)."""

_NEXT: Final[Mapping[PlanStatus, frozenset[PlanStatus]]] = MappingProxyType(
    {s: frozenset(c.target for c in LIFECYCLE if c.source is s) for s in PlanStatus}
)
TRANSITIONS: Final = _NEXT
"""Per status, the statuses it may change to (the table, read by source)."""
_BY_ENDS: Final = MappingProxyType({(c.source, c.target): c for c in LIFECYCLE})
_BY_COMMAND: Final = MappingProxyType(
    {(c.source, c.by): c for c in LIFECYCLE if c.by in COMMANDS and c.source.active}
)
