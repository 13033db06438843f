"""What producers write while a fix would run: each partition's produce rate, measured from its leader's
log growth since the condition the fix answers began (Kafka reports no produce rate).

A fix's rehearsal without them counts none of the bytes written while it copies, and the operator's
`self.healing.max.duration.seconds` then judges a figure that can only be too short. Sizes are measured on
the cluster's clock (engine/cluster_clock.py), the clock the rehearsal counts and the throttles run on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from reassignd.engine import cluster_clock
from reassignd.engine.cluster_clock import ClusterTime
from reassignd.engine.progress import source_size
from reassignd.engine.tracking import produce_rates
from reassignd.model import ClusterSnapshot, TopicPartition

Readings = Mapping[TopicPartition, tuple[float, int]]
SHORTEST_SECONDS = 5.0
"""Growth over less than this is not a rate: two reads of one check, a few milliseconds apart."""


class ProduceRates:
    """The leader sizes read when the conditions being timed began (`onset`), and the cluster's clock."""

    def __init__(self) -> None:
        self.onset: Readings = {}
        self.clock: ClusterTime | None = None

    def clocked(self, snapshot: ClusterSnapshot, wall: float) -> ClusterSnapshot:
        """The snapshot without the clock its brokers answered, the clock kept (read asking CLOCK_KEYS)."""
        self.clock = cluster_clock.read(snapshot, wall, self.clock)
        return cluster_clock.without_clock(snapshot)

    def begin(self, snapshot: ClusterSnapshot) -> None:
        """The sizes `snapshot` carries become the onset, unless one is kept already."""
        if not self.onset:
            self.onset = self._readings(snapshot)

    def forget(self) -> None:
        """No condition is being timed any more: the next one measures from its own onset."""
        self.onset = {}

    def rated(self, snapshot: ClusterSnapshot) -> tuple[ClusterSnapshot, float]:
        """`snapshot` with each partition's produce rate since the onset, and the seconds measured over
        (0: no onset before this read, no rate)."""
        now = self._readings(snapshot)
        rates = produce_rates(self.onset, now)
        if not rates:
            return snapshot, 0.0
        window = max(t for t, _ in now.values()) - min(self.onset[tp][0] for tp in rates)
        if window < SHORTEST_SECONDS:
            return snapshot, 0.0
        updated = [
            replace(p, produce_bytes_per_sec=rates[tp])
            for tp, p in snapshot.partitions.items()
            if tp in rates
        ]
        return snapshot.with_partitions(updated), window

    def _readings(self, snapshot: ClusterSnapshot) -> dict[TopicPartition, tuple[float, int]]:
        at = self.clock.now if self.clock is not None else 0.0
        return {tp: (at, source_size(p)) for tp, p in snapshot.partitions.items() if p.has_sizes}
