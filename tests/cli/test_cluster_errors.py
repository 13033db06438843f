"""A cluster nobody can reach is one line naming the cause, within seconds, with the documented exit code
(issue 27): every command that reads a cluster, and the daemon's first cycle, /readyz and status.

"Unreachable" here is a loopback port nothing listens on (connection refused); TLS, SASL and ACL failures
need a real secured Kafka and are in tests/realkafka/test_security.py. Each command runs as an operator runs
it (a subprocess, default log level) and is judged by its exit code, its stderr and how long it took.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.services.daemon import DaemonProcess
from tests.services.procs import free_port

pytestmark = pytest.mark.slow

DEADLINE = 15.0  # seconds, with the default timeouts: the bound
EXIT_UNREADABLE = 3


def run(*args: str, timeout: float = 150) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "reassignd", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return result, time.monotonic() - started


def assert_one_line(stderr: str, *expected: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, f"{len(lines)} lines: {stderr[:2000]}"
    (line,) = lines
    assert line.startswith("reassignd: "), line
    assert "a bug" not in line and "%3|" not in line, line
    for text in expected:
        assert text in line, line
    return line


@pytest.fixture
def nobody() -> str:
    """A loopback address nothing listens on."""
    return f"127.0.0.1:{free_port()}"


def test_snapshot_of_an_unreachable_cluster_is_one_line_within_seconds(nobody: str, tmp_path: Path) -> None:
    result, took = run("snapshot", "--bootstrap-servers", nobody, "--out", str(tmp_path / "s.json"))
    assert result.returncode == EXIT_UNREADABLE, result
    assert_one_line(result.stderr, "connection refused", nobody, "cluster.bootstrap.servers")
    assert took < DEADLINE, took
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize("command", ["rehearse", "plan"])
def test_rehearse_and_plan_from_an_unreachable_cluster_are_one_line(
    command: str, nobody: str, tmp_path: Path
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]})
    )
    args = {
        "rehearse": ["rehearse", str(plan), "--bootstrap-servers", nobody],
        "plan": [
            "plan",
            "--goal",
            "drain",
            "--brokers",
            "1",
            "--bootstrap-servers",
            nobody,
            "--out",
            str(plan),
        ],
    }[command]
    result, took = run(*args)
    assert result.returncode == EXIT_UNREADABLE, result
    assert_one_line(result.stderr, "connection refused", nobody)
    assert took < DEADLINE, took


def test_verify_against_an_unreachable_cluster_is_one_line_within_seconds(
    nobody: str, tmp_path: Path
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]})
    )
    result, took = run("verify", str(plan), "--bootstrap-servers", nobody)
    assert result.returncode == EXIT_UNREADABLE, result
    assert_one_line(result.stderr, "connection refused", nobody)
    assert took < DEADLINE, took

    as_json, _ = run("verify", str(plan), "--bootstrap-servers", nobody, "--json")
    assert as_json.returncode == EXIT_UNREADABLE and as_json.stderr == "", as_json
    error = json.loads(as_json.stdout)["error"]
    assert error["code"] == "unreachable" and "connection refused" in error["message"], error


def test_a_daemon_without_a_cluster_says_why_in_its_first_cycle_readyz_and_log(
    nobody: str, tmp_path: Path
) -> None:
    started = time.monotonic()
    daemon = DaemonProcess(tmp_path / "daemon", nobody).start()
    try:
        ready: dict[str, object] = {}
        while time.monotonic() - started < DEADLINE:
            code, ready = daemon.request("GET", "/readyz")
            if code == 503 and ready.get("reason") == "cluster unreachable":
                break
            time.sleep(0.2)
        took = time.monotonic() - started
        assert ready.get("reason") == "cluster unreachable", ready
        assert took < DEADLINE, took
        message = str(ready["error"]["message"])  # type: ignore[index]
        assert "connection refused" in message and nobody in message, ready
    finally:
        daemon.stop()
    errors = daemon.log_records("error")
    assert [e["event"] for e in errors] == ["the cluster cannot be reached"], errors
    assert "connection refused" in errors[0]["error"], errors
    raw = [line for line in daemon.log_path.read_text().splitlines() if not line.startswith("{")]
    assert raw == [], raw[:20]


def test_run_with_its_api_address_in_use_names_the_address(nobody: str, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        daemon = DaemonProcess(tmp_path / "daemon", nobody, {"api.listen": address})
        daemon.write_config()
        result, took = run("run", "--config", str(daemon.config_path), timeout=60)
    assert result.returncode == 1, result
    # the daemon's own log lines (JSON, as configured) may come first; the failure is one plain line
    plain = "\n".join(line for line in result.stderr.splitlines() if not line.startswith("{"))
    assert_one_line(plain, address, "api.listen", "in use")
    assert took < 60, took  # the point is the line: a daemon's start-up imports take 15 s on a loaded box
