"""The per-broker figures a finished plan keeps: replicas gained and lost, bytes received, throttle peaks."""

from __future__ import annotations

from reassignd.engine.broker_summary import broker_moves, throttle_peaks
from reassignd.model import TopicPartition

A, B, C = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_broker_moves_compare_the_pre_plan_lists_with_the_final_ones() -> None:
    baseline = {A: (1, 2, 3), B: (1, 2, 3), C: (2, 3)}
    final = {A: (4, 2, 3), B: (1, 2, 3), C: (5, 6)}  # B never moved (cancelled before it started)
    sizes = {A: 100, B: 200, C: 50}
    assert broker_moves(baseline, final, sizes) == [
        {"broker": 1, "replicas_in": 0, "replicas_out": 1, "bytes_in": 0},
        {"broker": 2, "replicas_in": 0, "replicas_out": 1, "bytes_in": 0},
        {"broker": 3, "replicas_in": 0, "replicas_out": 1, "bytes_in": 0},
        {"broker": 4, "replicas_in": 1, "replicas_out": 0, "bytes_in": 100},
        {"broker": 5, "replicas_in": 1, "replicas_out": 0, "bytes_in": 50},
        {"broker": 6, "replicas_in": 1, "replicas_out": 0, "bytes_in": 50},
    ]
    assert broker_moves(baseline, {}, sizes) == [], "a partition never read is left out"


def test_throttle_peaks_only_rise_and_survive_the_restore() -> None:
    first = throttle_peaks(None, {4: 10.0}, {1: 30.0})
    assert first == {"1": {"leader": 30.0}, "4": {"follower": 10.0}}
    raised = throttle_peaks({"throttles_peak": first}, {4: 25.0, 5: 5.0}, {1: 20.0})
    assert raised == {"1": {"leader": 30.0}, "4": {"follower": 25.0}, "5": {"follower": 5.0}}
    restored = throttle_peaks({"throttles_peak": raised}, {}, {})
    assert restored == raised
    assert list(throttle_peaks(None, {10: 1.0, 9: 1.0}, {})) == ["9", "10"], "ordered by broker id"
