"""Quotas: applying them lands every broker in the band with exactly the lower bound of moves."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reassignd.placement.balance import Band, balance_quotas, drain_quotas, fill_quotas

loads_st = st.dictionaries(st.integers(0, 200), st.integers(0, 500), min_size=1, max_size=40)


def _apply(loads: dict[int, int], give: dict[int, int], take: dict[int, int]) -> dict[int, int]:
    return {b: v - give.get(b, 0) + take.get(b, 0) for b, v in loads.items()}


def test_band_always_holds_the_average() -> None:
    band = Band.around(10, 3, 0.0)
    assert (band.lower, band.upper) == (3, 4)
    band = Band.around(3000, 10, 0.10)
    assert (band.lower, band.upper) == (270, 330)


def test_expansion_example() -> None:
    loads = dict.fromkeys(range(9), 100) | {9: 0}
    q = balance_quotas(loads, 0.10)
    assert q.band.lower == 81 and q.lower_bound == 81 and q.take == {9: 81}
    after = _apply(loads, dict(q.give), dict(q.take))
    assert all(q.band.contains(v) for v in after.values())


@settings(max_examples=300, deadline=None)
@given(loads=loads_st, threshold=st.sampled_from([0.0, 0.05, 0.1, 0.25]))
def test_balance_quotas_reach_the_band_with_the_lower_bound(loads: dict[int, int], threshold: float) -> None:
    q = balance_quotas(loads, threshold)
    assert sum(q.give.values()) == sum(q.take.values()) == q.lower_bound
    assert not set(q.give) & set(q.take)
    after = _apply(loads, dict(q.give), dict(q.take))
    assert all(q.band.contains(v) for v in after.values())
    assert all(v >= 0 for v in after.values())


@settings(max_examples=200, deadline=None)
@given(loads=loads_st, data=st.data())
def test_drain_empties_the_drained(loads: dict[int, int], data: st.DataObject) -> None:
    ids = sorted(loads)
    if len(ids) < 2:
        return
    drained = set(data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=len(ids) - 1, unique=True)))
    q = drain_quotas(loads, drained, 0.1)
    after = _apply(loads, dict(q.give), dict(q.take))
    assert all(after[b] == 0 for b in drained)
    assert sum(q.take.values()) == q.lower_bound == sum(loads[b] for b in drained)


def test_fill_brings_new_brokers_to_the_average() -> None:
    loads = {0: 50, 1: 50, 2: 50, 3: 0}
    q = fill_quotas(loads, {3}, 0.1)
    assert q.take == {3: 37} and sum(q.give.values()) == 37
