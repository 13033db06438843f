"""The daemon's clock: seconds since the epoch that never step (issue 31).

Every duration the daemon measures (a plan's rate, a copy's growth, the stall window, auto-throttle's
window, the ETA, how long a step ran) is a difference of two readings of this clock, and every stamp it
shows or stores (a plan's start and end, a journal entry, `since`) is a reading of it. It is the wall
clock read at the daemon's start, advanced by the monotonic clock: NTP stepping the system's clock, an
operator's `date -s` or a VM resumed from a snapshot change neither the durations nor the order of the
stamps. The wall clock is read again (`reanchor`) only while no plan runs, when no duration is being
measured: the stamps follow a stepped wall clock from the next plan on.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class SteadyClock:
    """The wall clock at the last anchoring plus the monotonic time since (both clocks injected)."""

    def __init__(
        self,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._wall, self._monotonic = wall, monotonic
        self._origin = 0.0
        self.reanchor()

    def reanchor(self) -> None:
        """Follow the wall clock again: only while nothing measures a duration (no plan runs)."""
        self._origin = self._wall() - self._monotonic()

    def __call__(self) -> float:
        return self._origin + self._monotonic()
