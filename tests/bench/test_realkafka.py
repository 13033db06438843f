"""The pure parts of bench/bench_realkafka.py: figures from samples, and the scenarios' plans."""

from __future__ import annotations

from bench.bench_realkafka import (
    eta_max_error,
    initial_assignment,
    isr_figures,
    leader_skew,
    median_or_none,
    target_assignment,
    throttle_changes,
)


def test_isr_figures_counts_peak_and_time_under_min_isr() -> None:
    samples = [(0.0, {0: 3, 1: 3}), (1.0, {0: 2, 1: 3}), (2.0, {0: 1, 1: 2}), (3.5, {0: 3, 1: 3})]
    assert isr_figures(samples, 3, 2) == {"peak_under_replicated": 2, "seconds_under_min_isr": 1.5}
    assert isr_figures([], 3, 2) == {"peak_under_replicated": 0, "seconds_under_min_isr": 0.0}


def test_eta_max_error_from_ten_percent_on() -> None:
    # finished at 100: at t=10 (5%) the ETA is ignored; at t=20 it says 100 s left for 80 (25% off)
    samples = [(10.0, 5.0, 1000.0), (20.0, 20.0, 100.0), (60.0, 70.0, 40.0), (90.0, 95.0, None)]
    assert eta_max_error(samples, 100.0) == 0.25
    assert eta_max_error([(0.0, 5.0, 10.0)], 100.0) is None


def test_eta_error_is_judged_where_enough_time_is_left() -> None:
    # finished at 100: at t=98 the ETA says 1 s for 2 (50% off, the cycle's and the poll's granularity)
    samples = [(20.0, 20.0, 84.0), (98.0, 99.0, 1.0)]
    assert eta_max_error(samples, 100.0) == 0.5
    assert eta_max_error(samples, 100.0, min_left=5.0) == 0.05


def test_throttle_changes_count_a_removed_config() -> None:
    # the stock tool's --verify removes an operator's broker rate: a run's figures must show it
    before = {"broker 3: leader.replication.throttled.rate": "1000000000", "broker 1: x": "1"}
    after = {"broker 1: x": "2", "topic t: leader.replication.throttled.replicas": "0:1"}
    assert throttle_changes(before, after) == {
        "broker 1: x": "2",
        "broker 3: leader.replication.throttled.rate": None,
        "topic t: leader.replication.throttled.replicas": "0:1",
    }
    assert throttle_changes(before, dict(before)) == {}


def test_leader_skew_counts_brokers_leading_nothing() -> None:
    assert leader_skew({0: 1, 1: 1, 2: 2}, [1, 2, 3]) == 2
    assert leader_skew({0: 1, 1: 2}, [1, 2]) == 0


def test_median_skips_missing_values() -> None:
    assert median_or_none([1.0, None, 3.0]) == 2.0
    assert median_or_none([None]) is None


def test_scenario_plans_move_what_they_say() -> None:
    racks = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
    for scenario in ("drain", "fill", "racks"):
        start = initial_assignment(scenario, 24)
        target = target_assignment(scenario, start)
        assert target, scenario
        for p, replicas in target.items():
            assert len(set(replicas)) == 3 and replicas != start[p]
        final = {**start, **target}
        if scenario == "drain":
            assert all(6 not in r for r in final.values())
        if scenario == "fill":
            assert sum(6 in r for r in final.values()) == 12
        if scenario == "racks":
            assert all(racks[b] != "b" for r in final.values() for b in r)
