"""The plan-run machine's values: a run's state, its events, its settings (run.py has the machine)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final

from reassignd.engine.actions import ElectLeader, StartStep
from reassignd.engine.eta import EtaTerms
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.limits import Limits
from reassignd.engine.log_dir_moves import Key, LogDirMoves
from reassignd.engine.run.effects import (
    Answered,
    Effect,
)
from reassignd.engine.run.rows import PartitionRow
from reassignd.engine.state import (
    ExecutionState,
)
from reassignd.engine.throttle import (
    BROKER_KEYS,
    TOPIC_KEYS,
)
from reassignd.engine.throttle_book import ThrottleBook, ThrottleSync
from reassignd.engine.tracking import Tracking
from reassignd.model import ClusterSnapshot, ReassignmentPlan, TopicPartition

MIN_INSYNC: Final = "min.insync.replicas"
SNAPSHOT_TOPIC_KEYS: Final = (*TOPIC_KEYS, MIN_INSYNC)
SIZE_REFRESH_CYCLES: Final = 30
OUTCOMES_LISTED: Final = 1000
Replicas = tuple[int, ...]
StoredRow = Mapping[str, Any]
"""A partition's row as the store keeps it (rows.py decodes it)."""
_EMPTY: Mapping[Any, Any] = MappingProxyType({})


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
    log_dirs: Mapping[Key, str] = field(default_factory=lambda: _EMPTY)
    """AlterReplicaLogDirs sent with these writes."""


@dataclass(frozen=True, slots=True)
class RunState:
    """Everything the machine knows of one plan's run; rebuilt from the store and the cluster at start."""

    plan_id: str
    plan: ReassignmentPlan
    status: PlanStatus
    owned: Mapping[str, frozenset[int]]
    stored_rows: Mapping[TopicPartition, StoredRow] = field(default_factory=lambda: _EMPTY)
    """Rows read from the store at a (re)start; the first observation rebuilds the state from them."""
    stored_summary: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    execution: ExecutionState | None = None
    """Towards the plan's targets, or, once cancelling, towards the cancel's goals."""
    goals: Mapping[TopicPartition, Replicas] | None = None
    baseline: Mapping[TopicPartition, Replicas] = field(default_factory=lambda: _EMPTY)
    start_sizes: Mapping[TopicPartition, int] = field(default_factory=lambda: _EMPTY)
    rows: Mapping[TopicPartition, PartitionRow] = field(default_factory=lambda: _EMPTY)
    """The rows as the store has them now."""
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
    held_reverts: Mapping[TopicPartition, str] = field(default_factory=lambda: _EMPTY)
    """Cancelling: steps to revert that are left running for now, with why (cancel.unsafe_revert)."""
    log_dirs: LogDirMoves = field(default_factory=LogDirMoves)
    """The plan's moves between log dirs (log_dir_moves.py)."""
    eta_terms: EtaTerms | None = None
    """The last ETA's terms, which the next cycle updates where something changed (eta.py)."""

    @property
    def ended(self) -> bool:
        return self.status.terminal


@dataclass(frozen=True, slots=True)
class Transition:
    run: RunState
    effects: tuple[Effect, ...] = ()

    @property
    def awaits_answer(self) -> bool:
        return self.run.awaiting is not None


# -- building a run --------------------------------------------------------------------------------------


def effective_limits(run: RunState, limits: Limits) -> Limits:
    if run.status in (PlanStatus.RUNNING, PlanStatus.CANCELLING):
        return limits
    return replace(limits, parallel_partition_count=0)  # paused: nothing new starts
