"""A broker's replication quota as Kafka measures it: a sampled byte rate, checked before each fetch.

Kafka (apache/kafka 4.x) throttles reassignment traffic with one ReplicationQuotaManager per broker and
kind, leader, follower and alter-log-dirs
(server/src/main/java/org/apache/kafka/server/quota/ReplicationQuotaManager.java): a Sensor with a
SimpleRate over `replication.quota.window.num` samples of `replication.quota.window.size.seconds` (11 of
1 s by default) and an upper-bound Quota at the configured rate. A fetch of a throttled replica that is not
in sync goes ahead only while the measured rate is not above the bound (`isQuotaExceeded`:
RemoteLeaderEndPoint.shouldFollowerThrottle on the follower, ReplicaManager.shouldLeaderThrottle on the
leader, LocalLeaderEndPoint for copies between log dirs), and then brings up to `replica.fetch.max.bytes`
per partition; the bytes are recorded afterwards (ReplicaFetcherThread.processPartitionData,
KafkaApis.sizeOfThrottledPartitions). So the quota lets data through in grants: at a bound of 0, one grant
per partition and fetch each time the window has emptied, 11 s after its last record (measured on a 4.4
broker: 983,266 bytes every 11.0-11.5 s).

`QuotaWindow` is that sensor: SampledStat's samples (record, purge of samples whose last event is
`num * size` old, the overlap slot), SimpleRate's window (from the oldest sample's start, at least one
sample long) and Quota.acceptable (value <= bound), in seconds instead of milliseconds. `opens_at` solves
when a closed quota opens again if nothing more is recorded.
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


class QuotaWindow:
    """One replication quota's sensor: SampledStat + SimpleRate (clients/.../metrics/stats/)."""

    __slots__ = ("_current", "_samples", "num", "size")

    def __init__(self, num: int = 11, size: float = 1.0) -> None:
        self.num = max(1, num)  # replication.quota.window.num
        self.size = size  # replication.quota.window.size.seconds
        self._samples: list[_Sample] = []
        self._current = 0

    @property
    def expiry(self) -> float:
        """Seconds after its last record a sample stops counting (SampledStat.purgeObsoleteSamples)."""
        return self.num * self.size

    def record(self, value: float, now: float) -> None:
        """SampledStat.record: into the current sample, or the next slot once the current one is complete."""
        if not self._samples:
            self._samples.append(_Sample(now))
        sample = self._samples[self._current]
        if now - sample.start >= self.size - _TOLERANCE:
            self._current = (self._current + 1) % (self.num + 1)  # one extra slot for the overlap
            if self._current >= len(self._samples):
                sample = _Sample(now)
                self._samples.append(sample)
            else:
                sample = self._samples[self._current]
                sample.reset(now)
        sample.value += value
        sample.last = now

    def seed(self, rate: float, now: float) -> None:
        """As if `rate` bytes/s had been recorded evenly over the last `num` samples: the history of a quota
        that let data through continuously until now (used when the model switches it to grants)."""
        self._samples = []
        for i in range(self.num):
            start = now - (self.num - i) * self.size
            sample = _Sample(start)
            sample.value = rate * self.size
            sample.last = start + self.size - _TOLERANCE
            self._samples.append(sample)
        self._current = self.num - 1

    def _purged_at(self, last: float, now: float) -> float:
        """When a sample last `last` was last reset by a purge before `now`. Brokers measure at every fetch,
        so a sample is purged the moment it expires, and an empty one again each `expiry` after."""
        return last + self.expiry * math.floor((now - last) / self.expiry + _TOLERANCE)

    def _measure(self, samples: list[tuple[float, float, float]], now: float) -> tuple[float, float]:
        total = 0.0
        oldest = math.inf
        for start, last, value in samples:
            if now - last >= self.expiry - _TOLERANCE:  # purged: an empty sample since then
                oldest = min(oldest, self._purged_at(last, now))
                continue
            total += value
            oldest = min(oldest, start)
        return total, (now if oldest == math.inf else oldest)

    def rate(self, now: float) -> float:
        """SimpleRate.measure: bytes in the live samples over the time since the oldest one started."""
        for s in self._samples:  # the purge a measure does (SampledStat.purgeObsoleteSamples)
            if now - s.last >= self.expiry - _TOLERANCE:
                s.reset(self._purged_at(s.last, now))
        total, oldest = self._measure([(s.start, s.last, s.value) for s in self._samples], now)
        return total / max(now - oldest, self.size)

    def exceeded(self, now: float, bound: float) -> bool:
        """ReplicationQuotaManager.isQuotaExceeded: Quota.upperBound(bound) rejects a rate above it."""
        return self.rate(now) > bound * (1 + _TOLERANCE)

    def opens_at(self, now: float, bound: float) -> float:
        """The earliest time from `now` at which the quota is no longer exceeded, if nothing more is
        recorded: between two purges the measured rate only falls (its window grows), and each purge drops a
        sample's bytes; math.inf for a negative bound."""
        if bound < 0:
            return math.inf
        samples = [(s.start, s.last, s.value) for s in self._samples]
        t = now
        while True:
            total, oldest = self._measure(samples, t)
            if total <= bound * max(t - oldest, self.size) * (1 + _TOLERANCE):
                return t
            next_purge = min(
                (self._purged_at(last, t) + self.expiry for _start, last, _value in samples), default=math.inf
            )
            if bound > 0:
                when = oldest + total / bound
                if when < next_purge:
                    return max(t, when)
            if next_purge == math.inf:
                return math.inf
            t = next_purge
