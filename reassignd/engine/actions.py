"""What a decision asks the daemon to do, and what it reports."""

from __future__ import annotations

from dataclasses import dataclass

from reassignd.engine.state import ExecutionState, Status, WaitReason
from reassignd.model import TopicPartition

__all__ = ["Decision", "ElectLeader", "StartStep", "Waiting"]


@dataclass(frozen=True, slots=True)
class StartStep:
    """Send `target` (in this order) to AlterPartitionReassignments for `tp`."""

    tp: TopicPartition
    target: tuple[int, ...]
    step_index: int
    moves_leadership: bool
    source: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    leader: int
    min_insync_extra: int = 0


@dataclass(frozen=True, slots=True)
class ElectLeader:
    """Run a preferred-leader election for `tp`; `leader` is the replica expected to win."""

    tp: TopicPartition
    leader: int
    reason: str
    """"step": the new preferred leader is in sync; "finished": the plan's target reached; "source": a
    balanced source takes the lead before its copies start (sources.py)."""


@dataclass(frozen=True, slots=True)
class Waiting:
    tp: TopicPartition
    reason: WaitReason
    detail: str


@dataclass(frozen=True, slots=True)
class Decision:
    state: ExecutionState
    start: tuple[StartStep, ...]
    elect: tuple[ElectLeader, ...]
    waiting: tuple[Waiting, ...]
    completed: tuple[TopicPartition, ...]
    """Steps that completed since the last decision."""
    finished: tuple[TopicPartition, ...]
    external: tuple[TopicPartition, ...]
    """Partitions reassigned by someone else: reported, never touched."""
    aborted: tuple[TopicPartition, ...]
    """In-flight steps that ended without reaching their target (cancelled): they start over."""
    examined: int
    dropped: tuple[TopicPartition, ...] = ()
    """Partitions whose topic was deleted (`ClusterSnapshot.deleted_topics`): ended, nothing left to move."""
    recovered: tuple[TopicPartition, ...] = ()
    """Steps written as starting before a restart that Kafka shows were sent: now in flight."""

    def summary(self) -> str:
        counts = self.state.counts
        return (
            f"started {len(self.start)}, completed {len(self.completed)}, elect {len(self.elect)}; "
            f"in flight {counts[Status.IN_FLIGHT] + counts[Status.STARTING]}, "
            f"pending {counts[Status.PENDING]}, blocked {counts[Status.BLOCKED]}, "
            f"external {counts[Status.EXTERNAL]}, done {counts[Status.DONE]}/{len(self.state.plan)}"
            + (f", dropped {counts[Status.DROPPED]} (topic deleted)" if counts[Status.DROPPED] else "")
        )
