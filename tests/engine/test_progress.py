"""Progress maths: bytes, rate, ETA, stalls."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.engine.progress import (
    Bytes,
    FollowerSample,
    Sample,
    eta_seconds,
    follower_growth,
    is_stalled,
    move_eta_seconds,
    partition_bytes,
    plan_bytes,
    plan_eta_seconds,
    rate,
)
from reassignd.model import ReassignmentPlan

from .helpers import cluster, tp


def test_bytes_to_move_and_done() -> None:
    snapshot = cluster(6, {tp(0): (0, 1, 2)}, sizes={tp(0): 1000})
    p = snapshot.partitions[tp(0)]
    assert partition_bytes(p, (3, 4, 5)) == Bytes(3000, 0)
    moving = replace(
        p,
        replicas=(3, 0, 1, 2),
        adding=(3,),
        replica_sizes={0: 1000, 1: 1000, 2: 1000, 3: 400},
    )
    assert partition_bytes(moving, (3, 4, 5)) == Bytes(3000, 400)
    assert partition_bytes(moving, (3, 4, 5)).remaining == 2600
    # a follower larger than the leader (segments not yet deleted) counts as complete, not more
    ahead = replace(moving, replica_sizes={0: 1000, 3: 1500})
    assert partition_bytes(ahead, (3, 4, 5)).done == 1000
    plan = ReassignmentPlan({tp(0): (0, 1, 3)})
    assert plan_bytes(snapshot, plan) == Bytes(1000, 0)


def test_rate_and_eta() -> None:
    samples = [Sample(t, 100.0 * t) for t in range(11)]
    assert rate(samples) == pytest.approx(100.0)
    assert rate(samples, window_seconds=3) == pytest.approx(100.0)
    assert rate(samples[:1]) is None
    assert eta_seconds(1000, 100.0) == pytest.approx(10.0)
    assert eta_seconds(0, None) == 0.0
    assert eta_seconds(10, 0.0) is None


@pytest.mark.parametrize(
    ("growth", "produce", "stalled"),
    [
        (50.0, 100.0, True),  # the follower falls further behind
        (100.0, 100.0, True),  # it keeps pace but never catches up
        (150.0, 100.0, False),  # it catches up
    ],
)
def test_stall_when_catch_up_does_not_exceed_produce(growth: float, produce: float, stalled: bool) -> None:
    samples = [FollowerSample(t, int(growth * t), 10**9, produce) for t in range(0, 400, 30)]
    assert is_stalled(samples, window_seconds=300) is stalled


def test_no_stall_before_a_full_window_or_once_caught_up() -> None:
    short = [FollowerSample(t, 0, 10**6, 100.0) for t in range(0, 200, 30)]
    assert not is_stalled(short, window_seconds=300)
    caught_up = [FollowerSample(t, 10**6, 10**6, 100.0) for t in range(0, 400, 30)]
    assert not is_stalled(caught_up, window_seconds=300)
    assert not is_stalled([], window_seconds=300)


@pytest.mark.parametrize(
    ("growth", "produce", "leader", "expected"),
    [
        (150.0, 100.0, 10_000, (10_000 + 100 * 60 - 150 * 60) / 50),  # a 7,000 B lag shrinking at 50 B/s
        (1000.0, 0.0, 10_000, 0.0),  # already caught up: done
        (100.0, 100.0, 10**9, None),  # keeps pace, never catches up: no ETA (a stall)
        (50.0, 100.0, 10**9, None),  # falls behind
    ],
)
def test_move_eta_is_the_lag_over_how_fast_it_shrinks(
    growth: float, produce: float, leader: int, expected: float | None
) -> None:
    # the leader grows at the produce rate; the follower at its copy rate
    samples = [
        FollowerSample(t, min(int(growth * t), leader + int(produce * t)), leader + int(produce * t), produce)
        for t in range(0, 61, 10)
    ]
    got = move_eta_seconds(samples[-1], follower_growth(samples, window_seconds=300))
    assert got == (None if expected is None else pytest.approx(expected))


def test_follower_growth_is_the_rate_over_the_window() -> None:
    samples = [FollowerSample(t, 100 * t if t >= 200 else 10 * t, 10**9, 0.0) for t in range(0, 400, 10)]
    full = rate([Sample(s.time, s.follower_bytes) for s in samples], window_seconds=150)
    assert follower_growth(samples, window_seconds=150) == pytest.approx(full) == pytest.approx(100.0)


def test_move_eta_needs_two_samples() -> None:
    assert follower_growth([], 300) is None
    one = [FollowerSample(0, 0, 1000, 0.0)]
    assert move_eta_seconds(one[-1], follower_growth(one, 300)) is None


@pytest.mark.parametrize(
    ("aggregate", "moves", "expected"),
    [
        (1.0, [120.0, None, 30.0], 120.0),  # the tail: one large copy left, the plan's average says 1 s
        (500.0, [120.0], 500.0),  # many bytes still queued behind the copies in flight
        (None, [None, 40.0], 40.0),
        (None, [None], None),
        (12.0, [], 12.0),
    ],
)
def test_plan_eta_waits_for_its_slowest_move(
    aggregate: float | None, moves: list[float | None], expected: float | None
) -> None:
    assert plan_eta_seconds(aggregate, moves) == expected


@given(
    st.one_of(st.none(), st.floats(0, 1e7)),
    st.lists(st.one_of(st.none(), st.floats(0, 1e7)), max_size=20),
)
def test_plan_eta_bounds_every_known_figure(aggregate: float | None, moves: list[float | None]) -> None:
    eta = plan_eta_seconds(aggregate, moves)
    known = [m for m in [aggregate, *moves] if m is not None]
    assert (eta is None) == (not known)
    if eta is not None:
        assert eta in known and all(eta >= k for k in known)
