"""The move rules: never onto a holder, never worse at any level; checked against an independent model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassignd.model import Broker
from reassignd.placement.rules import apply_move, is_valid_move, move_violation, spread_violations
from reassignd.placement.topology import Topology
from tests.placement.strategies import rack_trees

# 2 DCs x 2 racks x 2 brokers: 0,1 in /a/x; 2,3 in /a/y; 4,5 in /b/x; 6,7 in /b/y
TREE = Topology.from_brokers(Broker(i, f"/{'ab'[i // 4]}/{'xy'[(i // 2) % 2]}") for i in range(8))


@pytest.mark.parametrize(
    ("replicas", "source", "destination", "reason"),
    [
        ((0, 4), 0, 4, "already holds"),
        ((0, 4), 1, 5, "does not hold"),
        ((0, 4), 0, 9, "not an eligible broker"),
        ((0, 4), 0, 5, "level 1"),  # both replicas would sit in DC b
        ((0, 1, 4), 1, 2, None),  # same DC, rack x (2) -> rack y (0): better
    ],
)
def test_table(replicas: tuple[int, ...], source: int, destination: int, reason: str | None) -> None:
    got = move_violation(replicas, source, destination, TREE)
    if reason is None:
        assert got is None
    else:
        assert got is not None and reason in got


@pytest.mark.parametrize(
    ("replicas", "source", "destination", "valid"),
    [
        ((0, 2, 4), 0, 6, True),  # DC a holds 2, b holds 1: one moves over, b/y gets its first
        ((0, 2, 4), 0, 5, False),  # DC level fine, but in DC b rack x holds one and rack y none
        ((0, 1, 4), 1, 2, True),  # inside DC a, rack x (2) -> rack y (0)
        ((0, 1, 4), 1, 5, False),  # a (2) -> b (1), but into b/x (1) while b/y holds none
        ((0, 1, 4), 1, 6, True),  # a (2) -> b (1), into the empty rack b/y
        ((0, 1, 2), 2, 4, False),  # a/y holds 1, a/x holds 2: leaving through a/y unbalances a
        ((0, 2), 0, 1, True),  # same rack: only the broker level differs
        ((0, 4), 4, 6, True),  # within DC b, rack x -> rack y: both 1 vs 0
    ],
)
def test_levels(replicas: tuple[int, ...], source: int, destination: int, valid: bool) -> None:
    assert is_valid_move(replicas, source, destination, TREE) is valid


def test_evacuating_an_ineligible_broker_goes_where_spread_stays_even() -> None:
    eligible = TREE.restricted_to(range(1, 8))  # broker 0 is being drained
    assert is_valid_move((0, 4), 0, 2, eligible)  # DC a has none left: it must go back to DC a
    assert not is_valid_move((0, 4), 0, 5, eligible)


def _imbalance(replicas: tuple[int, ...], topology: Topology) -> dict[tuple[str, ...], int]:
    """Independent model: per node, max child count minus the least count among children with room."""
    out = {}
    for node, kids in topology.children.items():
        if not kids:
            continue
        counts = {k: sum(1 for r in replicas if topology.leaves[r][: len(k)] == k) for k in kids}
        room = [counts[k] for k in kids if counts[k] < topology.capacity[k]]
        out[node] = max(counts.values()) - min(room) if room else 0
    return out


@settings(max_examples=300, deadline=None)
@given(brokers=rack_trees(), data=st.data())
def test_a_valid_move_never_worsens_any_node(brokers: list[Broker], data: st.DataObject) -> None:
    topology = Topology.from_brokers(brokers)
    ids = [b.id for b in brokers]
    replicas = tuple(data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=6, unique=True)))
    source = data.draw(st.sampled_from(replicas))
    destination = data.draw(st.sampled_from(ids))
    if not is_valid_move(replicas, source, destination, topology):
        return
    moved = apply_move(replicas, source, destination)
    assert len(set(moved)) == len(moved) and source not in moved
    before, after = _imbalance(replicas, topology), _imbalance(moved, topology)
    for node, value in after.items():
        assert value <= max(before[node], 1), node
    assert len(spread_violations(moved, topology)) <= len(spread_violations(replicas, topology))


@settings(max_examples=200, deadline=None)
@given(brokers=rack_trees(), data=st.data())
def test_an_uneven_partition_is_never_stuck(brokers: list[Broker], data: st.DataObject) -> None:
    """Some valid move takes a replica from the crowded child to the sparse one of each violation."""
    topology = Topology.from_brokers(brokers)
    ids = [b.id for b in brokers]
    replicas = tuple(data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=6, unique=True)))
    for violation in spread_violations(replicas, topology):
        crowded, sparse = violation.crowded, violation.sparse
        assert any(
            is_valid_move(replicas, s, d, topology)
            for s in replicas
            if topology.leaves[s][: len(crowded)] == crowded
            for d in ids
            if topology.leaves[d][: len(sparse)] == sparse
        ), str(violation)
