"""The daemon's clock (clock.py): the wall clock's steps do not show in what it measures."""

from __future__ import annotations

from reassignd.daemon.clock import SteadyClock


def test_durations_follow_the_monotonic_clock_and_stamps_start_from_the_wall_clock() -> None:
    wall, mono = [1_800_000_000.0], [50.0]
    clock = SteadyClock(lambda: wall[0], lambda: mono[0])
    assert clock() == 1_800_000_000.0
    wall[0] -= 3600.0  # stepped back an hour
    mono[0] += 2.0
    assert clock() == 1_800_000_002.0
    clock.reanchor()  # nothing measured: stamps follow the wall clock again
    assert clock() == 1_799_996_400.0
