"""`reassignd verify` as an operator runs it: a subprocess reading a simulated cluster over TCP, no daemon."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
from reassignd.model import TopicPartition
from tests.services.simulator import SimProcess

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
    ),
]

SCENARIO: dict[str, Any] = {
    "brokers": [{"id": b, "rack": f"r{b}", "log_dirs": ["/data/a", "/data/b"]} for b in range(1, 6)],
    "topics": [
        {
            "name": "t",
            "partitions": 4,
            "replication_factor": 3,
            "partition_bytes": 1000,
            "produce_bytes_per_sec": 0,
            "assignment": [[1, 2, 3]] * 4,
            "log_dirs": [["/data/a"] * 3] * 4,
        }
    ],
}
PRE = [1, 2, 3]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    """Paused: the reassignments started below stay in flight."""
    with SimProcess(SCENARIO, workdir=tmp_path_factory.mktemp("sim"), time_scale=0) as sim:
        admin = KafkaClusterAdmin(AdminSettings(client={"bootstrap.servers": sim.bootstrap_servers}))

        async def start() -> None:
            try:
                errors = await admin.alter_partition_reassignments(
                    {TopicPartition("t", 1): [4, 2, 3], TopicPartition("t", 3): [5, 2, 3]}
                )
                assert not any(errors.values()), errors
            finally:
                await admin.close()

        asyncio.run(start())
        yield sim


def verify(sim: SimProcess, *args: str) -> subprocess.CompletedProcess[str]:
    cluster = ("--bootstrap-servers", sim.bootstrap_servers, "--timeout", "5")
    return subprocess.run(
        [sys.executable, "-m", "reassignd", "--log-level", "warning", "verify", *args, *cluster],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def write(path: Path, entries: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"version": 1, "partitions": entries}))
    return str(path)


def test_every_verdict_from_the_live_cluster(sim: SimProcess, tmp_path: Path) -> None:
    plan = write(
        tmp_path / "plan.json",
        [
            {"topic": "t", "partition": 0, "replicas": [1, 2, 3], "log_dirs": ["/data/a", "any", "any"]},
            {"topic": "t", "partition": 1, "replicas": [4, 2, 3]},  # in flight toward it
            {"topic": "t", "partition": 2, "replicas": [4, 2, 3]},  # untouched
            {"topic": "t", "partition": 3, "replicas": [4, 2, 3]},  # in flight toward 5
            {"topic": "gone", "partition": 0, "replicas": [1, 2, 3]},
        ],
    )
    rollback = write(
        tmp_path / "rollback.json",
        [{"topic": t, "partition": p, "replicas": PRE} for t, p in [("t", 0), ("t", 1), ("t", 2), ("t", 3)]],
    )
    result = verify(sim, plan, "--rollback", rollback, "--json")
    assert result.returncode == 1, result.stderr
    answer = json.loads(result.stdout)
    states = {(p["topic"], p["partition"]): p["state"] for p in answer["partitions"]}
    assert states == {
        ("gone", 0): "diverged",
        ("t", 0): "applied",
        ("t", 1): "in_progress",
        ("t", 2): "not_applied",
        ("t", 3): "diverged",
    }
    assert answer["applied"] is False
    assert answer["counts"] == {"applied": 1, "in_progress": 1, "not_applied": 1, "diverged": 2}

    text = verify(sim, plan)  # without the pre-plan, and for people
    assert text.returncode == 1
    lines = text.stdout.splitlines()
    assert lines[-1] == "plan not applied: 1 applied, 1 in progress, 1 not applied, 2 diverged"
    assert lines[:4] == [
        "gone-0  diverged  - -> 1,2,3  (no such partition: topic deleted?)",
        "t-1  in progress  4,2,3,1 -> 4,2,3  adding 4, removing 1",
        "t-2  not applied  1,2,3 -> 4,2,3  (not on the target, nothing in flight)",
        "t-3  diverged  5,2,3,1 -> 4,2,3  adding 5, removing 1  (not toward the target)",
    ]
    assert all(len(line) <= 80 for line in lines)


def test_an_applied_plan_exits_0_and_a_wrong_log_dir_is_not_applied(sim: SimProcess, tmp_path: Path) -> None:
    entry = {"topic": "t", "partition": 0, "replicas": [1, 2, 3]}
    result = verify(sim, write(tmp_path / "done.json", [entry]))
    assert (result.returncode, result.stdout) == (0, "plan applied: all 1 partition(s) on their target\n")
    wrong_dir = write(tmp_path / "dir.json", [{**entry, "log_dirs": ["any", "/data/b", "any"]}])
    result = verify(sim, wrong_dir)
    assert result.returncode == 1
    assert "t-0  not applied  1,2,3 -> 1,2,3  (log dir of replica 2: /data/a, not /data/b)" in result.stdout
