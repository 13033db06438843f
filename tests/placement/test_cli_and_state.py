"""`reassignd place` and `reassignd show-cluster-state` end to end (no Spark), and the state figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reassignd.cli import main
from reassignd.model import Broker, ClusterSnapshot, PartitionState, TopicPartition, snapshot_to_json
from reassignd.placement.state import cluster_state


def _snapshot() -> ClusterSnapshot:
    brokers = [Broker(i, f"/dc{i % 2}/r{i // 2}") for i in range(4)] + [Broker(4, "/dc0/r9", online=False)]
    parts = [
        PartitionState(TopicPartition("t", 0), (0, 1), (0, 1), 0, size_bytes=10),
        PartitionState(TopicPartition("t", 1), (0, 2), (0, 2), 2, size_bytes=30),  # both in dc0
        PartitionState(TopicPartition("t", 2), (1, 0), (1, 0), 1, size_bytes=20),
    ]
    return ClusterSnapshot.build(brokers, parts, cluster_id="c")


@pytest.fixture
def snapshot_file(tmp_path: Path) -> Path:
    path = tmp_path / "snap.json"
    path.write_text(snapshot_to_json(_snapshot()))
    return path


def test_state_counts_and_spread() -> None:
    state = cluster_state(_snapshot())
    by_id = {b["broker"]: b for b in state["brokers"]}
    assert by_id[0]["replicas"] == 3 and by_id[0]["preferred_leaders"] == 2 and by_id[0]["leaders"] == 1
    assert by_id[2]["leaders"] == 1 and by_id[0]["bytes"] == 60
    assert state["spread_violations"]["partitions"] == 1
    assert state["spread_violations"]["examples"][0]["partition"] == 1
    assert state["scores"]["replicas"]["outside_band"] >= 1


def test_place_json(snapshot_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "place",
            "--snapshot",
            str(snapshot_file),
            "--partitions",
            "4",
            "--replication-factor",
            "2",
            "--seed",
            "1",
            "--json",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["placer"] == "multi-level" and len(out["replica_placement"]) == 4
    for entry in out["replica_placement"]:
        assert sorted(b % 2 for b in entry["replicas"]) == [0, 1]  # one per DC
        assert 4 not in entry["replicas"]  # offline


def test_place_force_simple_and_bad_input(snapshot_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "place",
                "--snapshot",
                str(snapshot_file),
                "--partitions",
                "2",
                "--replication-factor",
                "2",
                "--force-simple",
                "--brokers",
                "0,1",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["placer"] == "kafka-default"
    assert (
        main(["place", "--snapshot", str(snapshot_file), "--partitions", "2", "--replication-factor", "9"])
        == 2
    )
    assert "replication_factor" in capsys.readouterr().err


def test_show_cluster_state(snapshot_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show-cluster-state", "--snapshot", str(snapshot_file)]) == 0
    text = capsys.readouterr().out
    assert "partitions with uneven rack spread: 1" in text and "(offline)" in text
    assert main(["show-cluster-state", "--snapshot", str(snapshot_file), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["partitions"] == 3
