"""The peer comparison's own arithmetic: clusters, the lower bound, the figures every plan is measured by,
and the verdict; the peers themselves only run in `make bench`."""

from __future__ import annotations

from typing import Any

import pytest

from bench import peer_clusters as clusters
from bench.bench_peers import markdown, verdict
from bench.peer_tools import _kafka_tools_assignment


@pytest.mark.parametrize("name", clusters.SCENARIOS)
def test_scenarios_hold_one_replica_per_rack(name: str) -> None:
    s = clusters.build(name, 600)
    for p in s.snapshot.partitions.values():
        assert sorted(s.snapshot.brokers[b].rack for b in p.replicas) == list(clusters.RACKS)
    if name == "fill":
        assert all(not any(b in p.replicas for p in s.snapshot.partitions.values()) for b in s.brokers)


def test_measure_counts_moves_bytes_and_spread() -> None:
    s = clusters.build("drain", 600)
    drained = s.brokers[0]
    current = {(tp.topic, tp.partition): list(p.replicas) for tp, p in s.snapshot.partitions.items()}
    with pytest.raises(AssertionError, match="left on the drained"):
        clusters.measure(s, current)
    moved = dict(current)
    same_rack = [b for b in s.snapshot.brokers if b != drained and b % 3 == drained % 3]
    other_rack = [b for b in s.snapshot.brokers if b % 3 != drained % 3]
    expected_bytes = 0
    for i, (tp, replicas) in enumerate(sorted(current.items())):
        if drained in replicas:
            pool = same_rack if i % 2 else other_rack  # half of them break the rack spread
            choice = next(b for b in pool if b not in replicas)
            moved[tp] = [choice if b == drained else b for b in replicas]
            expected_bytes += s.snapshot.partitions[
                next(k for k in s.snapshot.partitions if (k.topic, k.partition) == tp)
            ].size_bytes
    figures = clusters.measure(s, moved)
    assert figures["replicas_moved"] == clusters.lower_bound(s) == sum(drained in r for r in current.values())
    assert figures["bytes_moved"] == expected_bytes
    assert 0 < figures["rack_violations"] < figures["replicas_moved"]


def _row(
    tool: str, moves: int, moved: int, spread: tuple[int, int], *, violations: int, seconds: float
) -> dict[str, Any]:
    loads = {"min": spread[0], "max": spread[1], "max_over_avg": spread[1] / ((spread[0] + spread[1]) / 2)}
    return {
        "tool": tool,
        "replicas_moved": moves,
        "bytes_moved": moved,
        "replicas": loads,
        "leaders": loads,
        "bytes": loads,
        "rack_violations": violations,
        "seconds": seconds,
    }


def test_verdict_compares_with_the_best_peer_on_each_figure() -> None:
    rows = [
        _row("kafka-utils", 100, 500, (10, 10), violations=0, seconds=900.0),
        _row("kafka-tools", 120, 50, (9, 12), violations=3, seconds=60.0),
        {"tool": "kafka-other", "seconds": 1800.0, "error": "no plan within 1800 s"},
        _row("reassignd", 100, 60, (10, 11), violations=0, seconds=5.0),
        _row("reassignd --size-aware", 101, 600, (10, 10), violations=0, seconds=5.0)
        | {"bytes_lower_bound": 450},
        _row("reassignd --engine spark", 100, 60, (10, 11), violations=0, seconds=25.0),
    ]
    v = verdict(rows, 50_000, "rebalance")
    assert set(v) == {"reassignd", "reassignd --size-aware"}
    count, sized = v["reassignd"], v["reassignd --size-aware"]
    assert count["moves"] and not count["replicas_balance"] and count["rack_spread"]
    assert count["bytes_over_least_peer"] == 1.2 and count["bytes_within_1_5x"]
    assert count["faster_than_every_peer"]
    assert not sized["moves"] and sized["replicas_balance"] and not sized["bytes_within_1_5x"]
    assert sized["byte_band_bound_over_least_peer"] == 9.0
    table = markdown(
        {
            "results": [
                {
                    "scenario": "rebalance",
                    "partitions": 50_000,
                    "brokers": 60,
                    "lower_bound": 100,
                    "rows": rows,
                    "verdict": v,
                }
            ]
        }
    )
    assert "no plan: no plan within 1800 s" in table
    assert "| rebalance | 50,000 | reassignd | yes | **no** |" in table


def test_kafka_tools_output_is_read_as_an_assignment() -> None:
    after = {
        "topics": {
            "orders": {
                "partitions": {"0": {"size": 1, "replicas": [3, 1]}, "1": {"size": 2, "replicas": [2, 3]}}
            }
        }
    }
    assert _kafka_tools_assignment(after) == {("orders", 0): [3, 1], ("orders", 1): [2, 3]}
