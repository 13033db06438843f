"""`reassignd rehearse` as a user runs it: from a snapshot file, from a live (simulated) cluster."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reassignd.cli.rehearse import measured_rates, parse_produce_rates
from reassignd.model import InvalidInputError, ReassignmentPlan, snapshot_from_dict, snapshot_to_json
from reassignd.sim import SimCluster, load_scenario
from tests.services.simulator import SimProcess

MB = 1_000_000
SCENARIO: dict[str, Any] = {
    "seed": 1,
    "brokers": [{"id": b, "rack": f"/dc1/rack{b}"} for b in (1, 2, 3, 4)],
    "topics": [
        {
            "name": "t",
            "partitions": 4,
            "replication_factor": 2,
            "partition_bytes": 100 * MB,
            "produce_bytes_per_sec": 1 * MB,
            "configs": {"min.insync.replicas": "1"},
            "assignment": [[1, 2]] * 4,
        }
    ],
}
PLAN = {
    "version": 1,
    "partitions": [{"topic": "t", "partition": p, "replicas": [1, 3 + p % 2]} for p in range(4)],
}
CONFIG = (
    "follower.reassignment.throttled.rate = 11000000\n"
    "leader.reassignment.throttled.rate = 100000000\n"
    "reassignment.max.incoming.replica.movements.per.broker = 1\n"
    "controller.cycle.interval.seconds = 1.0\n"
)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reassignd", "rehearse", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    snapshot = SimCluster.from_scenario(load_scenario(SCENARIO)).to_snapshot()
    paths = {"snapshot": tmp_path / "s.json", "plan": tmp_path / "p.json", "config": tmp_path / "r.toml"}
    paths["snapshot"].write_text(snapshot_to_json(snapshot))
    paths["plan"].write_text(json.dumps(PLAN))
    paths["config"].write_text(CONFIG)
    return paths


def test_json_report_from_a_snapshot_with_the_config_limits_and_a_chart(
    files: dict[str, Path], tmp_path: Path
) -> None:
    chart = tmp_path / "timeline.png"
    proc = run(
        str(files["plan"]),
        "--snapshot",
        str(files["snapshot"]),
        "--config",
        str(files["config"]),
        "--json",
        "--timeline",
        "--chart",
        str(chart),
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    # two moves per destination broker, one at a time, each 100 MB at 11 MB/s - 1 MB/s produce = 10 s
    assert report["finished"] and report["cycle_interval_seconds"] == 1.0
    assert report["predicted_duration_seconds"] == pytest.approx(20.0, abs=2.0)
    peaks = {b["id"]: b["peak_incoming_movements"] for b in report["brokers"]}
    assert peaks[3] == peaks[4] == 1
    bytes_in = {b["id"]: b["bytes_in"] for b in report["brokers"]}
    assert bytes_in[3] >= 200 * MB and bytes_in[4] >= 200 * MB
    assert report["never_converging"] == [] and report["under_min_isr"]["partitions"] == 0
    assert report["timeline"][0]["remaining_bytes"] == 400 * MB
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_produce_rate_at_the_throttle_never_converges_and_exits_1(files: dict[str, Path]) -> None:
    proc = run(
        str(files["plan"]),
        "--snapshot",
        str(files["snapshot"]),
        "--config",
        str(files["config"]),
        "--produce-rate",
        "t=11MB/s",
    )
    assert proc.returncode == 1, proc.stderr
    assert "does NOT finish" in proc.stdout
    assert "moves that never converge (their fetch rate does not exceed the produce rate): 2" in proc.stdout
    assert "bound by the follower throttle on broker 3: 11.0 MB/s shared by 1 copy:" in proc.stdout


def test_a_plan_for_an_unknown_partition_is_refused_with_exit_2(files: dict[str, Path]) -> None:
    files["plan"].write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "nope", "partition": 0, "replicas": [1]}]})
    )
    proc = run(str(files["plan"]), "--snapshot", str(files["snapshot"]))
    assert proc.returncode == 2
    assert "nope" in proc.stderr


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        (["5MB/s"], (5e6, {})),
        (["t=1MiB", "0"], (0.0, {"t": 1048576.0})),
        (["a=2e6", "b=0"], (None, {"a": 2e6, "b": 0.0})),
    ],
)
def test_produce_rate_arguments(items: list[str], expected: tuple[float | None, dict[str, float]]) -> None:
    assert parse_produce_rates(items) == expected


def test_bad_produce_rate_names_the_argument() -> None:
    with pytest.raises(InvalidInputError) as info:
        parse_produce_rates(["t=fast"])
    assert info.value.problems[0].field == "t=fast"


def test_measured_rates_come_from_leader_log_growth() -> None:
    sim = SimCluster.from_scenario(load_scenario(SCENARIO))
    first = sim.to_snapshot()
    sim.set_produce_rate("t", 2, 3 * MB)
    sim.advance(10)
    measured = measured_rates(first, sim.to_snapshot(), 10.0)
    rates = {tp.partition: p.produce_bytes_per_sec for tp, p in measured.partitions.items()}
    assert rates == pytest.approx({0: 1 * MB, 1: 1 * MB, 2: 3 * MB, 3: 1 * MB})


def rehearse_live(
    files: dict[str, Path], sim: SimProcess, measure_seconds: int
) -> subprocess.CompletedProcess[str]:
    """`reassignd rehearse --bootstrap-servers` against `sim`, rates measured over `measure_seconds`."""
    return run(
        str(files["plan"]),
        "--bootstrap-servers",
        sim.bootstrap_servers,
        "--config",
        str(files["config"]),
        "--measure-seconds",
        str(measure_seconds),
        "--json",
    )


@pytest.mark.slow
def test_live_cluster_rates_are_measured_between_two_snapshots(
    files: dict[str, Path], tmp_path: Path
) -> None:
    scenario = json.loads(json.dumps(SCENARIO))
    scenario["topics"][0]["produce_bytes_per_sec"] = 4 * MB  # the snapshot file would say 1 MB/s
    with SimProcess(scenario, tmp_path / "sim", time_scale=1.0) as sim:
        proc = rehearse_live(files, sim, 4)
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        live = snapshot_from_dict(sim.snapshot())
    # 4 MB/s live against the file's 1 MB/s; within 10%: two reads 4 s apart on a shared machine (5.4% off at
    # a load of 28, where the simulator's ticks and the reads' midpoints drift apart)
    assert report["plan_produce_bytes_per_sec"] == pytest.approx(4 * 4 * MB, rel=0.10)
    # 100 MB and more (written meanwhile) at 11 - 4 MB/s, twice per broker: over 28 s, not 20 s
    assert 28.0 < report["predicted_duration_seconds"] < 120.0
    assert ReassignmentPlan.from_dict(PLAN).targets.keys() <= live.partitions.keys()


@pytest.mark.slow
def test_live_rates_against_a_time_scaled_simulator_are_per_second_of_its_clock(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """At 20x the logs grow 20 times faster than the wall clock: measured on it, the rates read 20 times
    what the producers write per simulated second, the second the rehearsal runs on (the guide told users
    to take the simulator's snapshot instead)."""
    with SimProcess(SCENARIO, tmp_path / "sim", time_scale=20.0) as sim:
        proc = rehearse_live(files, sim, 2)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    assert report["plan_produce_bytes_per_sec"] == pytest.approx(4 * 1 * MB, rel=0.10)


def test_a_snapshot_without_produce_rates_is_flagged_as_a_lower_bound(files: dict[str, Path]) -> None:
    snapshot = json.loads(files["snapshot"].read_text())
    for p in snapshot["partitions"]:
        p.pop("produce_bytes_per_sec", None)
    files["snapshot"].write_text(json.dumps(snapshot))
    proc = run(str(files["plan"]), "--snapshot", str(files["snapshot"]), "--config", str(files["config"]))
    assert proc.returncode == 0, proc.stderr
    assert "no produce rates" in proc.stderr and "lower bound" in proc.stderr
    with_rates = run(
        str(files["plan"]),
        "--snapshot",
        str(files["snapshot"]),
        "--config",
        str(files["config"]),
        "--produce-rate",
        "1MB/s",
    )
    assert "no produce rates" not in with_rates.stderr


def test_the_report_says_how_old_the_snapshot_is(files: dict[str, Path]) -> None:
    """Issue 27, "each figure says its moment": the sizes and rates rehearsed are the snapshot's, read
    some time ago while producers kept writing."""
    snapshot = json.loads(files["snapshot"].read_text())
    snapshot["read_at"] = time.time() - 3 * 3600
    files["snapshot"].write_text(json.dumps(snapshot))
    args = (str(files["plan"]), "--snapshot", str(files["snapshot"]), "--config", str(files["config"]))
    proc = run(*args)
    assert proc.returncode == 0, proc.stderr
    assert "sizes and rates as read at " in proc.stderr and "(3h00m ago" in proc.stderr, proc.stderr
    report = json.loads(run(*args, "--json").stdout)
    assert report["cluster_read_at"].endswith("Z")
