"""Max-min fair sharing of fetch bandwidth: feasibility and a bottleneck for every flow."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassignd.sim.replication import max_min_fair


@pytest.mark.parametrize(
    ("flows", "capacity", "expected"),
    [
        ([[0], [0]], {0: 10.0}, [5.0, 5.0]),
        ([[0, 1], [0]], {0: 10.0, 1: 2.0}, [2.0, 8.0]),  # what flow 0 cannot use goes to flow 1
        ([[0, 1], [1, 2], [2]], {0: 3.0, 1: 10.0, 2: 4.0}, [3.0, 2.0, 2.0]),
        ([[0], []], {0: 1.0}, [1.0, 0.0]),
        ([[0]], {0: -5.0}, [0.0]),
        ([], {}, []),
    ],
)
def test_examples(flows: list[list[int]], capacity: dict[int, float], expected: list[float]) -> None:
    assert max_min_fair(flows, capacity) == pytest.approx(expected)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 8).flatmap(
        lambda resources: st.tuples(
            st.lists(
                st.lists(st.integers(0, resources - 1), min_size=1, max_size=4, unique=True), max_size=30
            ),
            st.lists(st.floats(0, 1e9), min_size=resources, max_size=resources),
        )
    )
)
def test_allocation_is_feasible_and_every_flow_has_a_bottleneck(
    case: tuple[list[list[int]], list[float]],
) -> None:
    flows, caps = case
    capacity = dict(enumerate(caps))
    rates = max_min_fair(flows, capacity)
    used = dict.fromkeys(capacity, 0.0)
    for flow, rate in zip(flows, rates, strict=True):
        assert rate >= 0
        for key in flow:
            used[key] += rate
    tolerance = 1e-6 * (1 + max(caps))
    for key, total in used.items():
        assert total <= capacity[key] + tolerance
    for flow, rate in zip(flows, rates, strict=True):
        # Max-min fairness: some resource of the flow is full and no flow on it gets more.
        assert any(
            used[key] >= capacity[key] - tolerance
            and all(rates[j] <= rate + tolerance for j, other in enumerate(flows) if key in other)
            for key in flow
        ), (flow, rate)
