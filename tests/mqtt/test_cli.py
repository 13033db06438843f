"""`reassignd mqtt-command` prints a payload the daemon's verifier accepts, and refuses bad arguments."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reassignd.daemon.mqtt_auth import CommandVerifier


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reassignd", "mqtt-command", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_signed_payload_verifies(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("the-secret\n")
    result = run(
        "set_throttles",
        "p1",
        "--secret-file",
        str(secret),
        "--throttle",
        "leader.reassignment.throttled.rate=5000",
    )
    assert result.returncode == 0, result.stderr
    command = CommandVerifier(b"the-secret", 30).verify(result.stdout.strip().encode())
    assert (command.name, command.plan_id) == ("set_throttles", "p1")
    assert command.throttles == {"leader.reassignment.throttled.rate": 5000}
    assert "the-secret" not in result.stdout
    old = run("pause", "--secret-file", str(secret), "--plan-id", "p2")
    assert old.returncode == 0 and "--plan-id is deprecated" in old.stderr
    assert CommandVerifier(b"the-secret", 30).verify(old.stdout.strip().encode()).plan_id == "p2"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["pause", "--secret-file", "/nonexistent"], "cannot read"),
        (["pause", "--throttle", "x=1"], "only allowed there"),
        (["set_throttles"], "is required"),
        (["set_throttles", "--throttle", "rate"], "KEY=BYTES_PER_SEC"),
    ],
)
def test_bad_arguments(tmp_path: Path, args: list[str], message: str) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s")
    if "--secret-file" not in args:
        args = [*args, "--secret-file", str(secret)]
    result = run(*args)
    assert result.returncode == 2 and message in result.stderr
