"""`reassignd snapshot` against the simulated cluster, as an operator runs it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from reassignd.model import TopicPartition, snapshot_from_json
from tests.services.simulator import SimProcess

pytestmark = pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reassignd", "--log-level", "warning", "snapshot", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_snapshot_of_the_whole_cluster(shared_sim: SimProcess, tmp_path: Path) -> None:
    out = tmp_path / "snapshot.json"
    result = _run("--bootstrap-servers", shared_sim.bootstrap_servers, "--out", str(out), "--timeout", "5")
    assert result.returncode == 0, result.stderr
    snapshot = snapshot_from_json(out.read_text())
    state = shared_sim.state()
    assert len(snapshot.partitions) == len(state["partitions"])
    for p in state["partitions"]:
        got = snapshot.partitions[TopicPartition(p["topic"], p["partition"])]
        assert (list(got.replicas), got.leader, got.size_bytes) == (
            p["replicas"],
            p["leader"],
            p["size_bytes"],
        )
        assert {str(b): s for b, s in got.replica_sizes.items()} == p["replica_sizes"]
    assert snapshot.cluster_id == state["cluster_id"]
    assert snapshot.read_at is not None and abs(snapshot.read_at - time.time()) < 120
    assert snapshot.broker_configs[1]["leader.replication.throttled.rate"] == "1000000"
    assert snapshot.topics["orders"].configs == {"min.insync.replicas": "2"}
    assert "10 partitions" in result.stderr


def test_snapshot_of_some_topics_from_a_config_file(shared_sim: SimProcess, tmp_path: Path) -> None:
    config = tmp_path / "reassignd.toml"
    servers = ", ".join(f'"{s}"' for s in shared_sim.bootstrap_servers.split(","))
    config.write_text(f"[cluster]\nbootstrap.servers = [{servers}]\nrequest.timeout.seconds = 5\n")
    result = _run("--config", str(config), "--out", "-", "--topics", "events", "--no-sizes")
    assert result.returncode == 0, result.stderr
    snapshot = snapshot_from_json(result.stdout)
    assert {tp.topic for tp in snapshot.partitions} == {"events"}
    assert len(snapshot.partitions) == 4
    assert all(not p.replica_sizes for p in snapshot.partitions.values())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--out", "x.json"], "--bootstrap-servers"),
        (["--bootstrap-servers", "127.0.0.1:1", "--out", "x.json", "--timeout", "0"], "--timeout"),
    ],
)
def test_bad_arguments_exit_2_naming_the_argument(args: list[str], message: str, tmp_path: Path) -> None:
    result = _run(*args)
    assert result.returncode == 2
    assert message in result.stderr


def test_unknown_topic_is_an_error_naming_it(shared_sim: SimProcess, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    result = _run("--bootstrap-servers", shared_sim.bootstrap_servers, "--out", str(out), "--topics", "nope")
    assert result.returncode == 2
    assert "topic nope" in result.stderr and "UNKNOWN_TOPIC_OR_PARTITION" in result.stderr
    assert not out.exists()
