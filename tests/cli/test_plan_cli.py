"""`reassignd plan` as an operator runs it (in-process planner, no Spark): a drain moves only what it must,
balances preferred leaders only when asked (--leaders), and a plan that does not reach its goal exits 1."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from reassignd.cli import main
from reassignd.model import ReassignmentPlan, snapshot_to_json
from tests.pipeline.clusters import expansion


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.json"
    path.write_text(snapshot_to_json(expansion()))
    return path


def plan(tmp_path: Path, snapshot: Path, *args: str) -> tuple[int, ReassignmentPlan]:
    out = tmp_path / "plan.json"
    code = main(["plan", "--snapshot", str(snapshot), "--out", str(out), "--engine", "local", *args])
    return code, ReassignmentPlan.from_json(out.read_text())


def test_a_drain_touches_only_partitions_on_the_drained_broker(
    tmp_path: Path, snapshot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, drained = plan(tmp_path, snapshot, "--goal", "drain", "--brokers", "4", "--seed", "1")
    assert code == 0
    current = expansion().partitions
    assert drained.targets
    assert all(4 in current[tp].replicas for tp in drained.targets)
    line = capsys.readouterr().out
    assert "not held" not in line and "within threshold" in line


def test_leaders_are_balanced_only_when_asked(
    tmp_path: Path, snapshot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = plan(tmp_path, snapshot, "--goal", "drain", "--brokers", "4", "--leaders", "--json")
    figures = json.loads(capsys.readouterr().out)["clusters"][0]
    leader = next(g for g in figures["goals"] if g["goal"] == "leader-balance")
    assert leader["asked"] is True
    assert code == (0 if figures["asked_goals_held"] else 1)
    code, _ = plan(tmp_path, snapshot, "--goal", "fill", "--brokers", "9", "--no-leaders", "--json")
    figures = json.loads(capsys.readouterr().out)["clusters"][0]
    assert "leader-balance" not in {g["goal"] for g in figures["goals"]}


def test_a_goal_not_held_exits_1_and_says_why(
    tmp_path: Path, snapshot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue: "drain not held ..." exited 0. The plan is still written (it does what it can)."""
    topic = next(iter(expansion().partitions)).topic
    code, written = plan(tmp_path, snapshot, "--goal", "drain", "--brokers", "4", "--exclude-topics", topic)
    assert code == 1
    captured = capsys.readouterr()
    assert "drain not held: drained brokers hold 4:" in captured.out
    assert "reassignd: the plan does not reach its goal (drain not held)" in captured.err
    assert written.targets
    code, _ = plan(
        tmp_path, snapshot, "--goal", "drain", "--brokers", "4", "--exclude-topics", topic, "--json"
    )
    assert code == 1 and json.loads(capsys.readouterr().out)["clusters"][0]["asked_goals_held"] is False


def test_show_cluster_state_reads_as_a_person_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue: bytes as 66464294306, "outside the band" without saying which band, and 10 examples
    of uneven spread with no word of how many more there were."""
    from reassignd.model import Broker, ClusterSnapshot, PartitionState, TopicPartition

    brokers = [Broker(b, f"/dc{b % 2}/r{b}") for b in range(1, 7)]
    parts = [
        PartitionState(TopicPartition("t", p), (1, 3, 5), (1, 3, 5), 1, size_bytes=2_500_000_000 + p)
        for p in range(14)
    ]
    path = tmp_path / "s.json"
    path.write_text(snapshot_to_json(ClusterSnapshot.build(brokers, parts)))
    assert main(["show-cluster-state", "--snapshot", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["broker", "rack", "replicas", "leaders", "preferred", "bytes"]
    assert lines[1].split() == ["1", "/dc1/r1", "14", "14", "14", "35.0", "GB"]
    assert "replicas: average 7, band ±10% [7, 7]: 6 of 6 brokers outside" in lines
    assert "bytes: average 17.5 GB, band ±10% [15.8 GB, 19.3 GB]: 6 of 6 brokers outside" in lines
    assert "partitions with uneven rack spread: 14" in lines
    assert lines[-1] == "  ... and 4 more (--json lists up to 50)"
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]


def test_the_plan_says_how_old_its_sizes_are(
    tmp_path: Path, snapshot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 27, "each figure says its moment": the bytes a plan moves are the snapshot's, read earlier."""
    doc = json.loads(snapshot.read_text())
    snapshot.write_text(json.dumps({**doc, "read_at": time.time() - 600}))
    code, _ = plan(tmp_path, snapshot, "--goal", "drain", "--brokers", "4", "--seed", "1")
    assert code == 0
    assert "sizes and rates as read at " in capsys.readouterr().err
    plan(tmp_path, snapshot, "--goal", "drain", "--brokers", "4", "--seed", "1", "--json")
    figures = json.loads(capsys.readouterr().out)["clusters"][0]
    assert figures["sizes_read_at"] == pytest.approx(time.time() - 600, abs=60)
