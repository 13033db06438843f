"""The plan-run machine's values: a run's state, made of its parts' states, its events and settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

from reassignd.engine.actions import ElectLeader, StartStep
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.limits import Limits
from reassignd.engine.log_dir_moves import LogDirMoves, LogDirRequests
from reassignd.engine.run.auto_throttle import AutoThrottle, Boosts
from reassignd.engine.run.cancelling import Cancel
from reassignd.engine.run.effects import Answered, Effect
from reassignd.engine.run.progress import Progress
from reassignd.engine.run.reading import SIZE_REFRESH_CYCLES, Observed, Reading
from reassignd.engine.run.restart import PlanStart, Stored
from reassignd.engine.run.scheduling import Schedule
from reassignd.engine.state import ExecutionState
from reassignd.engine.throttle_book import ThrottleBook, ThrottleSync, Written
from reassignd.model import ClusterSnapshot, ReassignmentPlan, TopicPartition

OUTCOMES_LISTED: Final = 1000
_EMPTY: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Settings:
    limits: Limits
    auto_throttle: AutoThrottle | None = None
    size_refresh_cycles: int = SIZE_REFRESH_CYCLES


@dataclass(frozen=True, slots=True)
class Command:
    now: float
    verb: str


RunEvent = Observed | Answered | Command


@dataclass(frozen=True, slots=True)
class Awaiting:
    """The writes of a transition waiting for Kafka's answer."""

    stage: Literal["throttles", "writes", "elections"]
    """`throttles`: the throttle writes went out alone, the steps wait for their answer (throttles.py
    `held_back`); `writes`: the reassignments and log-dir moves (with the throttle writes when no step
    starts); `elections`: the cycle's elections."""
    view: ClusterSnapshot
    starts: tuple[StartStep, ...] = ()
    reverts: tuple[TopicPartition, ...] = ()
    elect: tuple[ElectLeader, ...] = ()
    sync: ThrottleSync | None = None
    log_dirs: LogDirRequests = field(default_factory=LogDirRequests)
    """AlterReplicaLogDirs sent with these writes."""
    reassign: Mapping[TopicPartition, tuple[int, ...] | None] = field(default_factory=lambda: _EMPTY)
    """`throttles` stage: the reassignments (steps and reverts) to send once the throttles are answered."""
    held: Mapping[TopicPartition, str] = field(default_factory=lambda: _EMPTY)
    """`writes` stage: the steps not sent, as their throttle could not be written (why)."""
    written: Written | None = None
    """`writes` stage: the throttle writes' outcome, when they were answered before (`throttles`)."""


@dataclass(frozen=True, slots=True)
class RunState:
    """Everything the machine knows of one plan's run, part by part; rebuilt from the store and the
    cluster at a (re)start (restart.py)."""

    plan_id: str
    plan: ReassignmentPlan
    status: PlanStatus
    owned: Mapping[str, frozenset[int]]
    """The plan's partitions by topic: the throttle entries that may be ours."""
    stored: Stored = field(default_factory=Stored)
    start: PlanStart = field(default_factory=PlanStart)
    reading: Reading = field(default_factory=Reading)
    schedule: Schedule = field(default_factory=Schedule)
    cancel: Cancel = field(default_factory=Cancel)
    progress: Progress = field(default_factory=Progress)
    throttles: ThrottleBook = field(default_factory=ThrottleBook)
    boosts: Boosts = field(default_factory=Boosts)
    log_dirs: LogDirMoves = field(default_factory=LogDirMoves)
    """The plan's moves between log dirs (log_dir_moves.py)."""
    awaiting: Awaiting | None = None
    withdraw: Mapping[TopicPartition, int] = field(default_factory=lambda: _EMPTY)
    """Steps in flight a re-target withdrew (partition: step index), reverted until Kafka has
    (retarget.py)."""

    @property
    def ended(self) -> bool:
        return self.status.terminal

    @property
    def execution(self) -> ExecutionState | None:
        return self.schedule.execution


@dataclass(frozen=True, slots=True)
class Transition:
    run: RunState
    effects: tuple[Effect, ...] = ()

    @property
    def awaits_answer(self) -> bool:
        return self.run.awaiting is not None
