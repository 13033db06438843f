"""KIP-879 multi-level placement: even spread at every level, even broker load, deterministic seeds."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassignd.model import Broker, InvalidInputError
from reassignd.placement.base import ClusterView, PlacementSpec
from reassignd.placement.multilevel import MultiLevelRackAwarePlacer
from reassignd.placement.rules import spread_violations
from reassignd.placement.topology import Topology
from tests.placement.strategies import rack_trees


def test_kip_example_three_dcs_two_racks_rf3_uses_every_dc() -> None:
    brokers = [Broker(i, f"/DC{i % 3 + 1}/R{(i // 3) % 2 + 1}") for i in range(12)]
    placed = MultiLevelRackAwarePlacer(seed=5).place(PlacementSpec(30, 3), ClusterView(tuple(brokers)))
    assert placed is not None
    for replicas in placed:
        assert sorted(b % 3 for b in replicas) == [0, 1, 2]


def test_rf_beyond_a_small_dc_fills_the_others_without_duplicates() -> None:
    brokers = [Broker(0, "/dc1/r1"), *(Broker(i, f"/dc2/r{i % 3}") for i in range(1, 7))]
    placed = MultiLevelRackAwarePlacer(seed=1).place(PlacementSpec(10, 4), ClusterView(tuple(brokers)))
    assert placed is not None
    for replicas in placed:
        assert len(set(replicas)) == 4 and 0 in replicas
        assert not spread_violations(replicas, Topology.from_brokers(brokers))


def test_too_few_brokers_is_an_error() -> None:
    view = ClusterView((Broker(0, "/a"), Broker(1, "/b")))
    with pytest.raises(InvalidInputError, match="replication_factor"):
        MultiLevelRackAwarePlacer().place(PlacementSpec(1, 3), view)


def test_only_the_listed_brokers_are_used() -> None:
    view = ClusterView(tuple(Broker(i, f"/dc{i % 2}") for i in range(8)))
    placed = MultiLevelRackAwarePlacer(seed=2).place(PlacementSpec(20, 2), view, [1, 2, 5, 6])
    assert placed is not None
    assert {b for r in placed for b in r} == {1, 2, 5, 6}


@settings(max_examples=150, deadline=None)
@given(brokers=rack_trees(), data=st.data())
def test_every_level_is_even_where_the_topology_allows(brokers: list[Broker], data: st.DataObject) -> None:
    rf = data.draw(st.integers(1, min(6, len(brokers))))
    count = data.draw(st.integers(1, 30))
    seed = data.draw(st.integers(0, 1000))
    placed = MultiLevelRackAwarePlacer(seed=seed).place(PlacementSpec(count, rf), ClusterView(tuple(brokers)))
    assert placed is not None and len(placed) == count
    topology = Topology.from_brokers(brokers)
    for replicas in placed:
        assert len(replicas) == rf == len(set(replicas))
        assert spread_violations(replicas, topology) == []


@settings(max_examples=100, deadline=None)
@given(brokers=rack_trees(symmetric=True), data=st.data())
def test_broker_loads_stay_even_on_symmetric_trees(brokers: list[Broker], data: st.DataObject) -> None:
    rf = data.draw(st.integers(1, min(5, len(brokers))))
    count = data.draw(st.integers(1, 60))
    placed = MultiLevelRackAwarePlacer(seed=data.draw(st.integers(0, 99))).place(
        PlacementSpec(count, rf), ClusterView(tuple(brokers))
    )
    assert placed is not None
    load = Counter({b.id: 0 for b in brokers})
    load.update(b for replicas in placed for b in replicas)
    assert max(load.values()) - min(load.values()) <= 1


@settings(max_examples=80, deadline=None)
@given(brokers=rack_trees(), data=st.data())
def test_raising_the_replication_factor_keeps_replicas_and_spread(
    brokers: list[Broker], data: st.DataObject
) -> None:
    view = ClusterView(tuple(brokers))
    new_rf = data.draw(st.integers(1, min(6, len(brokers))))
    old_rf = data.draw(st.integers(1, new_rf))
    placer = MultiLevelRackAwarePlacer(seed=data.draw(st.integers(0, 99)))
    current = placer.place(PlacementSpec(data.draw(st.integers(1, 20)), old_rf), view)
    assert current is not None
    grown = placer.increase_replication_factor(current, new_rf, view)
    topology = Topology.from_brokers(brokers)
    for before, after in zip(current, grown, strict=True):
        assert after[:old_rf] == before and len(set(after)) == new_rf
        assert spread_violations(after, topology) == []


def test_same_seed_same_placement() -> None:
    view = ClusterView(tuple(Broker(i, f"/dc{i % 3}/r{i % 2}") for i in range(18)))
    a = MultiLevelRackAwarePlacer(seed=9).place(PlacementSpec(40, 3), view)
    assert a == MultiLevelRackAwarePlacer(seed=9).place(PlacementSpec(40, 3), view)
