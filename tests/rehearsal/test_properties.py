"""Properties of any rehearsal: it ends at the plan, within the limits, no faster than the throttles allow."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reassignd.engine import Limits
from reassignd.model import ReassignmentPlan
from reassignd.rehearsal import rehearse
from reassignd.sim import SimCluster, load_scenario

MB = 1_000_000
BROKERS = (1, 2, 3, 4, 5, 6)


@st.composite
def cases(draw: Any) -> tuple[dict[str, Any], ReassignmentPlan, dict[str, Any]]:
    count = draw(st.integers(1, 8))
    rf = draw(st.integers(1, 3))
    assignment = [draw(st.permutations(BROKERS))[:rf] for _ in range(count)]
    targets = [draw(st.permutations(BROKERS))[:rf] for _ in range(count)]
    sizes = [draw(st.integers(1, 200)) * MB for _ in range(count)]
    scenario = {
        "seed": 1,
        "brokers": [{"id": b, "rack": f"/dc{b % 2 + 1}/rack{b % 3 + 1}"} for b in BROKERS],
        "topics": [
            {
                "name": "t",
                "partitions": count,
                "replication_factor": rf,
                "partition_bytes": sizes,
                "produce_bytes_per_sec": 0.0,
                "configs": {"min.insync.replicas": "1"},
                "assignment": [list(a) for a in assignment],
            }
        ],
    }
    plan = ReassignmentPlan.from_dict(
        {
            "version": 1,
            "partitions": [
                {"topic": "t", "partition": i, "replicas": list(t)} for i, t in enumerate(targets)
            ],
        }
    )
    limits = {
        "reassignment.parallel.replica.count": draw(st.integers(1, 3)),
        "reassignment.max.incoming.replica.movements.per.broker": draw(st.integers(1, 3)),
        "reassignment.max.outgoing.replica.movements.per.broker": draw(st.integers(1, 3)),
        "follower.reassignment.throttled.rate": draw(st.integers(5, 50)) * MB,
        "leader.reassignment.throttled.rate": draw(st.integers(5, 50)) * MB,
    }
    return scenario, plan, limits


@settings(max_examples=60, deadline=None)
@given(case=cases(), interval=st.sampled_from([0.5, 2.0, 5.0]))
def test_any_plan_ends_at_its_targets_within_limits_and_no_faster_than_the_throttles(
    case: tuple[dict[str, Any], ReassignmentPlan, dict[str, Any]], interval: float
) -> None:
    scenario, plan, raw_limits = case
    sim = SimCluster.from_scenario(load_scenario(scenario))
    result = rehearse(sim, plan, Limits.from_mapping(raw_limits), cycle_interval=interval)
    assert result.finished, result.ended_because
    assert {(p.topic, p.index): tuple(p.replicas) for p in sim.topics["t"].partitions} == {
        (tp.topic, tp.partition): t for tp, t in plan.targets.items()
    }
    incoming_limit = raw_limits["reassignment.max.incoming.replica.movements.per.broker"]
    assert all(peak <= incoming_limit for peak in result.peak_incoming.values()), result.peak_incoming
    follower_rate = raw_limits["follower.reassignment.throttled.rate"]
    leader_rate = raw_limits["leader.reassignment.throttled.rate"]
    # every copy into a broker shares its follower throttle, every copy it serves its leader throttle; a
    # throttle's window (11-12 samples of 1 s) lets up to one window of its rate through early
    window = 12.0
    assert result.duration_seconds >= max(result.bytes_in.values(), default=0) / follower_rate - window - 1e-6
    assert result.duration_seconds >= max(result.bytes_out.values(), default=0) / leader_rate - window - 1e-6
    # and the duration is a whole number of daemon cycles
    cycles = result.duration_seconds / interval
    assert abs(cycles - round(cycles)) < 1e-6
    assert not any(b.configs for b in sim.brokers.values())
