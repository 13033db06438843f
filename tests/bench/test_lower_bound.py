"""The lower bound: exact on hand-computed cases, never above what a run that obeys its limits achieves."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.lower_bound import _enter_time, lower_bound
from bench.strategies import STRATEGIES, case_from_dict
from reassignd.engine import Limits
from reassignd.model import ReassignmentPlan, TopicPartition
from reassignd.sim import SimCluster, load_scenario

MB = 1_000_000
MIB = 1024 * 1024
RATE = 10 * MB


def cluster(
    assignment: list[list[int]], sizes: list[int], produce: float = 0.0, brokers: int = 6
) -> SimCluster:
    scenario = {
        "seed": 1,
        "brokers": [{"id": b, "rack": f"r{b % 3}"} for b in range(1, brokers + 1)],
        "topics": [
            {
                "name": "t",
                "partitions": len(assignment),
                "replication_factor": len(assignment[0]),
                "partition_bytes": sizes,
                "produce_bytes_per_sec": produce,
                "assignment": assignment,
            }
        ],
    }
    return SimCluster.from_scenario(load_scenario(scenario))


def limits(replicas: int = 1, leader: int = RATE, follower: int = RATE) -> Limits:
    return Limits.from_mapping(
        {
            "reassignment.parallel.replica.count": replicas,
            "leader.reassignment.throttled.rate": leader,
            "follower.reassignment.throttled.rate": follower,
        }
    )


def plan(targets: list[list[int]]) -> ReassignmentPlan:
    return ReassignmentPlan({TopicPartition("t", i): tuple(r) for i, r in enumerate(targets)})


# Kafka's quotas (bench/lower_bound.py's docstring): a receiver's window starts afresh, so its quota carries
# RATE per second from the first byte, plus one whole fetch (MIB) per copy, checked before it is recorded; a
# leader's window reaches back WINDOW seconds (11 samples of 1 s and the one being filled), so it lets that
# many seconds' worth through at once, and so may a receiver's over a copy that starts later than the run.
WINDOW = 12
ONE_STEP = (1000 * MB - MIB - WINDOW * RATE) / RATE  # a copy through a receiver that may have been idle
T1 = (900 * MB - MIB - WINDOW * RATE) / (RATE - MB)  # the same on a log growing at 1 MB/s


@pytest.mark.parametrize(
    ("setup", "expected", "kind"),
    [
        # one replica replaced: S / r entering its new broker, less the fetch in flight
        (([[1, 2]], [[1, 3]], [100 * MB], 0.0, limits()), (100 * MB - MIB) / RATE, "enter"),
        # two partitions into broker 3: twice the bytes through one follower throttle
        (
            ([[1, 2], [2, 4]], [[1, 3], [3, 4]], [100 * MB] * 2, 0.0, limits()),
            (200 * MB - 2 * MIB) / RATE,
            "enter",
        ),
        # every replica moves, R = 1: three steps one after the other, each through a receiver's window
        (([[1, 2, 3]], [[4, 5, 6]], [1000 * MB], 0.0, limits()), 3 * ONE_STEP, "chain"),
        # R = 3: one step, three copies share the leader's throttle; its window, and those of the five
        # other replicas that could lead meanwhile, let 12 s each at once
        (
            ([[1, 2, 3]], [[4, 5, 6]], [1000 * MB], 0.0, limits(replicas=3)),
            (3000 * MB - 3 * MIB - 6 * WINDOW * RATE) / RATE,
            "chain",
        ),
        # RF 1 partitions on broker 1 to four brokers: all bytes leave broker 1
        (
            ([[1], [1], [1], [1]], [[3], [4], [5], [6]], [500 * MB] * 4, 0.0, limits()),
            (2000 * MB - WINDOW * RATE - 4 * MIB) / RATE,
            "leave",
        ),
        # the leader throttle is the slower one: the chain uses it (the leader, or 2 or 3 if they lead)
        (
            ([[1, 2]], [[1, 3]], [1000 * MB], 0.0, limits(leader=5 * MB)),
            (1000 * MB - MIB - 3 * WINDOW * 5 * MB) / (5 * MB),
            "chain",
        ),
        # growing logs into broker 3: the copies complete at 10 s and 20 s at the earliest, by when the two
        # logs hold 10 MB and 20 MB more, less what the quota's credit (RATE + 2 MIB) buys them earlier
        (
            ([[1, 2], [2, 4]], [[1, 3], [3, 4]], [100 * MB] * 2, 1 * MB, limits()),
            (200 * MB + 30 * MB - (RATE + 2 * MIB) / RATE * 2 * MB - 2 * MIB) / RATE,
            "enter",
        ),
        # two steps on a growing log: the first ends at T1, the second copies 900 MB plus what is produced
        # until it ends, from T1 on
        (
            ([[1, 2]], [[3, 4]], [900 * MB], 1 * MB, limits()),
            T1 + (900 * MB + MB * T1 - MIB - WINDOW * RATE) / (RATE - MB),
            "chain",
        ),
        # R = 2, three new replicas: 2 copies sharing the leader, then 1 alone (or any other order) still
        # send 3000 MB through one leader at a time, as at R = 3; not two steps of two copies at half the
        # rate each
        (
            ([[1, 2, 3]], [[4, 5, 6]], [1000 * MB], 0.0, limits(replicas=2)),
            (3000 * MB - 3 * MIB - 6 * WINDOW * RATE) / RATE,
            "chain",
        ),
    ],
)
def test_hand_computed_bounds(
    setup: tuple[list[list[int]], list[list[int]], list[int], float, Limits], expected: float, kind: str
) -> None:
    assignment, targets, sizes, produce, limit = setup
    bound = lower_bound(cluster(assignment, sizes, produce), plan(targets), limit)
    assert bound.seconds == pytest.approx(expected, rel=1e-4)
    assert getattr(bound, kind) == pytest.approx(expected, rel=1e-4)


@pytest.mark.parametrize(
    ("copies", "expected"),
    [
        ([(100 * MB, 0.0)], 10.0),  # no produce: S / r
        ([(100 * MB, 1 * MB)], 11.0),  # completes at 10 s at the earliest, by when 10 MB more were written
        # Smith's rule puts the growing copy first (completes at 10 s): (200 + 10) MB; the other way 22 s
        ([(100 * MB, 0.0), (100 * MB, 1 * MB)], 21.0),
        # equal growth: shortest first, completions at 5 s and 15 s: (150 + 5 + 15) MB
        ([(100 * MB, 1 * MB), (50 * MB, 1 * MB)], 17.0),
        # S / w decides, not S: 100 MB at 4 MB/s (25) before 50 MB at 1 MB/s (50): completions 10 s, 15 s
        ([(50 * MB, 1 * MB), (100 * MB, 4 * MB)], (150 + 4 * 10 + 1 * 15) / 10),
    ],
)
def test_enter_time_counts_growth_until_the_earliest_completions(
    copies: list[tuple[float, float]], expected: float
) -> None:
    assert _enter_time(copies, RATE) == pytest.approx(expected, rel=1e-9)


def test_growth_is_not_counted_where_a_broker_stops() -> None:
    # As the growing case above, but broker 2 (a replica of both partitions) stops for a while: their logs
    # may stop growing (no leader) or be truncated, so only the bytes at the start count.
    sim = cluster([[1, 2], [2, 4]], [100 * MB] * 2, produce=1 * MB)
    bound = lower_bound(sim, plan([[1, 3], [3, 4]]), limits(), outages=[(2, 1000.0, 2000.0)])
    assert bound.enter == pytest.approx((200 * MB - 2 * MIB) / RATE, rel=1e-9)


def test_a_run_with_r_above_one_is_not_beaten_by_the_chain_term() -> None:
    # Three new replicas at R = 2: the engine copies them one after the other in 30 s (each receiver's quota
    # fresh: 10 MB/s from the first byte), while an earlier chain term claimed 40 s (two steps of two copies
    # sharing the leader) that no schedule could beat. The leader's window lets 12 s' worth through at once,
    # so what bounds the run is what enters each receiver.
    data = _case([[1, 2, 3]], [[4, 5, 6]], [100 * MB], replicas=2, produce=0.0)
    case = case_from_dict(data)
    run = STRATEGIES["reassignd-event-driven"](case, 86400.0)
    bound = lower_bound(SimCluster.from_scenario(load_scenario(case.cluster)), case.plan, case.limits)
    assert run.meter.done_at == pytest.approx(30.0, abs=0.01)
    assert bound.seconds == pytest.approx((100 * MB - MIB) / RATE, rel=1e-9) == bound.enter
    assert bound.chain < bound.seconds


def test_nothing_to_move_is_zero() -> None:
    bound = lower_bound(cluster([[1, 2]], [MB]), plan([[1, 2]]), limits())
    assert (bound.seconds, bound.bottleneck) == (0.0, "nothing to move")


def test_produce_at_or_above_the_rate_never_finishes() -> None:
    # (unless the partition fits in the quotas' credit: 1000 MB does not)
    bound = lower_bound(cluster([[1, 2]], [1000 * MB], produce=RATE), plan([[1, 3]]), limits())
    assert math.isinf(bound.chain)


def test_leave_uses_the_best_spread_over_sources() -> None:
    # Four copies, each can come from broker 1 or 2: the flow splits them, two each (each source with its
    # window's credit and a fetch for each copy it may serve).
    sim = cluster([[1, 2]] * 4, [500 * MB] * 4)
    bound = lower_bound(sim, plan([[1, 3], [1, 4], [1, 5], [1, 6]]), limits())
    assert bound.leave == pytest.approx((2000 * MB - 2 * (WINDOW * RATE + 4 * MIB)) / (2 * RATE), rel=1e-4)
    # all from leader 1
    assert bound.leave_current_leaders == pytest.approx(
        (2000 * MB - WINDOW * RATE - 4 * MIB) / RATE, rel=1e-4
    )


def _case(
    assignment: list[list[int]],
    targets: list[list[int]],
    sizes: list[int],
    replicas: int = 1,
    produce: float = 1000.0,
) -> dict[str, Any]:
    return {
        "name": "generated",
        "cycle_interval": 1.0,
        "limits": {
            "reassignment.parallel.replica.count": replicas,
            "reassignment.max.incoming.replica.movements.per.broker": 2,
            "reassignment.max.outgoing.replica.movements.per.broker": 2,
            "leader.reassignment.throttled.rate": RATE,
            "follower.reassignment.throttled.rate": RATE,
        },
        "cluster": {
            "seed": 1,
            "brokers": [{"id": b} for b in range(1, 7)],
            "topics": [
                {
                    "name": "t",
                    "partitions": len(assignment),
                    "replication_factor": len(assignment[0]),
                    "partition_bytes": sizes,
                    "produce_bytes_per_sec": produce,
                    "assignment": assignment,
                }
            ],
        },
        "plan": {
            "version": 1,
            "partitions": [{"topic": "t", "partition": i, "replicas": r} for i, r in enumerate(targets)],
        },
    }


pairs = st.lists(st.sampled_from(range(1, 6)), min_size=2, max_size=2, unique=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(pairs, pairs, st.integers(1, 200)), min_size=1, max_size=6),
    st.sampled_from(["reassignd", "kip435-batch", "reassignd-event-driven", "stock"]),
    st.sampled_from([1, 2]),
    st.sampled_from([1000.0, 1 * MB]),  # 1 MB/s: a tenth of the throttle, so growth counts
)
def test_no_engine_run_beats_the_bound(
    moves: list[tuple[list[int], list[int], int]], strategy: str, replicas: int, produce: float
) -> None:
    if strategy == "stock":  # it adds every new replica at once (at most 2 here): the bound must allow it
        replicas = 2
    case = case_from_dict(
        _case(
            [m[0] for m in moves],
            [m[1] for m in moves],
            [m[2] * MB for m in moves],
            replicas=replicas,
            produce=produce,
        )
    )
    run = STRATEGIES[strategy](case, 86400.0)
    sim = SimCluster.from_scenario(load_scenario(case.cluster))
    bound = lower_bound(sim, case.plan, case.limits)
    assert run.meter.done_at is not None
    assert run.meter.done_at >= bound.seconds * (1 - 1e-6)
