"""The strategies on tiny scenarios: each ends at the plan, the meter counts what the driver did."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from bench.bench_strategies import check, leader_skew
from bench.lower_bound import lower_bound
from bench.strategies import SCENARIOS, STRATEGIES, case_from_dict, load_cases, make_meter

MB = 1_000_000
RATE = 10 * MB


def tiny(events: list[dict[str, Any]] | None = None, incoming: int = 1) -> dict[str, Any]:
    """Four brokers, four RF-2 partitions of 100 MB; every partition moves one replica to broker 4."""
    return {
        "name": "tiny",
        "cycle_interval": 5.0,
        "limits": {
            "reassignment.max.incoming.replica.movements.per.broker": incoming,
            "reassignment.max.outgoing.replica.movements.per.broker": 5,
            "leader.reassignment.throttled.rate": RATE,
            "follower.reassignment.throttled.rate": RATE,
        },
        "events": events or [],
        "cluster": {
            "seed": 1,
            "brokers": [{"id": b} for b in range(1, 5)],
            "topics": [
                {
                    "name": "t",
                    "partitions": 4,
                    "replication_factor": 2,
                    "partition_bytes": 100 * MB,
                    "produce_bytes_per_sec": 0.0,
                    "configs": {"min.insync.replicas": "1"},
                    "assignment": [[1, 2], [2, 3], [3, 1], [1, 3]],
                }
            ],
        },
        "plan": {
            "version": 1,
            "partitions": [
                {"topic": "t", "partition": 0, "replicas": [1, 4]},
                {"topic": "t", "partition": 1, "replicas": [2, 4]},
                {"topic": "t", "partition": 2, "replicas": [3, 4]},
                {"topic": "t", "partition": 3, "replicas": [1, 4]},
            ],
        },
    }


def throttles_left(run: Any) -> list[str]:
    sim = run.meter.sim
    left = [f"topic {t.name}: {k}" for t in sim.topics.values() for k in t.configs if "throttled" in k]
    left += [f"broker {b.id}: {k}" for b in sim.brokers.values() for k in b.configs if "throttled" in k]
    return left


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_strategy_reaches_the_plan_and_clears_its_throttles(strategy: str) -> None:
    case = case_from_dict(tiny())
    run = STRATEGIES[strategy](case, 86400.0)
    assert run.finished
    assert run.meter.at_target()
    assert run.meter.done_at is not None
    assert throttles_left(run) == []
    assert run.meter.sim.observed()["under_min_isr"] == []


def test_the_meter_applies_an_event_due_at_the_current_instant() -> None:
    """A copy that starts the instant another one through the same follower quota ends finds that quota's
    window exactly at its rate: the simulator reports the quota shutting now, and only advancing applies it.
    The meter skipped advancing by 0 s, so it asked again forever (the kip435-batch run hung this way)."""
    meter = make_meter(case_from_dict(tiny()))
    sim = meter.sim
    sim.incremental_alter_configs(4, "4", [("follower.replication.throttled.rate", 0, str(RATE))])
    sim.incremental_alter_configs(2, "t", [("follower.replication.throttled.replicas", 0, "*")])
    sim.alter_partition_reassignment("t", 0, [1, 4])
    while meter.moving():
        upcoming = sim.next_event_time()
        assert upcoming is not None
        meter.advance_to(upcoming)
    assert sim.now == pytest.approx(10.0)  # 100 MB at 10 MB/s
    sim.alter_partition_reassignment("t", 1, [2, 4])
    assert sim.next_event_time() == sim.now  # the window holds 10 MB/s: the quota shuts at once
    meter.advance_to(sim.now)
    upcoming = sim.next_event_time()
    assert upcoming is not None and upcoming > sim.now


def test_the_meter_fails_when_an_event_due_now_is_never_applied() -> None:
    meter = make_meter(case_from_dict(tiny()))
    meter._next_event = lambda: meter.sim.now  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match=r"due at 0\.0 s that advancing does not apply"):
        meter.advance_to(1.0)


def test_stock_moves_everything_at_once_in_one_request() -> None:
    run = STRATEGIES["stock"](case_from_dict(tiny()), 86400.0)
    peaks = {b["id"]: b["incoming_peak"] for b in run.meter.sim.observed()["brokers"]}
    assert peaks[4] == 4  # all four copies into broker 4 together
    # 4 x 100 MB through broker 4's 10 MB/s follower throttle
    assert run.meter.done_at == pytest.approx(40.0, rel=1e-3)
    # set: 1 topic request (2 keys) + 4 broker requests (2 rates each); 1 alter;
    # clear: 1 topic request (2 deletes) + 4 broker requests (3 deletes each, the log-dir rate too)
    assert run.meter.config_writes == (2 + 4 * 2) + (2 + 4 * 3)
    assert run.meter.admin_requests == (1 + 4) + 1 + (1 + 4)


@pytest.mark.parametrize("strategy", ["reassignd", "kip435-batch", "reassignd-event-driven"])
def test_engine_strategies_hold_the_per_broker_limit(strategy: str) -> None:
    run = STRATEGIES[strategy](case_from_dict(tiny(incoming=1)), 86400.0)
    peaks = {b["id"]: b["incoming_peak"] for b in run.meter.sim.observed()["brokers"]}
    assert peaks[4] == 1
    # one copy at a time, 10 s each; each next step waits at most one cycle interval
    interval = 0.001 if strategy == "reassignd-event-driven" else 5.0
    assert run.meter.done_at is not None
    assert 40.0 <= run.meter.done_at <= 40.0 + 4 * interval


def test_reassignd_is_not_slower_than_batches() -> None:
    case = case_from_dict(tiny(incoming=2))
    assert (
        STRATEGIES["reassignd"](case, 86400.0).meter.done_at
        <= STRATEGIES["kip435-batch"](case, 86400.0).meter.done_at
    )


def test_extra_replica_seconds_integrate_exactly() -> None:
    # One RF-1 partition moves 1 -> 2: one extra replica for exactly 100 MB / 10 MB/s.
    data = tiny()
    data["cluster"]["topics"][0].update(
        {"partitions": 1, "replication_factor": 1, "assignment": [[1]], "partition_bytes": 100 * MB}
    )
    data["plan"]["partitions"] = [{"topic": "t", "partition": 0, "replicas": [2]}]
    run = STRATEGIES["stock"](case_from_dict(data), 86400.0)
    assert run.meter.extra_replica_seconds == pytest.approx(10.0, rel=1e-6)


def test_broker_failure_happens_at_its_time_and_the_move_waits_for_it() -> None:
    events = [{"at": 3.0, "action": "stop", "broker": 4}, {"at": 100.0, "action": "start", "broker": 4}]
    case = case_from_dict(tiny(events=events, incoming=5))
    meter = make_meter(case)
    meter.advance_to(2.0)
    assert meter.sim.brokers[4].online
    meter.advance_to(50.0)
    assert not meter.sim.brokers[4].online
    run = STRATEGIES["stock"](case, 86400.0)
    assert run.meter.done_at is not None and run.meter.done_at > 100.0
    assert run.meter.sim.brokers[4].online


def test_leader_skew_counts_brokers_holding_replicas() -> None:
    run = STRATEGIES["reassignd"](case_from_dict(tiny()), 86400.0)
    skew = leader_skew(run)
    assert skew["max_over_mean"] >= 1.0
    assert skew["max_minus_min"] >= 0.0


@pytest.mark.parametrize(
    ("strategy", "change", "expected"),
    [
        ("reassignd", {}, 0),
        ("reassignd", {"peak_incoming_per_broker": 6}, 1),
        ("reassignd", {"under_min_isr_partition_seconds": 1.0}, 1),
        ("reassignd", {"final_assignment_ok": False}, 1),
        ("stock", {"peak_incoming_per_broker": 60}, 0),  # the stock tool has no limit to break
        ("stock", {"finished": False}, 1),
    ],
)
def test_check_flags_broken_properties(strategy: str, change: dict[str, Any], expected: int) -> None:
    case = case_from_dict(tiny(incoming=5))
    result = {
        "finished": True,
        "final_assignment_ok": True,
        "peak_incoming_per_broker": 5,
        "peak_outgoing_per_broker": 5,
        "under_min_isr_partition_seconds": 0.0,
        **change,
    }
    assert len(check(case, strategy, result, baseline=0.0)) == expected


def test_shipped_scenarios_load_and_name_their_files() -> None:
    cases = load_cases()
    assert {c.name for c in cases} == {p.stem for p in Path(SCENARIOS).glob("*.json")}
    assert len(cases) == 8
    assert sum(c.has_failure for c in cases) == 3
    assert [c.name for c in cases if c.lost_brokers] == ["broker-lost"]
    for case in cases:
        assert len(case.plan) > 0


def test_the_outage_bound_holds_back_a_plan_keeping_a_stopped_broker() -> None:
    """A partition whose target keeps broker 5 cannot complete while it is down (Kafka waits for the
    whole target in sync): if the plan cannot finish before the stop, it cannot before the return."""
    [case] = load_cases(["broker-failure"])
    plain = lower_bound(make_meter(case).sim, case.plan, case.limits)
    aware = lower_bound(make_meter(case).sim, case.plan, case.limits, case.outages)
    assert case.outages == ((5, 300.0, 900.0),)
    assert plain.seconds < 900.0 and aware.seconds == aware.outage == 900.0
    assert "outage of broker 5" in aware.bottleneck


def test_bad_event_action_is_refused_with_its_value() -> None:
    data = copy.deepcopy(tiny(events=[{"at": 1, "action": "explode", "broker": 1}]))
    with pytest.raises(ValueError, match="explode"):
        case_from_dict(json.loads(json.dumps(data)))


@pytest.mark.parametrize("strategy", ["stock", "reassignd"])
def test_runs_are_reproducible(strategy: str) -> None:
    case = next(c for c in load_cases() if c.name == "replication-factor-2-to-3")
    first, second = (STRATEGIES[strategy](case, 86400.0) for _ in range(2))
    assert first.meter.done_at == second.meter.done_at
    assert first.meter.timeline == second.meter.timeline
    assert (first.meter.admin_requests, first.meter.config_writes) == (
        second.meter.admin_requests,
        second.meter.config_writes,
    )
