"""QuotaWindow: Kafka's replication quota sensor (SampledStat + SimpleRate + Quota.upperBound)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassignd.sim.quota import QuotaWindow

MIB = 1024 * 1024


def _grants(bound: float, until: float, grant: float = MIB) -> list[float]:
    """When a fetcher that always wants more gets a grant: each time the quota opens, one grant."""
    window = QuotaWindow()
    times: list[float] = []
    t = 0.0
    while True:
        t = window.opens_at(t, bound)
        if t >= until:
            return times
        window.record(grant, t)
        times.append(round(t, 2))


@pytest.mark.parametrize(
    ("bound", "expected"),
    [
        # 0: one grant each time the window empties, 11 samples of 1 s after the last record; a real 4.4
        # follower got 983,266 bytes at 0.83, 12.36, 23.40, 34.90, 45.79 s (tests/realkafka/test_fidelity.py)
        (0, [0.0, 11.0, 22.0, 33.0, 44.0]),
        # below a grant per window: the rate rule and the expiry both let grants through; a real 4.4
        # follower at 100,000 B/s: 0.65, 10.88, 20.97, 21.84, 32.29, 33.35, 43.62, 44.42 s
        (100_000, [0.0, 10.49, 20.97, 21.49, 32.49, 32.49, 43.49, 43.49]),
        # well above a grant per window: one grant each grant / bound seconds
        (1_000_000, [0.0, 1.05, 2.1, 3.15, 4.19, 5.24, 6.29, 7.34, 8.39, 9.44, 10.49]),
    ],
)
def test_grants_follow_kafkas_sampled_rate(bound: float, expected: list[float]) -> None:
    assert _grants(bound, expected[-1] + 0.005) == expected


def test_the_first_sample_counts_as_one_window_long() -> None:
    window = QuotaWindow(num=11, size=1.0)
    window.record(500.0, 10.0)
    assert window.rate(10.0) == pytest.approx(500.0)  # SimpleRate: at least one sample's length
    assert window.rate(12.0) == pytest.approx(250.0)
    assert window.rate(21.0) == 0.0  # its last record is 11 s old: purged
    assert not window.exceeded(21.0, 0.0)


def test_seed_stands_for_a_rate_recorded_evenly_until_now() -> None:
    window = QuotaWindow()
    window.seed(2_000_000.0, 100.0)
    assert window.rate(100.0) == pytest.approx(2_000_000.0, rel=1e-6)
    assert window.exceeded(100.0, 1_000_000.0)
    # the history keeps a lower bound shut until enough of it has aged out of the window
    assert window.opens_at(100.0, 1_000_000.0) > 100.0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 5), st.floats(1, 3 * MIB)), max_size=12),
    st.sampled_from([0.0, 10_000.0, 100_000.0, 700_000.0, 5_000_000.0]),
    st.floats(0, 30),
)
def test_opens_at_is_the_first_moment_the_quota_is_not_exceeded(
    records: list[tuple[float, float]], bound: float, wait: float
) -> None:
    window = QuotaWindow()
    t = 0.0
    for gap, value in records:
        t += gap
        window.record(value, t)
    start = t + wait
    opens = window.opens_at(start, bound)
    assert opens >= start
    probe = QuotaWindow()
    probe._samples, probe._current = window._samples, window._current  # measure without changing it
    step = (opens - start) / 50 if opens > start else 0.0
    for i in range(50):
        at = start + i * step
        if at < opens - 1e-6:
            assert probe.exceeded(at, bound), (at, opens)
    assert not probe.exceeded(opens, bound)
