"""Progress maths: bytes, rate, ETA, stalls."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reassignd.engine.progress import (
    Bytes,
    FollowerSample,
    Sample,
    eta_seconds,
    is_stalled,
    partition_bytes,
    plan_bytes,
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
