"""`reassignd schedule`: the dry run command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reassignd.cli import main
from reassignd.model import ReassignmentPlan, snapshot_to_json

from .helpers import cluster, tp


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    snapshot = cluster(10, {tp(0): (0, 1, 2, 3, 4), tp(1): (1, 2, 3)})
    plan = ReassignmentPlan({tp(0): (5, 6, 7, 8, 9), tp(1): (4, 5, 6, 7)})
    snap_path, plan_path = tmp_path / "snapshot.json", tmp_path / "plan.json"
    snap_path.write_text(snapshot_to_json(snapshot))
    plan_path.write_text(plan.to_json())
    return snap_path, plan_path


def test_schedule_json_lists_every_step(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "limits.toml"
    config.write_text(
        "reassignment.parallel.replica.count = 2\n"
        "reassignment.parallel.partition.count = 1\n"
        "[daemon]\nanything = 1\n"
    )
    snap, plan = files
    code = main(["schedule", str(plan), "--snapshot", str(snap), "--config", str(config), "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["finished"] is True
    first = next(p for p in out["partitions"] if p["partition"] == 0)
    assert [s["replicas"] for s in first["steps"]] == [
        [0, 1, 2, 3, 4],
        [5, 0, 1, 2, 3, 4],
        [5, 6, 2, 3, 4],
        [5, 6, 7, 8, 4],
        [5, 6, 7, 8, 9],
    ]
    assert [s["moves_leadership"] for s in first["steps"]] == [False, True, False, False, False]
    cycles = [s["cycle"] for p in out["partitions"] for s in p["steps"][1:]]
    assert len(cycles) == len(set(cycles))  # one partition at a time
    assert out["limits"]["reassignment.parallel.partition.count"] == 1


def test_schedule_rejects_unknown_reassignment_keys(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "limits.toml"
    config.write_text("reassignment.parallel.replicas = 2\nreassignment.parallel.partition.count = 0\n")
    snap, plan = files
    code = main(["schedule", str(plan), "--snapshot", str(snap), "--config", str(config)])
    assert code == 2
    err = capsys.readouterr().err
    assert "reassignment.parallel.replicas" in err and "unknown key" in err
    assert "reassignment.parallel.partition.count" in err and "got 0" in err


def test_schedule_runs_as_a_process(files: tuple[Path, Path]) -> None:
    snap, plan = files
    result = subprocess.run(
        [sys.executable, "-m", "reassignd", "schedule", str(plan), "--snapshot", str(snap)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "t-0: (0,1,2,3,4) -> (5,0,1,2,3,4)*" in result.stdout
    assert "(* this step moves the" in result.stdout, "the mark is explained before it is used"


def test_schedule_keeps_plan_as_a_deprecated_option(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    snap, plan = files
    assert main(["schedule", "--snapshot", str(snap), "--plan", str(plan), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["finished"] is True
    assert "`schedule --plan PLAN` is deprecated; write `schedule PLAN`" in captured.err
    assert main(["schedule", str(plan), "--snapshot", str(snap), "--plan", str(plan)]) == 2
    assert "give the plan once" in capsys.readouterr().err
    assert main(["schedule", "--snapshot", str(snap)]) == 2
    assert "PLAN: the plan file is required" in capsys.readouterr().err


def test_schedule_reports_what_stays_blocked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = cluster(4, {tp(0): (0, 1), tp(1): (0, 1)}, offline=[3])
    plan = ReassignmentPlan({tp(0): (0, 3), tp(1): (0, 2)})
    snap_path, plan_path = tmp_path / "s.json", tmp_path / "p.json"
    snap_path.write_text(snapshot_to_json(snapshot))
    plan_path.write_text(plan.to_json())
    code = main(["schedule", str(plan_path), "--snapshot", str(snap_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["finished"] is False
    assert out["blocked"] == [
        {"topic": "t", "partition": 0, "reason": "offline_target", "detail": "target broker(s) [3] offline"}
    ]
    reached = {p["partition"]: p["reached_target"] for p in out["partitions"]}
    assert reached == {0: False, 1: True}
