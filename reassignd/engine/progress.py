"""Progress maths: bytes to move, bytes done, rate, ETA and stall detection.

Pure functions over snapshot figures and over time series the caller supplies (no clock here): the daemon
keeps a short history of `(time, figure)` samples per plan and per moving replica and passes it in.
Sizes come from DescribeLogDirs (`PartitionState.replica_sizes`); a replica's copy is its leader's size,
and a follower's bytes so far are its own size (capped at the leader's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reassignd.model import ClusterSnapshot, PartitionState, ReassignmentPlan


@dataclass(frozen=True, slots=True)
class Bytes:
    """Bytes still to copy for a partition or plan, and how much of the copies in flight is done."""

    to_move: int
    done: int

    @property
    def remaining(self) -> int:
        return max(0, self.to_move - self.done)

    def __add__(self, other: Bytes) -> Bytes:
        return Bytes(self.to_move + other.to_move, self.done + other.done)


def source_size(p: PartitionState) -> int:
    """The size a new replica must copy: the leader's log, else the largest known, else size_bytes."""
    leader = p.replica_sizes.get(p.leader)
    if leader is not None:
        return leader
    return max(p.replica_sizes.values(), default=p.size_bytes) or p.size_bytes


def partition_bytes(p: PartitionState, final: Sequence[int]) -> Bytes:
    """Bytes still to copy to reach `final`: the replicas not yet there, adding ones included."""
    size = source_size(p)
    settled = set(p.replicas) - set(p.adding)
    needed = [b for b in final if b not in settled]
    done = sum(min(size, p.replica_sizes.get(b, 0)) for b in needed if b in p.adding)
    return Bytes(size * len(needed), done)


def plan_bytes(snapshot: ClusterSnapshot, plan: ReassignmentPlan) -> Bytes:
    total = Bytes(0, 0)
    for tp, final in plan.targets.items():
        p = snapshot.partitions.get(tp)
        if p is not None:
            total = total + partition_bytes(p, final)
    return total


@dataclass(frozen=True, slots=True)
class Sample:
    """A figure at a time: e.g. cumulative bytes moved by the plan, or one follower's log size."""

    time: float
    value: float


def rate(samples: Sequence[Sample], window_seconds: float | None = None) -> float | None:
    """Least-squares slope (units/s) over the samples of the last window; None without two samples."""
    if window_seconds is not None and samples:
        start = samples[-1].time - window_seconds
        samples = [s for s in samples if s.time >= start]
    if len(samples) < 2:
        return None
    n = len(samples)
    mean_t = sum(s.time for s in samples) / n
    mean_v = sum(s.value for s in samples) / n
    var = sum((s.time - mean_t) ** 2 for s in samples)
    if var == 0:
        return None
    return sum((s.time - mean_t) * (s.value - mean_v) for s in samples) / var


def eta_seconds(remaining: float, bytes_per_second: float | None) -> float | None:
    """Seconds to finish at this rate; None when the rate is unknown or not positive."""
    if remaining <= 0:
        return 0.0
    if bytes_per_second is None or bytes_per_second <= 0:
        return None
    return remaining / bytes_per_second


@dataclass(frozen=True, slots=True)
class FollowerSample:
    """One adding replica observed at `time`: its log size and its partition's produce rate."""

    time: float
    follower_bytes: int
    leader_bytes: int
    produce_bytes_per_sec: float


def follower_growth(samples: Sequence[FollowerSample], window_seconds: float) -> float | None:
    """Bytes/s one adding replica grew over the last window (least squares); None without two samples.

    Only the window's samples are converted: a long copy keeps hundreds, and this runs for every copy in
    flight every cycle.
    """
    if not samples:
        return None
    start = samples[-1].time - window_seconds
    recent = []
    for s in reversed(samples):
        if s.time < start:
            break
        recent.append(Sample(s.time, s.follower_bytes))
    return rate(recent)


def move_eta_seconds(last: FollowerSample, growth: float | None) -> float | None:
    """Seconds until one adding replica catches up at its observed pace (`growth`, follower_growth): its
    lag over the rate the lag shrinks (growth minus the produce rate). None while the pace is unknown or
    the lag does not shrink.

    A plan's aggregate rate hides its tail: when one large copy is left, the plan-wide average still counts
    the many copies that ran before, and remaining / average promises seconds for what takes minutes.
    """
    lag = last.leader_bytes - last.follower_bytes
    if lag <= 0:
        return 0.0
    if growth is None:
        return None
    shrink = growth - last.produce_bytes_per_sec
    return lag / shrink if shrink > 0 else None


def plan_eta_seconds(aggregate: float | None, moves: Sequence[float | None]) -> float | None:
    """The plan cannot end before its slowest move in flight, nor before its bytes at the plan's pace."""
    known = [m for m in moves if m is not None]
    if aggregate is None:
        return max(known) if known else None
    return max([aggregate, *known])


def is_stalled(samples: Sequence[FollowerSample], window_seconds: float) -> bool:
    """Stalled: over a full window the follower grew no faster than producers wrote.

    Then its lag never shrinks and the move cannot finish (the throttle is below the produce rate, the
    README's KIP-73 fact). A caught-up follower is never stalled; a window not yet observed is not either.
    """
    if not samples:
        return False
    last = samples[-1]
    if last.follower_bytes >= last.leader_bytes:
        return False
    start = last.time - window_seconds
    covering = [s for s in samples if s.time < start]
    window = ([covering[-1]] if covering else []) + [s for s in samples if s.time >= start]
    if not covering or len(window) < 2:
        return False
    first = window[0]
    elapsed = last.time - first.time
    catch_up = (last.follower_bytes - first.follower_bytes) / elapsed
    produce = sum(s.produce_bytes_per_sec for s in window) / len(window)
    return catch_up <= produce
