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


def _heap_take(loads: dict[int, int], take: dict[int, int], amount: int, cap: int) -> int:
    """The unit-by-unit reference the closed form replaced (one heap pop per unit)."""
    import heapq

    heap = [(loads[b] + take.get(b, 0), b) for b in loads if loads[b] + take.get(b, 0) < cap]
    heapq.heapify(heap)
    while amount > 0 and heap:
        load, broker = heapq.heappop(heap)
        take[broker] = take.get(broker, 0) + 1
        amount -= 1
        if load + 1 < cap:
            heapq.heappush(heap, (load + 1, broker))
    return amount


def _heap_give(loads: dict[int, int], give: dict[int, int], amount: int, floor: int) -> int:
    import heapq

    heap = [(-(loads[b] - give.get(b, 0)), b) for b in loads if loads[b] - give.get(b, 0) > floor]
    heapq.heapify(heap)
    while amount > 0 and heap:
        neg, broker = heapq.heappop(heap)
        give[broker] = give.get(broker, 0) + 1
        amount -= 1
        if -neg - 1 > floor:
            heapq.heappush(heap, (neg + 1, broker))
    return amount


@settings(max_examples=400, deadline=None)
@given(
    loads=loads_st,
    start=st.dictionaries(st.integers(0, 200), st.integers(0, 30), max_size=10),
    amount=st.integers(0, 3000),
    edge=st.integers(0, 600),
)
def test_closed_form_water_fill_equals_unit_by_unit(
    loads: dict[int, int], start: dict[int, int], amount: int, edge: int
) -> None:
    from reassignd.placement.balance import _water_fill_give, _water_fill_take

    start = {b: v for b, v in start.items() if b in loads}
    fast, slow = dict(start), dict(start)
    assert _water_fill_take(loads, fast, amount, edge) == _heap_take(loads, slow, amount, edge)
    assert fast == {b: v for b, v in slow.items() if v or b in start}
    start = {b: min(v, loads[b]) for b, v in start.items()}
    fast, slow = dict(start), dict(start)
    assert _water_fill_give(loads, fast, amount, edge) == _heap_give(loads, slow, amount, edge)
    assert fast == {b: v for b, v in slow.items() if v or b in start}


def test_byte_quotas_are_computed_in_closed_form() -> None:
    """Quotas in bytes (10^13 units) take no longer than in replicas: the unit loop would never end."""
    import time

    loads = {b: 10**12 + b * 7_919_000_000 for b in range(1000)} | {1000 + b: 0 for b in range(100)}
    started = time.monotonic()
    q = balance_quotas(loads, 0.10)
    assert time.monotonic() - started < 2.0
    after = _apply(loads, dict(q.give), dict(q.take))
    assert all(q.band.contains(v) for v in after.values())
    assert q.lower_bound == sum(q.take.values()) > 10**13
