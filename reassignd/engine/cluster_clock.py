"""The cluster's clock: what rates are measured on, and how durations to come become wall-clock seconds.

Kafka's throttles are bytes per second of the brokers' clock, and producers write by it. On a real cluster
that is the wall clock. The simulator runs its clock faster than the wall clock (`reassignd sim
--time-scale 20`), and its brokers answer the clock and the scale as read-only broker configs asked for by
name (`reassignd.sim.clock.seconds`, `reassignd.sim.time.scale`; a real broker answers nothing for them).
Every rate the run measures (moved, produced, copied) is measured on the cluster's clock, so it is in the
throttles' unit and the ETA's maths compares like with like; the ETA, which counts the cluster's seconds,
is then divided by the scale to say wall-clock seconds. Measured on the daemon's clock instead, against
the simulator at 20x the rates read 20 times the throttles and the ETA counted simulated seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from reassignd import config_keys
from reassignd.model import ClusterSnapshot

CLOCK_KEYS = (config_keys.SIM_CLOCK_SECONDS, config_keys.SIM_TIME_SCALE)


@dataclass(frozen=True, slots=True)
class ClusterTime:
    """One reading of the cluster's clock, beside the wall-clock instant of the read."""

    wall: float
    now: float
    """The cluster's clock: the wall clock on a real cluster, the simulated clock on the simulator."""
    scale: float
    """Cluster seconds per wall second: 1 on a real cluster, 0 while the simulator is paused."""

    def to_wall(self, seconds: float) -> float | None:
        """`seconds` of the cluster's clock in wall seconds (None while the cluster's clock stands still)."""
        return None if self.scale <= 0 else seconds / self.scale


def read(snapshot: ClusterSnapshot, wall: float, last: ClusterTime | None) -> ClusterTime:
    """The cluster's clock at a read made at `wall`. A read whose brokers said nothing of it (a real
    cluster, or no broker's configs could be read) runs on from `last` at its scale: a clock that jumped
    between the simulator's and the wall clock would make every rate measured across the jump wrong."""
    clocks = _answered(snapshot, config_keys.SIM_CLOCK_SECONDS)
    scales = _answered(snapshot, config_keys.SIM_TIME_SCALE)
    if clocks and scales:
        return ClusterTime(wall, min(clocks), min(scales))
    if last is None:
        return ClusterTime(wall, wall, 1.0)
    return ClusterTime(wall, last.now + max(0.0, wall - last.wall) * last.scale, last.scale)


def without_clock(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """The snapshot as the engine's decisions see it: the clock is no broker's config."""
    if not any(key in configs for configs in snapshot.broker_configs.values() for key in CLOCK_KEYS):
        return snapshot
    brokers = {
        b: {k: v for k, v in configs.items() if k not in CLOCK_KEYS}
        for b, configs in snapshot.broker_configs.items()
    }
    return replace(snapshot, broker_configs=brokers)


def _answered(snapshot: ClusterSnapshot, key: str) -> list[float]:
    found = []
    for configs in snapshot.broker_configs.values():
        text = configs.get(key)
        if text is None:
            continue
        try:
            found.append(float(text))
        except ValueError:
            continue
    return found
