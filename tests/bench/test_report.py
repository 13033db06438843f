"""The report: tables and charts from a strategies result, nothing written after a quick run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench import report


def strategies_doc() -> dict[str, Any]:
    result = {
        "finished": True,
        "makespan_seconds": 110.0,
        "ratio_to_lower_bound": 1.1049,
        "peak_incoming_per_broker": 5,
        "peak_outgoing_per_broker": 4,
        "extra_replica_seconds": 1000.0,
        "under_min_isr_partition_seconds": 0.0,
        "leader_skew_at_end": {"max_over_mean": 1.2, "max_minus_min": 3.0},
        "admin_requests": 12,
        "config_writes": 30,
    }
    scenario = {
        "description": "d",
        "partitions_moved": 4,
        "has_failure": False,
        "limits": {"max_incoming_per_broker": 5, "max_outgoing_per_broker": 5},
        "lower_bound": {
            "seconds": 100.0,
            "enter": 100.0,
            "leave": 50.0,
            "chain": 20.0,
            "bottleneck": "enter broker 3",
            "leave_current_leaders": 60.0,
        },
        "strategies": {"stock": {**result, "ratio_to_lower_bound": 1.02}, "reassignd": result},
        "timelines": {
            "reassignd": {
                "horizon": 110.0,
                "points": [[0.0, {"3": 2}], [50.0, {"3": 1, "4": 1}], [110.0, {}]],
            }
        },
    }
    machine = {"python": "3.11", "machine": "x86_64", "cpus": 2, "date": "2026-11-22"}
    return {"machine": machine, "figures": {"target_ratio": 1.1, "scenarios": {"tiny": scenario}}}


def test_full_report_writes_tables_and_charts(tmp_path: Path) -> None:
    (tmp_path / "strategies.json").write_text(json.dumps(strategies_doc()))
    written = report.write(quick=False, directory=tmp_path)
    names = {p.name for p in written}
    assert names == {"README-table.md", "strategies.md", "makespan-ratio.png", "movements-tiny.png"}
    for path in written:
        assert path.stat().st_size > 0
    table = (tmp_path / "README-table.md").read_text()
    assert "2026-11-22" in table
    assert "| tiny | 1.020x (5) | 1.105x (5) |" in table  # three decimals: 1.1049 is not "1.10"
    detail = (tmp_path / "strategies.md").read_text()
    assert "| tiny | reassignd | 110 | 1.105x | 5 / 4 | 1,000 | 0 | 1.20 | 12 | 30 |" in detail


def test_quick_report_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "strategies-quick.json").write_text(json.dumps(strategies_doc()))
    assert report.write(quick=True, directory=tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["strategies-quick.json"]


def test_missing_results_write_nothing(tmp_path: Path) -> None:
    assert report.write(quick=False, directory=tmp_path) == []
