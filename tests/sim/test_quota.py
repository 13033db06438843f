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


def test_a_warm_window_lets_a_burst_through_then_lumps_one_window_apart() -> None:
    """A leader's quota records every follower fetch response, so its window always spans 11-12 samples: at
    2 MB/s with 1 MB/s of in-sync replication recorded, a copy running at full speed gets ~20 MB at once,
    then ~12 MB every ~12 s (a real 4.4 leader: 19.7 MB at once, then 9-13 MB every 11.5-12 s)."""
    window = QuotaWindow(warm=True)
    window.set_inflow(1_000_000, 0.0)
    t, moved, bursts = 3.0, 0.0, []
    for _ in range(4):
        t = window.opens_at(t, 2_000_000)
        window.set_inflow(1_000_000 + 125_000_000, t)
        shut = window.closes_at(t, 2_000_000)
        window.set_inflow(1_000_000, shut)
        window.record(MIB, shut)  # the fetch in flight when it shut
        moved += 125_000_000 * (shut - t) + MIB
        bursts.append((round(t, 2), round(moved / 1e6, 1)))
        t = shut
    assert bursts == [(3.0, 20.2), (15.0, 32.3), (27.0, 44.5), (39.0, 56.6)]


def test_a_continuous_inflow_fills_samples_as_kafka_records_it() -> None:
    window = QuotaWindow()
    window.set_inflow(1000.0, 0.0)
    assert window.rate(0.5) == pytest.approx(500.0)  # 500 bytes over the one-sample minimum
    assert window.rate(5.0) == pytest.approx(1000.0)
    window.set_inflow(0.0, 5.0)
    assert window.rate(10.0) == pytest.approx(500.0)  # 5000 bytes since 0 s
    assert window.rate(15.5) == pytest.approx(1000 / 11.5)  # only the 4-5 s sample is left
    assert window.opens_at(10.0, 0.0) == pytest.approx(16.0)  # the last sample (4-5 s) expires


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 5), st.floats(1, 3 * MIB)), max_size=12),
    st.sampled_from([0.0, 10_000.0, 100_000.0, 700_000.0, 5_000_000.0]),
    st.sampled_from([0.0, 50_000.0, 2_000_000.0]),
    st.booleans(),
    st.floats(0, 30),
)
def test_opens_at_and_closes_at_are_the_first_moments_the_measure_crosses_the_bound(
    records: list[tuple[float, float]], bound: float, inflow: float, warm: bool, wait: float
) -> None:
    window = QuotaWindow(warm=warm)
    window.set_inflow(inflow, 0.0)
    t = 0.0
    for gap, value in records:
        t += gap
        window.record(value, t)
    start = t + wait
    for rising in (False, True):
        when = window.closes_at(start, bound) if rising else window.opens_at(start, bound)
        assert when >= start
        probe = window.copy()  # measured without changing the window
        end = min(when, start + 40.0)
        for i in range(60):
            at = start + (end - start) * i / 60
            if at < when - 1e-6:
                assert probe.exceeded(at, bound) != rising, (rising, at, when)
        if when < float("inf"):  # opens at `when`; shuts right after `when`
            measured = probe.rate(when + (1e-6 if rising else 0.0))
            assert (measured > bound) if rising else not probe.exceeded(when, bound), (rising, when, measured)
