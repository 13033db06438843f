"""Progress of the running plan over time: the short histories the engine's progress maths needs.

The engine's functions are pure over samples; this keeps the samples (bounded) between cycles, and derives
each partition's produce rate from its leader's growth when the cluster does not report one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reassignd.engine.progress import (
    Bytes,
    FollowerSample,
    Sample,
    eta_seconds,
    follower_growth,
    is_stalled,
    move_eta_seconds,
    partition_bytes,
    plan_eta_seconds,
    rate,
    source_size,
)
from reassignd.model import ClusterSnapshot, ReassignmentPlan, TopicPartition

HISTORY = 512


@dataclass(frozen=True)
class StalledMove:
    tp: TopicPartition
    broker: int
    catch_up_bytes_per_sec: float | None
    produce_bytes_per_sec: float

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "broker": self.broker,
            "catchup_bytes_per_sec": self.catch_up_bytes_per_sec,
            "produce_bytes_per_sec": self.produce_bytes_per_sec,
        }


@dataclass
class ProgressView:
    total_bytes: int = 0
    moved_bytes: int = 0
    remaining_bytes: int = 0
    bytes_per_sec: float | None = None
    eta_seconds: float | None = None
    stalled: tuple[StalledMove, ...] = ()
    newly_stalled: tuple[StalledMove, ...] = ()


@dataclass
class ProgressTracker:
    """Tracks one plan. `moved` counts bytes of finished copies, so it only grows across steps."""

    window_seconds: float = 300.0
    finished_bytes: int = 0
    _plan_samples: deque[Sample] = field(default_factory=lambda: deque(maxlen=HISTORY))
    _followers: dict[tuple[TopicPartition, int], deque[FollowerSample]] = field(default_factory=dict)
    _leaders: dict[TopicPartition, deque[Sample]] = field(default_factory=dict)
    _stalled: set[tuple[TopicPartition, int]] = field(default_factory=set)
    _bytes: dict[TopicPartition, Bytes] = field(default_factory=dict)
    _total: Bytes = field(default_factory=lambda: Bytes(0, 0))

    def step_finished(self, copied_bytes: int) -> None:
        self.finished_bytes += max(0, copied_bytes)

    def update(
        self,
        now: float,
        snapshot: ClusterSnapshot,
        plan: ReassignmentPlan,
        watched: Iterable[TopicPartition],
        *,
        recompute: Collection[TopicPartition] | None = None,
        sizes: Mapping[TopicPartition, tuple[int, Mapping[int, int]]] | None = None,
    ) -> ProgressView:
        """`recompute`: the partitions whose bytes may have changed (None: all); `sizes` fills in the
        sizes of partitions the snapshot read without them."""
        if recompute is None or not self._bytes:
            recompute = plan.targets.keys()
        for tp in recompute:
            final = plan.targets.get(tp)
            p = snapshot.partitions.get(tp)
            old = self._bytes.pop(tp, None)
            if old is not None:
                self._total = Bytes(self._total.to_move - old.to_move, self._total.done - old.done)
            if final is None or p is None:
                continue
            if not p.replica_sizes and sizes and tp in sizes:
                p = replace(p, size_bytes=sizes[tp][0], replica_sizes=sizes[tp][1])
            figures = partition_bytes(p, final)
            self._bytes[tp] = figures
            self._total = self._total + figures
        remaining = self._total
        moved = self.finished_bytes + remaining.done
        total = moved + remaining.remaining
        self._plan_samples.append(Sample(now, moved))
        speed = rate(list(self._plan_samples), self.window_seconds)
        stalled, newly, move_etas = self._stalls(now, snapshot, set(watched))
        return ProgressView(
            total_bytes=total,
            moved_bytes=moved,
            remaining_bytes=remaining.remaining,
            bytes_per_sec=speed,
            eta_seconds=plan_eta_seconds(eta_seconds(remaining.remaining, speed), move_etas),
            stalled=stalled,
            newly_stalled=newly,
        )

    def _stalls(
        self, now: float, snapshot: ClusterSnapshot, watched: set[TopicPartition]
    ) -> tuple[tuple[StalledMove, ...], tuple[StalledMove, ...], list[float | None]]:
        """(stalled moves, newly stalled ones, each watched copy's ETA)."""
        live: set[tuple[TopicPartition, int]] = set()
        stalled: list[StalledMove] = []
        newly: list[StalledMove] = []
        etas: list[float | None] = []
        for tp in watched:
            p = snapshot.partitions.get(tp)
            if p is None or not p.adding:
                continue
            leader_history = self._leaders.setdefault(tp, deque(maxlen=HISTORY))
            leader_history.append(Sample(now, source_size(p)))
            produce = p.produce_bytes_per_sec or max(
                0.0, rate(list(leader_history), self.window_seconds) or 0.0
            )
            for broker in p.adding:
                if broker in p.isr:
                    continue
                key = (tp, broker)
                live.add(key)
                history = self._followers.setdefault(key, deque(maxlen=HISTORY))
                history.append(FollowerSample(now, p.replica_sizes.get(broker, 0), source_size(p), produce))
                samples = list(history)
                growth = follower_growth(samples, self.window_seconds)
                etas.append(move_eta_seconds(samples[-1], growth))
                if is_stalled(samples, self.window_seconds):
                    move = StalledMove(tp, broker, growth, produce)
                    stalled.append(move)
                    if key not in self._stalled:
                        newly.append(move)
        self._stalled = {(m.tp, m.broker) for m in stalled}
        for key in set(self._followers) - live:
            del self._followers[key]
        for tp in set(self._leaders) - watched:
            del self._leaders[tp]
        return tuple(stalled), tuple(newly), etas
