"""A broker's replication quota as Kafka measures it: a sampled byte rate, checked before each fetch.

Kafka (apache/kafka 4.x) throttles reassignment traffic with one ReplicationQuotaManager per broker and
kind, leader, follower and alter-log-dirs
(server/src/main/java/org/apache/kafka/server/quota/ReplicationQuotaManager.java): a Sensor with a
SimpleRate over `replication.quota.window.num` samples of `replication.quota.window.size.seconds` (11 of
1 s by default) and an upper-bound Quota at the configured rate. A fetch of a throttled replica that is not
in sync goes ahead only while the measured rate is not above the bound (`isQuotaExceeded`:
RemoteLeaderEndPoint.shouldFollowerThrottle on the follower, ReplicaManager.shouldLeaderThrottle on the
leader, LocalLeaderEndPoint for copies between log dirs), and then brings up to `replica.fetch.max.bytes`
per partition; the bytes are recorded afterwards, in-sync replication of throttled partitions included
(ReplicaFetcherThread.processPartitionData, KafkaApis.sizeOfThrottledPartitions). So the quota is a window,
not a rate: while the bytes recorded over the last ~11 s stay under bound x window, fetches go ahead at full
speed; then nothing until old samples expire. Measured on a 4.4 broker: at a leader rate of 2 MB/s a move
took ~20 MB at once, then ~11 MB every ~11.5 s; at a follower rate of 0, 983,266 bytes every 11.0-11.5 s.

`QuotaWindow` is that sensor: SampledStat's samples (record, a new sample once the current one is a window
old, purge of samples whose last record is `num * size` old, the extra overlap slot), SimpleRate's window
(from the oldest sample's start, at least one sample long) and Quota.acceptable (value <= bound), in seconds
instead of milliseconds. Besides single records (a fetch's bytes) it takes a continuous `inflow`: bytes
recorded all the time at a rate, as in-sync replication and copies running at full speed are. A `warm`
window records something all the time even at no inflow: the leader's quota, to which every follower fetch
response records its size (KafkaApis.handleFetchRequest), so its window always spans 11-12 samples.
`opens_at` and `closes_at` solve when the measured rate next drops to, or rises above, a bound.
"""

from __future__ import annotations

import math

_TOLERANCE = 1e-9


class _Sample:
    __slots__ = ("last", "start", "value")

    def __init__(self, now: float) -> None:
        self.start = now
        self.last = now
        self.value = 0.0

    def reset(self, now: float) -> None:
        self.start = now
        self.last = now
        self.value = 0.0

    def copy(self) -> _Sample:
        other = _Sample(self.start)
        other.last, other.value = self.last, self.value
        return other


class QuotaWindow:
    """One replication quota's sensor: SampledStat + SimpleRate (clients/.../metrics/stats/)."""

    __slots__ = ("_current", "_samples", "_t", "inflow", "num", "size", "warm")

    def __init__(self, num: int = 11, size: float = 1.0, *, warm: bool = False, now: float = 0.0) -> None:
        self.num = max(1, num)  # replication.quota.window.num
        self.size = size  # replication.quota.window.size.seconds
        self.warm = warm
        self.inflow = 0.0  # bytes/s recorded continuously from `_t` on
        self._t = now
        self._samples: list[_Sample] = []
        self._current = 0
        if warm:  # recording since long before now: a full ring of empty samples
            for i in range(self.num + 1):
                self._samples.append(_Sample(now - (self.num - i) * size))
            self._current = self.num
            for s in self._samples:
                s.last = min(now, s.start + size)

    @property
    def expiry(self) -> float:
        """Seconds after its last record a sample stops counting (SampledStat.purgeObsoleteSamples)."""
        return self.num * self.size

    def copy(self) -> QuotaWindow:
        other = QuotaWindow(self.num, self.size)
        other.warm, other.inflow, other._t, other._current = self.warm, self.inflow, self._t, self._current
        other._samples = [s.copy() for s in self._samples]
        return other

    # -- recording -----------------------------------------------------------------------------------------

    def _rotate(self, now: float) -> _Sample:
        """SampledStat.advance: the next of `num` + 1 slots, reset to start now."""
        self._current = (self._current + 1) % (self.num + 1)
        if self._current >= len(self._samples):
            self._samples.append(_Sample(now))
            self._current = len(self._samples) - 1
        else:
            self._samples[self._current].reset(now)
        return self._samples[self._current]

    def _advance(self, now: float) -> None:
        """Record the continuous inflow up to `now`, sample by sample."""
        t = self._t
        if now <= t:
            return
        self._t = now
        if not (self.inflow > 0 or self.warm):
            return
        if not self._samples:
            self._samples.append(_Sample(t))
            self._current = 0
        current = self._samples[self._current]
        if now - t > (self.num + 3) * self.size:  # far ahead: every slot is written again on the way
            base = current.start if t - current.start < self.size else t
            skipped = math.floor((now - base) / self.size) - (self.num + 2)
            if skipped > 0:
                t = base + skipped * self.size
                self._samples = [_Sample(t)]
                self._current = 0
        while t < now - _TOLERANCE:
            current = self._samples[self._current]
            if t - current.start >= self.size - _TOLERANCE:  # complete: this record starts the next one
                current = self._rotate(t)
            end = min(now, current.start + self.size)
            current.value += self.inflow * (end - t)
            current.last = end
            t = end

    def set_inflow(self, rate: float, now: float) -> None:
        """From `now` on, `rate` bytes/s are recorded continuously."""
        self._advance(now)
        self._t = max(self._t, now)
        self.inflow = max(0.0, rate)

    def record(self, value: float, now: float) -> None:
        """SampledStat.record: into the current sample, or the next slot once the current one is complete."""
        self._advance(now)
        if not self._samples:
            self._samples.append(_Sample(now))
            self._current = 0
        sample = self._samples[self._current]
        if now - sample.start >= self.size - _TOLERANCE:
            sample = self._rotate(now)
        sample.value += value
        sample.last = max(sample.last, now)

    # -- measuring -----------------------------------------------------------------------------------------

    def _purged_at(self, last: float, now: float) -> float:
        """When a sample last `last` was last reset by a purge before `now`. Brokers measure at every fetch,
        so a sample is purged the moment it expires, and an empty one again each `expiry` after."""
        return last + self.expiry * math.floor((now - last) / self.expiry + _TOLERANCE)

    def _totals(self, now: float) -> tuple[float, float]:
        """(bytes in the live samples, start of the oldest), as SimpleRate.measure sees them at `now` (the
        window must be recorded up to `now`)."""
        total = 0.0
        oldest = math.inf
        for s in self._samples:
            if now - s.last >= self.expiry - _TOLERANCE:  # purged: an empty sample since then
                oldest = min(oldest, self._purged_at(s.last, now))
                continue
            total += s.value
            oldest = min(oldest, s.start)
        return total, (now if oldest == math.inf else oldest)

    def rate(self, now: float) -> float:
        """SimpleRate.measure: bytes in the live samples over the time since the oldest one started."""
        self._advance(now)
        for s in self._samples:  # the purge a measure does (SampledStat.purgeObsoleteSamples)
            if now - s.last >= self.expiry - _TOLERANCE:
                s.reset(self._purged_at(s.last, now))
        total, oldest = self._totals(now)
        return total / max(now - oldest, self.size)

    def full_from(self, now: float) -> float:
        """When the window measured at `now` stops counting as one sample long: the oldest sample's start
        plus one sample (SimpleRate.windowSize). Before then more bytes only raise the measured rate."""
        w = self.copy()
        w._advance(now)
        return w._totals(now)[1] + self.size

    def resume(self, now: float) -> None:
        """The first measure after a time nobody measured (no throttled copy was fetched): expired samples
        are reset now, not when they expired, so the window starts afresh (one sample long)."""
        self._advance(now)
        for s in self._samples:
            if now - s.last >= self.expiry - _TOLERANCE:
                s.reset(now)

    def exceeded(self, now: float, bound: float) -> bool:
        """ReplicationQuotaManager.isQuotaExceeded: Quota.upperBound(bound) rejects a rate above it."""
        return self.rate(now) > bound * (1 + _TOLERANCE) + _TOLERANCE

    def opens_at(self, now: float, bound: float) -> float:
        """The earliest time from `now` at which the measured rate is not above `bound` (inflow going on)."""
        return self._first(now, bound, rising=False)

    def closes_at(self, now: float, bound: float) -> float:
        """The earliest time from `now` at which the measured rate reaches `bound` (inflow going on)."""
        return self._first(now, bound, rising=True)

    def _first(self, now: float, bound: float, rising: bool) -> float:
        """Piece by piece: between two breakpoints (a new sample, a purge) the bytes grow linearly with the
        inflow and the oldest start is fixed, so the rate is a ratio of linear functions, solved exactly."""
        if bound < 0:
            return now if rising else math.inf
        w = self.copy()
        w._advance(now)
        size = self.size
        flow = w.inflow if (w.inflow > 0 or w.warm) else 0.0
        t = now
        horizon = now + 3 * (self.num + 1) * size + size
        while t <= horizon:
            w._advance(t)
            total, oldest = w._totals(t)
            rate = total / max(t - oldest, size)
            above = rate > bound * (1 + _TOLERANCE) + _TOLERANCE
            if rising and (above or (flow > bound and rate >= bound * (1 - _TOLERANCE))):
                return t  # above it, or at it and about to pass it
            if not rising and rate <= bound * (1 + _TOLERANCE) + _TOLERANCE:
                return t
            current = w._current_sample()
            recording = flow > 0 or w.warm
            breaks = [
                w._purged_at(s.last, t) + self.expiry for s in w._samples if not (recording and s is current)
            ]
            if recording:  # the next sample starts a window after the current one (or now, if it is complete)
                rotation = current.start + size if current is not None else t
                breaks.append(rotation if rotation > t + _TOLERANCE else t + size)
            nxt = min((b for b in breaks if b > t + _TOLERANCE), default=math.inf)
            found = _solve(total, oldest, t, flow=flow, bound=bound, size=size, rising=rising)
            if found is not None and found < nxt:
                return max(t, found)
            if nxt == math.inf:
                return math.inf
            t = nxt
        return math.inf

    def _current_sample(self) -> _Sample | None:
        return self._samples[self._current] if self._samples else None


def _solve(
    total: float, oldest: float, t: float, *, flow: float, bound: float, size: float, rising: bool
) -> float | None:
    """The first s >= t with (total + flow (s - t)) / max(s - oldest, size) = bound, crossing the way asked,
    or None."""
    found: list[float] = []
    fixed_until = oldest + size  # the window counts as one sample long until then
    if rising and flow > 0 and t < fixed_until:
        s = t + (bound * size - total) / flow
        if t <= s <= fixed_until:
            found.append(s)
    start = max(t, fixed_until)
    # total + flow (s - t) = bound (s - oldest)
    if rising and flow > bound:
        s = (flow * t - total - bound * oldest) / (flow - bound)
        if s >= start:
            found.append(s)
    if not rising and bound > flow:
        s = (total - flow * t + bound * oldest) / (bound - flow)
        if s >= start:
            found.append(s)
    return min(found) if found else None
