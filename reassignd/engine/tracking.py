"""A plan's progress over time, as an immutable value: fixed totals, a percentage that never falls, stalls.

`progress.py` has the maths over samples; this keeps the samples between cycles (bounded by the stall
window) and the figures operators read:

- `total_bytes` is fixed when the plan starts: each partition's size then, times the replicas it gains.
  Producers keep writing while a plan runs; what they add shows apart, as `grown_bytes`.
- `percent` counts that fixed work done: a finished copy counts its start size, a copy in flight its
  share copied so far. It is monotonic (a stalled copy's share may shrink; the figure keeps its best).
- a partition dropped with its topic counts as dropped: its work leaves the total the percentage is of.
- `done_bytes` is that work done, in bytes: the percentage of the total less the dropped work, so the two
  always agree and neither falls.
- `moved_bytes` is what was really copied (finished copies at their size then, plus followers so far),
  at its highest: a follower that cannot be read (its broker down) or is removed (a cancel) does not
  un-copy what it received, so the figure never falls and the rate, its slope, is never negative.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from reassignd.engine.progress import (
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
from reassignd.model import ClusterSnapshot, PartitionState, TopicPartition, copy_of

CopyKey = tuple[TopicPartition, int]
_EMPTY: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class Work:
    """A partition's share of the plan's fixed work: its size at the start, the replicas it gains."""

    size: int
    gains: frozenset[int]

    @property
    def bytes(self) -> int:
        return self.size * len(self.gains)


@dataclass(frozen=True, slots=True)
class Tracking:
    window_seconds: float = 300.0
    work: Mapping[TopicPartition, Work] = field(default_factory=lambda: _EMPTY)
    total_bytes: int = 0
    credit: Mapping[TopicPartition, float] = field(default_factory=lambda: _EMPTY)
    credit_total: float = 0.0
    dropped: frozenset[TopicPartition] = frozenset()
    dropped_bytes: float = 0.0
    percent: float = 0.0
    finished_bytes: int = 0
    """Bytes of finished copies, each at its size when it finished."""
    moved_best: int = 0
    """The highest `moved_bytes` so far."""
    remaining: Mapping[TopicPartition, tuple[int, int]] = field(default_factory=lambda: _EMPTY)
    """Per partition (bytes still to copy now, bytes of it done by copies in flight)."""
    remaining_total: tuple[int, int] = (0, 0)
    plan_samples: tuple[Sample, ...] = ()
    copies: Mapping[CopyKey, tuple[FollowerSample, ...]] = field(default_factory=lambda: _EMPTY)
    leaders: Mapping[TopicPartition, tuple[Sample, ...]] = field(default_factory=lambda: _EMPTY)
    stalled: tuple[StalledMove, ...] = ()
    eta: float | None = None
    eta_reason: str = ""
    rate: float | None = None
    slowest_copy: float | None = None
    """Seconds until the slowest copy in flight catches up at its observed pace (None: not known)."""
    seen_in: Mapping[int, float] = field(default_factory=lambda: _EMPTY)
    """Bytes/s the copies into each broker grew over the window, together (its rate, when unthrottled)."""
    seen_out: Mapping[int, float] = field(default_factory=lambda: _EMPTY)
    produce: Mapping[TopicPartition, float] = field(default_factory=lambda: _EMPTY)
    """Produce rates of the partitions watched, from their leaders' growth."""

    # -- figures ------------------------------------------------------------------------------------------

    @property
    def copied_now(self) -> int:
        """Finished copies plus what the followers in flight hold now (falls when one cannot be read)."""
        return self.finished_bytes + self.remaining_total[1]

    @property
    def moved_bytes(self) -> int:
        return max(self.moved_best, self.copied_now)

    @property
    def done_bytes(self) -> int:
        """The fixed work done: `percent` of the total less the dropped work."""
        return round(self.percent / 100.0 * max(0.0, self.total_bytes - self.dropped_bytes))

    @property
    def remaining_bytes(self) -> int:
        return max(0, self.remaining_total[0] - self.remaining_total[1])

    @property
    def grown_bytes(self) -> int:
        """What producers added to the copies since the start (beyond the fixed total)."""
        return max(0, self.copied_now + self.remaining_bytes - self.total_bytes + int(self.dropped_bytes))

    @property
    def stalled_keys(self) -> frozenset[CopyKey]:
        return frozenset((m.tp, m.broker) for m in self.stalled)


def started(
    window_seconds: float,
    baseline: Mapping[TopicPartition, tuple[int, ...]],
    targets: Mapping[TopicPartition, tuple[int, ...]],
    sizes: Mapping[TopicPartition, int],
    *,
    finished_bytes: int = 0,
    moved_bytes: int = 0,
    percent: float = 0.0,
) -> Tracking:
    """The fixed work of a plan: `sizes` are the partitions' sizes when it started (restored from the store
    after a restart, with the figures persisted then)."""
    gains: dict[frozenset[int], frozenset[int]] = {}  # one set per distinct gain: a few, for 100,000
    work = {}
    for tp, final in targets.items():
        gained = frozenset(final).difference(baseline.get(tp, ()))
        work[tp] = Work(sizes.get(tp, 0), gains.setdefault(gained, gained))
    return Tracking(
        window_seconds=window_seconds,
        work=MappingProxyType(work),
        total_bytes=sum(w.bytes for w in work.values()),
        finished_bytes=finished_bytes,
        moved_best=moved_bytes,
        percent=percent,
    )


def _credit(work: Work, p: PartitionState, done: bool) -> float:
    if done or not work.gains:
        return float(work.bytes)
    settled = set(p.replicas) - set(p.adding)
    leader = source_size(p) or 1
    credit = float(work.size * len(work.gains & settled))
    for broker in work.gains & set(p.adding):
        credit += work.size * min(1.0, p.replica_sizes.get(broker, 0) / leader)
    return credit


def observe(
    tracking: Tracking,
    now: float,
    snapshot: ClusterSnapshot,
    targets: Mapping[TopicPartition, tuple[int, ...]],
    *,
    watched: Iterable[TopicPartition],
    recompute: Collection[TopicPartition] | None,
    done: Callable[[TopicPartition], bool],
    dropped: Iterable[TopicPartition] = (),
    finished_copies: int = 0,
    produce: Mapping[TopicPartition, float] | None = None,
    moving: bool = True,
    count_work: bool = True,
) -> Tracking:
    """The figures after one cycle. `recompute`: partitions whose state may have changed (None: all);
    `done`: partitions at their target; `finished_copies`: bytes of copies that finished this cycle;
    `moving`: False while paused (the rate and ETA hold still); `count_work`: False once cancelling (the
    plan's percentage stays where the cancel found it; `targets` are then the cancel's goals)."""
    credit = copy_of(tracking.credit)
    remaining = copy_of(tracking.remaining)
    credit_total = tracking.credit_total
    to_move, done_bytes = tracking.remaining_total
    dropped_now = set(dropped) - tracking.dropped
    dropped_bytes = tracking.dropped_bytes
    for tp in dropped_now:
        work = tracking.work.get(tp)
        if work is not None:
            dropped_bytes += work.bytes - credit.get(tp, 0.0)
        old = remaining.pop(tp, (0, 0))
        to_move, done_bytes = to_move - old[0], done_bytes - old[1]
    keys = targets.keys() if recompute is None or not tracking.remaining else recompute
    for tp in keys:
        final = targets.get(tp)
        p = snapshot.partitions.get(tp)
        if final is None or p is None or tp in tracking.dropped or tp in dropped_now:
            continue
        if count_work:
            work = tracking.work.get(tp, Work(0, frozenset()))
            new_credit = _credit(work, p, done(tp))
            credit_total += new_credit - credit.get(tp, 0.0)
            credit[tp] = new_credit
        figures = partition_bytes(p, final)
        old = remaining.get(tp, (0, 0))
        remaining[tp] = (figures.to_move, figures.done)
        to_move += figures.to_move - old[0]
        done_bytes += figures.done - old[1]
    denominator = tracking.total_bytes - dropped_bytes
    percent = 100.0 if denominator <= 0 else min(100.0, 100.0 * credit_total / denominator)
    updated = replace(
        tracking,
        credit=MappingProxyType(credit),
        credit_total=credit_total,
        dropped=tracking.dropped | dropped_now,
        dropped_bytes=dropped_bytes,
        percent=max(tracking.percent, round(percent, 3)),
        finished_bytes=tracking.finished_bytes + max(0, finished_copies),
        remaining=MappingProxyType(remaining),
        remaining_total=(to_move, done_bytes),
    )
    updated = replace(updated, moved_best=updated.moved_bytes)
    timed = _timed(updated, now, snapshot, set(watched), produce or {})
    if not moving:  # paused: the copies in flight are still watched; rate and ETA hold their last values
        return replace(
            timed,
            plan_samples=tracking.plan_samples,
            rate=tracking.rate,
            eta=tracking.eta,
            eta_reason=tracking.eta_reason,
        )
    return timed


def _window(samples: tuple[Any, ...], now: float, window: float) -> tuple[Any, ...]:
    """The samples of the last window plus the one before it (what the maths needs), nothing older."""
    start = now - window
    keep = 0
    for index, sample in enumerate(samples):
        if sample.time < start:
            keep = index
    return samples[keep:]


def _timed(
    tracking: Tracking,
    now: float,
    snapshot: ClusterSnapshot,
    watched: set[TopicPartition],
    produce: Mapping[TopicPartition, float],
) -> Tracking:
    window = tracking.window_seconds
    plan_samples = _window((*tracking.plan_samples, Sample(now, tracking.moved_bytes)), now, window)
    speed = rate(list(plan_samples), window)
    if speed is not None:  # the samples never fall; a float's rounding must not say otherwise
        speed = max(0.0, speed)
    copies: dict[CopyKey, tuple[FollowerSample, ...]] = {}
    leaders: dict[TopicPartition, tuple[Sample, ...]] = {}
    stalled: list[StalledMove] = []
    etas: list[float | None] = []
    seen_in: dict[int, float] = {}
    seen_out: dict[int, float] = {}
    produced_by: dict[TopicPartition, float] = {}
    for tp in watched:
        p = snapshot.partitions.get(tp)
        if p is None or not p.adding:
            continue
        history = _window((*tracking.leaders.get(tp, ()), Sample(now, source_size(p))), now, window)
        leaders[tp] = history
        produced = produce.get(tp) or p.produce_bytes_per_sec or max(0.0, rate(list(history), window) or 0.0)
        produced_by[tp] = produced
        for broker in p.adding:
            if broker in p.isr:
                continue
            key = (tp, broker)
            sample = FollowerSample(now, p.replica_sizes.get(broker, 0), source_size(p), produced)
            samples = _window((*tracking.copies.get(key, ()), sample), now, window)
            copies[key] = samples
            growth = follower_growth(samples, window)
            etas.append(move_eta_seconds(sample, growth))
            if growth is not None and growth > 0:
                seen_in[broker] = seen_in.get(broker, 0.0) + growth
                seen_out[p.leader] = seen_out.get(p.leader, 0.0) + growth
            if is_stalled(samples, window):
                stalled.append(StalledMove(tp, broker, growth, produced))
    stalled.sort(key=lambda m: (m.tp, m.broker))
    return replace(
        tracking,
        plan_samples=plan_samples,
        copies=MappingProxyType(copies),
        leaders=MappingProxyType(leaders),
        stalled=tuple(stalled),
        rate=speed,
        eta=plan_eta_seconds(eta_seconds(tracking.remaining_bytes, speed), etas),
        slowest_copy=max((e for e in etas if e is not None), default=None),
        seen_in=MappingProxyType(seen_in),
        seen_out=MappingProxyType(seen_out),
        produce=MappingProxyType(produced_by),
    )


def produce_rates(
    before: Mapping[TopicPartition, tuple[float, int]], after: Mapping[TopicPartition, tuple[float, int]]
) -> dict[TopicPartition, float]:
    """Produce rate per partition from two size readings (time, leader size) of it: Kafka reports none."""
    rates = {}
    for tp, (t1, s1) in after.items():
        earlier = before.get(tp)
        if earlier is None or t1 <= earlier[0]:
            continue
        rates[tp] = max(0.0, (s1 - earlier[1]) / (t1 - earlier[0]))
    return rates
