"""The auto-throttle part: a stalled move's brokers get one step more per stall window, up to the ceiling."""

from __future__ import annotations

import pytest

from reassignd import config_keys
from reassignd.engine.limits import Limits
from reassignd.engine.run.auto_throttle import AutoThrottle, Boosts, raised
from reassignd.engine.run.outbox import Outbox
from reassignd.engine.tracking import StalledMove, Tracking
from tests.engine.helpers import cluster, tp

LIMITS = Limits(leader_throttled_rate=100, follower_throttled_rate=100, stall_window_seconds=60.0)
AUTO = AutoThrottle(step=50, ceiling=180)
STALLED = Tracking(stalled=(StalledMove(tp(0), 3, 10.0, 20.0),))  # copy into 3, led by 1
SNAPSHOT = cluster(range(1, 5), {tp(0): (1, 2, 3)})


@pytest.mark.parametrize(
    ("before", "now", "rates"),
    [
        (
            Boosts(),
            1000.0,
            {
                1: {config_keys.LEADER_REPLICATION_THROTTLED_RATE: 150},
                3: {config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE: 150},
            },
        ),
        (
            Boosts(
                {
                    1: {config_keys.LEADER_REPLICATION_THROTTLED_RATE: 150},
                    3: {config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE: 150},
                },
                {1: 990.0, 3: 990.0},
            ),
            1000.0,
            None,
        ),
        (
            Boosts(
                {
                    1: {config_keys.LEADER_REPLICATION_THROTTLED_RATE: 150},
                    3: {config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE: 150},
                },
                {1: 900.0, 3: 900.0},
            ),
            1000.0,
            {
                1: {config_keys.LEADER_REPLICATION_THROTTLED_RATE: 180},
                3: {config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE: 180},
            },
        ),
        (
            Boosts(
                {
                    1: {config_keys.LEADER_REPLICATION_THROTTLED_RATE: 180},
                    3: {config_keys.FOLLOWER_REPLICATION_THROTTLED_RATE: 180},
                },
                {1: 900.0, 3: 900.0},
            ),
            1000.0,
            None,
        ),
    ],
    ids=["first raise", "within the window", "next window, capped", "at the ceiling"],
)
def test_raises(before: Boosts, now: float, rates: dict[int, dict[str, int]] | None) -> None:
    out = Outbox("p")
    after = raised(before, STALLED, SNAPSHOT, LIMITS, out, auto=AUTO, now=now)
    if rates is None:
        assert after is before and not out.events
        return
    assert {b: dict(r) for b, r in after.rates.items()} == rates
    assert set(after.at) == set(rates) and all(after.at[b] == now for b in rates)
    assert [e.data["broker"] for e in out.events] == sorted(rates)


@pytest.mark.parametrize(
    ("auto", "tracking", "limits"),
    [
        (None, STALLED, LIMITS),
        (AUTO, Tracking(), LIMITS),
        (AUTO, STALLED, Limits()),  # no rate of ours to raise from
    ],
    ids=["off", "nothing stalled", "no rates configured"],
)
def test_nothing_is_raised(auto: AutoThrottle | None, tracking: Tracking, limits: Limits) -> None:
    out = Outbox("p")
    assert raised(Boosts(), tracking, SNAPSHOT, limits, out, auto=auto, now=1000.0) == Boosts()
    assert not out.events and not out.after
