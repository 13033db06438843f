"""`reassignd sim` as a command: bad input, signals, exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.services.simulator import SimProcess

pytestmark = pytest.mark.slow

SCENARIO = {
    "brokers": [{"id": 1}, {"id": 2}],
    "topics": [{"name": "t", "partitions": 1, "replication_factor": 2}],
}


def _run(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reassignd", "sim", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_bad_scenario_exits_2_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"brokers": [{"id": -1}], "topics": []}))
    result = _run(["--scenario", str(path)])
    assert result.returncode == 2
    assert "brokers[0]" in result.stderr and "id" in result.stderr
    assert result.stdout == ""  # no ready lines


def test_missing_scenario_file_exits_2(tmp_path: Path) -> None:
    result = _run(["--scenario", str(tmp_path / "missing.json")])
    assert result.returncode == 2
    assert "missing.json" in result.stderr


def test_negative_time_scale_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCENARIO))
    result = _run(["--scenario", str(path), "--time-scale", "-1"])
    assert result.returncode == 2
    assert "time_scale" in result.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_it_cleanly_with_exit_0(tmp_path: Path, sig: signal.Signals) -> None:
    sim = SimProcess(SCENARIO, tmp_path, time_scale=5, seed=2).start()
    assert sim.proc is not None
    assert sim.ready_lines[0].count(",") == 1
    os.kill(sim.proc.pid, sig)
    assert sim.proc.wait(timeout=15) == 0
    sim.stop()
    assert sim.later_stdout() == []  # stdout carries the two ready lines only; logs go to stderr
    assert "Traceback" not in sim.log_path.read_text()


def test_kafka_version_and_mode_override_the_scenario(tmp_path: Path) -> None:
    with SimProcess(
        SCENARIO, tmp_path, time_scale=0, extra_args=["--kafka-version", "3.9", "--kafka-mode", "zookeeper"]
    ) as sim:
        assert sim.state()["kafka"] == {"version": "3.9", "mode": "zookeeper"}


def test_a_kafka_release_without_zookeeper_mode_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCENARIO))
    result = _run(["--scenario", str(path), "--kafka-version", "4.1", "--kafka-mode", "zookeeper"])
    assert result.returncode == 2
    assert "--kafka-mode" in result.stderr and "no ZooKeeper mode" in result.stderr
