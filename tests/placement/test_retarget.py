"""The re-target placer: table-driven cases and a property (rack spread never worse, nothing on a gone,
decommissioned or offline broker, the preferred leader's place kept)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassignd.model import TopicPartition
from reassignd.placement.retarget import replacement_targets
from reassignd.placement.rules import spread_violations
from reassignd.placement.topology import Topology

TP = TopicPartition("t", 0)
RACKS = {1: "/r1", 2: "/r1", 3: "/r2", 4: "/r2", 5: "/r3", 6: "/r3"}


@pytest.mark.parametrize(
    ("target", "gone", "eligible", "load", "expected"),
    [
        # the same rack first: spread unchanged
        ((1, 3, 5), {5}, {1, 2, 3, 4, 6}, {}, (1, 3, 6)),
        # a gone preferred leader is replaced in its place
        ((5, 1, 3), {5}, {1, 2, 3, 4, 6}, {}, (6, 1, 3)),
        # its rack mate is not eligible (decommissioned): another rack with no replica yet
        ((1, 3, 5), {5}, {1, 2, 3, 4}, {}, None),
        # fewest replicas among equals
        ((1, 3), {3}, {1, 2, 4, 5, 6}, {4: 9, 5: 1, 6: 0}, (1, 4)),
        # two gone brokers
        ((1, 3, 5), {3, 5}, {1, 2, 4, 6}, {}, (1, 4, 6)),
    ],
)
def test_replacements(
    target: tuple[int, ...],
    gone: set[int],
    eligible: set[int],
    load: dict[int, int],
    expected: tuple[int, ...] | None,
) -> None:
    found = replacement_targets({TP: target}, gone, RACKS, eligible, load)
    if expected is None:
        assert TP not in found.targets
        assert "no broker can replace" in found.unplaced[TP]
    else:
        assert found.targets == {TP: expected}


def test_a_rack_mate_gone_too_goes_to_the_emptiest_valid_rack() -> None:
    # rack r3 has no eligible broker: a replica on r1 or r2 would crowd a rack that already has one
    found = replacement_targets({TP: (1, 3, 5)}, {5, 6}, RACKS, {1, 2, 3, 4}, {})
    assert TP in found.unplaced and "rack spread" in found.unplaced[TP]


def test_partitions_that_name_no_gone_broker_are_left_out() -> None:
    assert replacement_targets({TP: (1, 2)}, {5}, RACKS, {1, 2, 3}, {}).targets == {}


def test_an_unregistered_gone_broker_has_only_the_arrival_rule() -> None:
    found = replacement_targets({TP: (1, 3, 99)}, {99}, RACKS, {1, 2, 3, 4, 5, 6}, {})
    assert found.targets[TP][2] in (5, 6)  # the rack without a replica


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(1, 9), min_size=2, max_size=4, unique=True),
    st.sets(st.integers(1, 9), max_size=3),
    st.sets(st.integers(1, 9), max_size=2),
)
def test_never_worse_spread_and_never_on_an_ineligible_broker(
    target: list[int], gone: set[int], decommissioned: set[int]
) -> None:
    racks = {b: f"/dc{b % 2}/r{b % 3}" for b in range(1, 10)}
    eligible = set(range(1, 10)) - gone - decommissioned
    found = replacement_targets({TP: tuple(target)}, gone, racks, eligible, {})
    topology = Topology.from_racks(racks)
    new = found.targets.get(TP)
    if new is None:
        assert not gone & set(target) or TP in found.unplaced
        return
    assert not gone & set(new)
    assert all(b in eligible for b in set(new) - set(target))
    assert len(set(new)) == len(new) == len(target)
    assert [b for b, a in zip(new, target, strict=True) if a not in gone] == [
        b for b in target if b not in gone
    ]
    assert len(spread_violations(new, topology)) <= len(spread_violations(target, topology))
