"""What the machine persists per partition: one typed row, with its one encoder and one decoder.

A row is what a restarted daemon needs of a partition, beside the plan and a fresh snapshot: its progress
(state.py: status and step, and for a step in flight its target, source and leader), the replicas it had
before the plan and its size then (progress counts from them), its goal once cancelling, and when its step
in flight started. The store keeps the encoded row and never reads inside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reassignd.engine.state import ENDED, MOVING, PartitionProgress, Status
from reassignd.model import NO_LEADER, InvalidInputError, Problem, TopicPartition

Replicas = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PartitionRow:
    tp: TopicPartition
    status: Status
    step: int
    target: Replicas = ()
    source: Replicas = ()
    leader: int = NO_LEADER
    moves_leadership: bool = False
    """`target` to `moves_leadership`: the step in flight (a moving status only)."""
    baseline: Replicas | None = None
    """The replicas before the plan, once known; `start_size` is the partition's size then."""
    start_size: int = 0
    goal: Replicas | None = None
    """Cancelling: the replicas the partition goes back to (or on to)."""
    started_at: float | None = None
    """When the step in flight started (a moving status only)."""

    @classmethod
    def of(
        cls,
        tp: TopicPartition,
        rec: PartitionProgress,
        *,
        baseline: Replicas | None,
        start_size: int,
        goal: Replicas | None,
        started_at: float | None,
    ) -> PartitionRow:
        """The row of a partition's progress: what a restart needs of it, and nothing more."""
        start_size = start_size if baseline is not None else 0
        if rec.status not in MOVING:
            return cls(tp, rec.status, rec.step, baseline=baseline, start_size=start_size, goal=goal)
        return cls(
            tp,
            rec.status,
            rec.step,
            rec.target,
            rec.source,
            rec.leader,
            rec.moves_leadership,
            baseline,
            start_size,
            goal,
            started_at,
        )

    @property
    def progress(self) -> PartitionProgress:
        """The partition's progress after a restart: a step in flight and an end as written; waiting and
        external partitions come back pending, to be checked again against the cluster."""
        if self.status in MOVING:
            return PartitionProgress(
                self.status,
                self.step,
                target=self.target,
                source=self.source,
                leader=self.leader,
                moves_leadership=self.moves_leadership,
            )
        return PartitionProgress(self.status if self.status in ENDED else Status.PENDING, self.step)

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "status": self.status.value,
            "step": self.step,
        }
        if self.status in MOVING:
            row.update(
                target=list(self.target),
                source=list(self.source),
                leader=self.leader,
                moves_leadership=self.moves_leadership,
            )
        if self.baseline is not None:
            row["from"] = list(self.baseline)
            row["size"] = self.start_size
        if self.goal is not None:
            row["goal"] = list(self.goal)
        if self.started_at is not None:
            row["started_at"] = self.started_at
        return row

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> PartitionRow:
        """Raises KeyError, TypeError or ValueError on a malformed row."""
        status = Status(row["status"])
        moving = status in MOVING
        started = row.get("started_at")
        return cls(
            TopicPartition(str(row["topic"]), int(row["partition"])),
            status,
            int(row["step"]),
            _replicas(row["target"]) if moving else (),
            _replicas(row["source"]) if moving else (),
            int(row["leader"]) if moving else NO_LEADER,
            bool(row["moves_leadership"]) if moving else False,
            _replicas(row["from"]) if "from" in row else None,
            int(row.get("size", 0)) if "from" in row else 0,
            _replicas(row["goal"]) if "goal" in row else None,
            None if started is None else float(started),
        )


def _replicas(brokers: Any) -> Replicas:
    return tuple(int(b) for b in brokers)


def decoded_rows(
    stored: Mapping[TopicPartition, Mapping[str, Any]], targets: Mapping[TopicPartition, Any]
) -> dict[TopicPartition, PartitionRow]:
    """The store's rows of a plan, each decoded and checked to be of the plan: all of them, or an
    InvalidInputError listing every row that is not."""
    problems: list[Problem] = []
    rows: dict[TopicPartition, PartitionRow] = {}
    for index, raw in enumerate(stored[tp] for tp in sorted(stored)):
        where = f"partitions[{index}]"
        try:
            row = PartitionRow.from_json(raw)
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(Problem(where, "(entry)", f"malformed: {exc!r} in {dict(raw)!r}"))
            continue
        if row.tp not in targets:
            problems.append(Problem(where, "partition", f"{row.tp} is not in the plan"))
            continue
        rows[row.tp] = row
    if problems:
        raise InvalidInputError("execution state", problems)
    return rows
