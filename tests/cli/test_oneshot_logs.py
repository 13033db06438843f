"""What a one-shot command prints on stderr: its own words, not the daemon's log lines (the issue: every
command that read the cluster printed `cluster admin created` with the client settings)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services.simulator import SimProcess

SCENARIO = {
    "brokers": [{"id": b, "rack": f"/dc1/r{b}"} for b in (1, 2, 3)],
    "topics": [{"name": "orders", "partitions": 2, "replication_factor": 2, "partition_bytes": 1000}],
}


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    with SimProcess(SCENARIO, workdir=tmp_path_factory.mktemp("sim"), time_scale=0) as running:
        yield running


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reassignd", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_a_one_shot_command_prints_no_log_lines(sim: SimProcess, tmp_path: Path) -> None:
    out = tmp_path / "snapshot.json"
    result = run(
        "snapshot", "--bootstrap-servers", sim.bootstrap_servers, "--out", str(out), "--timeout", "5"
    )
    assert result.returncode == 0, result.stderr
    assert "cluster admin created" not in result.stderr
    assert "bootstrap.servers" not in result.stderr
    assert result.stderr.strip(), "the command's own summary is still there"
    verbose = run(
        "--log-level", "debug", "snapshot", "--bootstrap-servers", sim.bootstrap_servers, "--out", str(out)
    )
    assert "cluster admin created" in verbose.stderr, "asked for, the log lines are there"
