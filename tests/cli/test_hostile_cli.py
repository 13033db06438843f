"""The command line against hostile files and closed pipes (issue 15): no traceback, the one error shape.

Every command is run as a user runs it (a subprocess), and judged by its exit code, stdout and stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.model.test_snapshot import GOOD

pytestmark = pytest.mark.slow

RACKS = {1: "/dc1/r1", 2: "/dc1/r1", 3: "/dc1/r2", 4: "/dc1/r2", 5: "/dc1/r3", 6: "/dc1/r3"}


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reassignd", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin.decode("latin-1") if stdin is not None else None,
    )


def write(path: Path, content: bytes | str | dict[str, Any]) -> str:
    if isinstance(content, dict):
        content = json.dumps(content)
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return str(path)


HOSTILE_JSON = {
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "huge-int": b'{"version": 1, "partitions": [{"topic": "t", "partition": '
    + b"7" * 5000
    + b', "replicas": [1]}]}',
    "not-utf8": b'{"version": 1, "partitions": [{"topic": "\xff\xfe", "partition": 0, "replicas": [1]}]}',
    "nan": b'{"version": 1, "partitions": [{"topic": "t", "partition": NaN, "replicas": [1]}]}',
    "duplicate": b'{"version": 1, "version": 1, "partitions": []}',
}


@pytest.mark.parametrize("command", ["validate-plan", "validate-snapshot"])
@pytest.mark.parametrize("case", sorted(HOSTILE_JSON))
def test_hostile_json_files_are_clear_errors(tmp_path: Path, command: str, case: str) -> None:
    path = write(tmp_path / "input.json", HOSTILE_JSON[case])
    result = run(command, path)
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr and result.stderr.startswith("reassignd: invalid ")
    assert path in result.stderr


@pytest.mark.parametrize(
    "content",
    [
        b"cluster.bootstrap.servers = [" * 5000 + b"]" * 5000,
        b'cluster.bootstrap.servers = ["k:9092"]\ncluster.id = "\xff"\n',
        b'cluster.bootstrap.servers = ["k:9092"]\nreassignment.parallel.replica.count = '
        + b"9" * 5000
        + b"\n",
    ],
    ids=["deep", "not-utf8", "huge-int"],
)
def test_hostile_config_files_are_clear_errors(tmp_path: Path, content: bytes) -> None:
    result = run("validate-config", "--no-env", write(tmp_path / "c.toml", content))
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr and "invalid configuration" in result.stderr


BASE = 'cluster.bootstrap.servers = ["k:9092"]\n'


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("reassignment.stall.window.seconds = nan", "reassignment.stall.window.seconds", "finite"),
        ("reassignment.stall.window.seconds = inf", "reassignment.stall.window.seconds", "finite"),
        (f"leader.reassignment.throttled.rate = {2**63}", "leader.reassignment.throttled.rate", "LONG"),
        (f"auto.throttle.max.bytes.per.second = {2**63}", "auto.throttle.max.bytes.per.second", "between"),
        (
            "reassignment.parallel.replica.count = 2147483648",
            "reassignment.parallel.replica.count",
            "at most",
        ),
        ('api.token = "x"', "api.token", "use at least 32"),
        ('api.read.token = "short"', "api.read.token", "use at least 32"),
        (f'api.token = "{"a" * 32}"\napi.read.token = "{"a" * 32}"', "api.read.token", "must differ"),
    ],
)
def test_values_kafka_or_the_daemon_would_refuse_are_refused_by_validate_config(
    tmp_path: Path, text: str, key: str, fragment: str
) -> None:
    result = run("validate-config", "--no-env", "--json", write(tmp_path / "c.toml", BASE + text + "\n"))
    assert result.returncode == 2, result
    [problem] = [p for p in json.loads(result.stdout)["error"]["problems"] if p["field"] == key]
    assert fragment in problem["message"], problem


def test_a_token_file_others_can_read_is_refused_with_the_chmod_to_run(tmp_path: Path) -> None:
    token = tmp_path / "api token"
    token.write_text("t" * 40 + "\n")
    token.chmod(0o644)
    config = write(tmp_path / "c.toml", BASE + f"api.token.file = '{token}'\n")
    result = run("validate-config", "--no-env", config)
    assert result.returncode == 2
    assert f"run: chmod 600 '{token}'" in result.stderr and "mode 0644" in result.stderr
    token.chmod(0o600)
    assert run("validate-config", "--no-env", config).returncode == 0


MOVEMENTS = (
    "reassignment.max.concurrent.replica.movements = 3\n",
    "reassignment.max.concurrent.replica.movements = 1\n"
    "reassignment.max.incoming.replica.movements.per.broker = 1000000000\n",
)


@pytest.mark.parametrize("limits", MOVEMENTS, ids=["global-3", "per-broker-above-global"])
def test_validate_config_and_schedule_apply_the_one_kip_435_rule(tmp_path: Path, limits: str) -> None:
    """Each movement limit is an independent upper bound: accepted by validate-config and schedule alike
    (and by PATCH /v1/limits: tests/daemon/test_hostile_api.py)."""
    config = write(tmp_path / "c.toml", BASE + limits)
    assert run("validate-config", "--no-env", config).returncode == 0
    snapshot = write(tmp_path / "snap.json", GOOD)
    plan = write(
        tmp_path / "plan.json",
        {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [1, 3]}]},
    )
    result = run("schedule", plan, "--snapshot", snapshot, "--config", config, "--json")
    assert result.returncode in (0, 1), result.stderr  # 1: a step waits for the offline broker
    assert "Traceback" not in result.stderr and json.loads(result.stdout)["limits"]


def test_schedule_refuses_what_the_daemon_refuses(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.toml", f"follower.reassignment.throttled.rate = {2**63}\nreasignment.typo = 1\n"
    )
    snapshot = write(tmp_path / "snap.json", GOOD)
    plan = write(
        tmp_path / "plan.json",
        {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [1, 3]}]},
    )
    result = run("schedule", plan, "--snapshot", snapshot, "--config", config)
    assert result.returncode == 2 and "LONG" in result.stderr
    assert "warning:" in result.stderr and "reasignment.typo is not a configuration key" in result.stderr


def test_json_errors_go_to_stdout_in_the_api_shape_with_the_same_exit_codes(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.json", {"version": 1, "partitions": [{"topic": "t", "partition": -1}]})
    text, as_json = run("validate-plan", bad), run("validate-plan", bad, "--json")
    assert text.returncode == as_json.returncode == 2
    assert text.stdout == "" and as_json.stderr == ""
    error = json.loads(as_json.stdout)["error"]
    assert error["code"] == "invalid_input" and {p["field"] for p in error["problems"]} == {
        "partition",
        "replicas",
    }
    unreachable = run("plans", "--json", "--api", "http://127.0.0.1:9", "--timeout", "2")
    assert unreachable.returncode == 3 and json.loads(unreachable.stdout)["error"]["code"] == "unreachable"


def test_a_plan_with_a_negative_and_an_unknown_broker_reports_both(tmp_path: Path) -> None:
    snapshot = write(tmp_path / "snap.json", GOOD)
    plan = write(
        tmp_path / "p.json",
        {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [-1, 99]}]},
    )
    result = run("validate-plan", plan, "--snapshot", snapshot)
    assert result.returncode == 2
    assert "must not be negative, got -1" in result.stderr and "unknown broker id(s) [99]" in result.stderr


def _spread_snapshot(partitions: int) -> dict[str, Any]:
    return {
        "version": 1,
        "brokers": [{"id": b, "rack": rack} for b, rack in RACKS.items()],
        "partitions": [
            {"topic": "spread", "partition": p, "replicas": [1, 3, 5], "isr": [1, 3, 5], "leader": 1}
            for p in range(partitions)
        ],
    }


def test_validate_plan_warns_about_rf_changes_and_rack_spread_regressions(tmp_path: Path) -> None:
    snapshot = write(tmp_path / "snap.json", _spread_snapshot(1701))
    entries = [{"topic": "spread", "partition": p, "replicas": [1, 2, 3]} for p in range(1700)]
    entries.append({"topic": "spread", "partition": 1700, "replicas": [3, 5]})
    plan = write(tmp_path / "plan.json", {"version": 1, "partitions": entries})
    result = run("validate-plan", plan, "--snapshot", snapshot, "--json")
    assert result.returncode == 0, result.stderr
    warnings = {w["kind"]: w for w in json.loads(result.stdout)["warnings"]}
    assert warnings["replication_factor"]["partitions"] == 1
    assert warnings["rack_spread"]["partitions"] == 1700 and warnings["rack_spread"]["level"] == 2
    assert "/dc1/r1 has 2" in warnings["rack_spread"]["examples"][0]
    human = run("validate-plan", plan, "--snapshot", snapshot)
    assert "warning: 1700 partition(s) evenly spread at rack level 2" in human.stderr


def _big_snapshot() -> dict[str, Any]:
    return {
        "version": 1,
        "brokers": [{"id": b, "rack": f"/dc{b % 3}/r{b % 7}"} for b in range(3000)],
        "partitions": [
            {
                "topic": "t",
                "partition": p,
                "replicas": [p % 3000, (p + 1) % 3000],
                "isr": [p % 3000],
                "leader": p % 3000,
            }
            for p in range(3000)
        ],
    }


@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["table", "json"])
def test_a_closed_pipe_ends_quietly(tmp_path: Path, extra: list[str]) -> None:
    snapshot = write(tmp_path / "snap.json", _big_snapshot())
    result = subprocess.run(
        f"set -o pipefail; {sys.executable} -m reassignd show-cluster-state --snapshot {snapshot} "
        f"{' '.join(extra)} | head -c 10 > /dev/null",
        shell=True,
        executable="/bin/bash",
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr
    assert result.returncode == 141  # 128 + SIGPIPE, as a C tool that head stopped reading
