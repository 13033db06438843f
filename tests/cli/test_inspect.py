"""`validate-plan` / `validate-snapshot` as a user runs them: exit codes and messages, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.model.test_snapshot import GOOD


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reassignd", *args], check=False, capture_output=True, text=True, timeout=60
    )


def test_valid_plan_against_snapshot(tmp_path: Path) -> None:
    (tmp_path / "snap.json").write_text(json.dumps(GOOD))
    plan = {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [2, 1]}]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    result = _run(
        "validate-plan", str(tmp_path / "plan.json"), "--snapshot", str(tmp_path / "snap.json"), "--json"
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary == {**summary, "valid": True, "partitions": 1, "topics": 1, "replicas_to_add": 0}
    assert [w["kind"] for w in summary["warnings"]] == ["replication_factor"]  # orders-0 goes from 3 to 2


def test_the_replication_factor_warning_names_the_cli_flag(tmp_path: Path) -> None:
    """The issue: validate-plan, a command, named the API field allow_rf_change."""
    (tmp_path / "snap.json").write_text(json.dumps(GOOD))
    plan = {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [2, 1]}]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    result = _run("validate-plan", str(tmp_path / "plan.json"), "--snapshot", str(tmp_path / "snap.json"))
    assert result.returncode == 0, result.stderr
    assert "unless submitted with --allow-rf-change" in result.stderr
    assert "allow_rf_change" not in result.stderr


def test_invalid_plan_lists_every_problem_without_traceback(tmp_path: Path) -> None:
    (tmp_path / "snap.json").write_text(json.dumps(GOOD))
    plan = {
        "version": 1,
        "partitions": [
            {"topic": "orders", "partition": 0, "replicas": [1, 9]},
            {"topic": "nope", "partition": 0, "replicas": [1]},
        ],
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    result = _run("validate-plan", str(tmp_path / "plan.json"), "--snapshot", str(tmp_path / "snap.json"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "orders-0: replicas: unknown broker id(s) [9]" in result.stderr
    assert "nope-0: partition: unknown topic or partition" in result.stderr


def test_a_log_dir_the_broker_does_not_have_is_refused_with_field_and_value(tmp_path: Path) -> None:
    brokers = [{**b, "log_dirs": ["/data/a", "/data/b"]} for b in GOOD["brokers"]]
    (tmp_path / "snap.json").write_text(json.dumps({**GOOD, "brokers": brokers}))
    entry = {"topic": "orders", "partition": 0, "replicas": [2, 1], "log_dirs": ["/data/b", "/data/x"]}
    (tmp_path / "plan.json").write_text(json.dumps({"version": 1, "partitions": [entry]}))
    result = _run("validate-plan", str(tmp_path / "plan.json"), "--snapshot", str(tmp_path / "snap.json"))
    assert result.returncode == 2, result.stdout
    assert (
        "orders-0: log_dirs: broker 1 has no log dir '/data/x' (its log dirs: /data/a, /data/b)"
        in result.stderr
    )
    entry["log_dirs"] = ["/data/b", "any"]
    (tmp_path / "plan.json").write_text(json.dumps({"version": 1, "partitions": [entry]}))
    assert (
        _run(
            "validate-plan", str(tmp_path / "plan.json"), "--snapshot", str(tmp_path / "snap.json")
        ).returncode
        == 0
    )


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    result = _run("validate-snapshot", str(tmp_path / "absent.json"))
    assert result.returncode == 2
    assert "absent.json" in result.stderr and "No such file" in result.stderr


def test_snapshot_summary(tmp_path: Path) -> None:
    (tmp_path / "snap.json").write_text(json.dumps(GOOD))
    result = _run("validate-snapshot", str(tmp_path / "snap.json"), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["brokers"] == 3 and summary["online_brokers"] == 2 and summary["partitions"] == 2


def test_an_empty_plan_is_refused_as_submit_refuses_it(tmp_path: Path) -> None:
    """Issue 31 item 5: validate-plan said `plan is valid: partitions=0` for a plan the daemon refuses."""
    (tmp_path / "snap.json").write_text(json.dumps(GOOD))
    (tmp_path / "plan.json").write_text(json.dumps({"version": 1, "partitions": []}))
    for extra in ([], ["--snapshot", str(tmp_path / "snap.json")]):
        result = _run("validate-plan", str(tmp_path / "plan.json"), *extra)
        assert result.returncode == 2, result.stdout
        assert "plan: partitions: is empty: nothing to reassign" in result.stderr
