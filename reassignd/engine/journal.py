"""The journal's entries: what happened to a plan, in the words the plan-run machine and the store share.

The machine says what to journal (`Persist.events`); the store appends each entry in the commit that
carries it, and refuses a second `step.started` or `step.finished` of one step (`idempotency_key`).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from reassignd.model import TopicPartition


class EventKind(enum.StrEnum):
    PLAN_SUBMITTED = "plan.submitted"
    PLAN_STARTED = "plan.started"
    PLAN_PAUSED = "plan.paused"
    PLAN_RESUMED = "plan.resumed"
    PLAN_CANCELLING = "plan.cancelling"
    PLAN_CANCELLED = "plan.cancelled"
    PLAN_COMPLETED = "plan.completed"
    STEP_STARTED = "step.started"
    STEP_FINISHED = "step.finished"
    STEP_CANCELLED = "step.cancelled"
    PARTITION_DROPPED = "partition.dropped"
    LEADER_ELECTED = "leader.elected"
    THROTTLE_SET = "throttle.set"
    THROTTLE_RESTORED = "throttle.restored"
    LIMITS_CHANGED = "limits.changed"
    STALL_DETECTED = "stall.detected"
    FOREIGN_CHANGE = "foreign.change"
    FOREIGN_CANCELLED = "foreign.cancelled"
    LOG_DIR_STARTED = "log_dir.started"
    LOG_DIR_PLACED = "log_dir.placed"
    LOG_DIR_CANCELLED = "log_dir.cancelled"
    LOG_DIR_FINISHED = "log_dir.finished"
    BROKER_DECOMMISSIONED = "broker.decommissioned"
    BROKER_RECOMMISSIONED = "broker.recommissioned"
    PLAN_RETARGETED = "plan.retargeted"
    ANOMALY = "anomaly"
    """Self-healing: an anomaly's state changed (daemon/healing.py)."""
    ERROR = "error"


IDEMPOTENT_STEP_EVENTS: Final = frozenset({EventKind.STEP_STARTED, EventKind.STEP_FINISHED})
"""Events that may appear at most once per (plan, partition, step): the journal's idempotency keys."""


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened, to append to the journal. `data` must be JSON-serialisable."""

    kind: EventKind
    plan_id: str | None = None
    tp: TopicPartition | None = None
    step_index: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    at: float | None = None  # seconds since the epoch; None: the store's clock at commit

    def __post_init__(self) -> None:
        if self.kind in IDEMPOTENT_STEP_EVENTS and (
            self.plan_id is None or self.tp is None or self.step_index is None
        ):
            raise ValueError(f"{self.kind.value} needs plan_id, tp and step_index")

    @property
    def idempotency_key(self) -> str | None:
        if self.kind not in IDEMPOTENT_STEP_EVENTS or self.tp is None:
            return None
        return json.dumps([self.kind.value, self.plan_id, self.tp.topic, self.tp.partition, self.step_index])
