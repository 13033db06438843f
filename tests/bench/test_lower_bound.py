"""The lower bound: exact on hand-computed cases, and never above what the real engine achieves."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.lower_bound import lower_bound
from bench.strategies import STRATEGIES, case_from_dict
from reassignd.engine import Limits
from reassignd.model import ReassignmentPlan, TopicPartition
from reassignd.sim import SimCluster, load_scenario

MB = 1_000_000
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


@pytest.mark.parametrize(
    ("setup", "expected", "kind"),
    [
        # one replica replaced: S / r, entering its new broker
        (([[1, 2]], [[1, 3]], [100 * MB], 0.0, limits()), 10.0, "enter"),
        # two partitions into broker 3: twice the bytes through one follower throttle
        (([[1, 2], [2, 4]], [[1, 3], [3, 4]], [100 * MB, 100 * MB], 0.0, limits()), 20.0, "enter"),
        # every replica moves, R = 1: three steps of S / r each
        (([[1, 2, 3]], [[4, 5, 6]], [100 * MB], 0.0, limits()), 30.0, "chain"),
        # R = 3: one step, three copies share the leader's throttle
        (([[1, 2, 3]], [[4, 5, 6]], [100 * MB], 0.0, limits(replicas=3)), 30.0, "chain"),
        # produce traffic: the lag closes at r - w
        (([[1, 2]], [[1, 3]], [90 * MB], 1 * MB, limits()), 10.0, "chain"),
        # RF 1 partitions on broker 1 to four brokers: all bytes leave broker 1
        (([[1], [1], [1], [1]], [[3], [4], [5], [6]], [50 * MB] * 4, 0.0, limits()), 20.0, "leave"),
        # the leader throttle is the slower one: the chain uses it
        (([[1, 2]], [[1, 3]], [100 * MB], 0.0, limits(leader=5 * MB)), 20.0, "chain"),
    ],
)
def test_hand_computed_bounds(
    setup: tuple[list[list[int]], list[list[int]], list[int], float, Limits], expected: float, kind: str
) -> None:
    assignment, targets, sizes, produce, limit = setup
    bound = lower_bound(cluster(assignment, sizes, produce), plan(targets), limit)
    assert bound.seconds == pytest.approx(expected, rel=1e-4)
    assert getattr(bound, kind) == pytest.approx(expected, rel=1e-4)


def test_nothing_to_move_is_zero() -> None:
    bound = lower_bound(cluster([[1, 2]], [MB]), plan([[1, 2]]), limits())
    assert (bound.seconds, bound.bottleneck) == (0.0, "nothing to move")


def test_produce_at_or_above_the_rate_never_finishes() -> None:
    bound = lower_bound(cluster([[1, 2]], [MB], produce=RATE), plan([[1, 3]]), limits())
    assert math.isinf(bound.chain)


def test_leave_uses_the_best_spread_over_sources() -> None:
    # Four copies, each can come from broker 1 or 2: the flow splits them, two each.
    sim = cluster([[1, 2]] * 4, [50 * MB] * 4)
    bound = lower_bound(sim, plan([[1, 3], [1, 4], [1, 5], [1, 6]]), limits())
    assert bound.leave == pytest.approx(10.0, rel=1e-4)
    assert bound.leave_current_leaders == pytest.approx(20.0, rel=1e-4)  # all from leader 1


def _case(assignment: list[list[int]], targets: list[list[int]], sizes: list[int]) -> dict[str, Any]:
    return {
        "name": "generated",
        "cycle_interval": 1.0,
        "limits": {
            "reassignment.max.incoming.replica.movements.per.broker": 2,
            "reassignment.max.outgoing.replica.movements.per.broker": 2,
            "leader.reassignment.throttled.rate": RATE,
            "follower.reassignment.throttled.rate": RATE,
        },
        "cluster": {
            "seed": 1,
            "brokers": [{"id": b} for b in range(1, 6)],
            "topics": [
                {
                    "name": "t",
                    "partitions": len(assignment),
                    "replication_factor": 2,
                    "partition_bytes": sizes,
                    "produce_bytes_per_sec": 1000.0,
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


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(pairs, pairs, st.integers(1, 200)), min_size=1, max_size=6),
    st.sampled_from(["reassignd", "kip435-batch", "reassignd-event-driven"]),
)
def test_no_engine_run_beats_the_bound(moves: list[tuple[list[int], list[int], int]], strategy: str) -> None:
    case = case_from_dict(_case([m[0] for m in moves], [m[1] for m in moves], [m[2] * MB for m in moves]))
    run = STRATEGIES[strategy](case, 86400.0)
    sim = SimCluster.from_scenario(load_scenario(case.cluster))
    bound = lower_bound(sim, case.plan, case.limits)
    assert run.meter.done_at is not None
    assert run.meter.done_at >= bound.seconds * (1 - 1e-6)
