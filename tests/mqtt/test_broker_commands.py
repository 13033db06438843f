"""The MQTT commands of issue 29: decommission and recommission a broker, re-target the running plan.
Verified like every command, carried out by the controller with the MQTT actor, refused naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reassignd.daemon.mqtt_auth import CommandRejected, CommandVerifier, sign
from tests.mqtt.test_hostile_commands import NOW, SECRET, Target, bridge, verifier


class RoleTarget(Target):
    async def retarget(self, plan_id: str | None = None) -> Any:
        self.calls.append(("retarget", plan_id))

    async def decommission(self, broker: Any, request: Any) -> Any:
        self.calls.append(("decommission", (broker, dict(request))))

    async def recommission(self, broker: Any) -> Any:
        self.calls.append(("recommission", broker))


def command(**fields: Any) -> bytes:
    return sign(SECRET, {"timestamp": NOW, "nonce": f"nonce-{fields['command']}-1", **fields})


async def test_the_commands_reach_the_controller(tmp_path: Path) -> None:
    target = RoleTarget()
    b = bridge(verifier(tmp_path), target)
    await b.handle_command(command(command="decommission", broker=12, drain=True, reason="disk"))
    await b.handle_command(command(command="recommission", broker=12))
    await b.handle_command(command(command="retarget", plan_id="p1"))
    assert target.calls == [
        ("decommission", (12, {"drain": True, "reason": "disk"})),
        ("recommission", 12),
        ("retarget", "p1"),
    ]
    accepted = [e for e in b.queue if e["event"] == "command.accepted"]
    assert [e["command"] for e in accepted] == ["decommission", "recommission", "retarget"]


@pytest.mark.parametrize(
    "fields",
    [
        {"command": "decommission"},
        {"command": "decommission", "broker": "12"},
        {"command": "recommission", "broker": True},
        {"command": "pause", "broker": 12},
        {"command": "recommission", "broker": 12, "drain": True},
    ],
)
def test_malformed_broker_commands_are_rejected(tmp_path: Path, fields: dict[str, Any]) -> None:
    with pytest.raises(CommandRejected) as rejected:
        verifier(tmp_path).verify(command(**fields))
    assert rejected.value.reason == "malformed"


def test_the_cli_prints_a_decommission_the_daemon_accepts(tmp_path: Path) -> None:
    import subprocess
    import sys

    secret = tmp_path / "secret"
    secret.write_text("the-secret\n")
    result = subprocess.run(
        [
            *(sys.executable, "-m", "reassignd", "mqtt-command", "decommission", "--broker", "12"),
            *("--drain", "--reason", "disk failing", "--secret-file", str(secret)),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    verified = CommandVerifier(b"the-secret", 30).verify(result.stdout.strip().encode())
    assert (verified.name, verified.broker, dict(verified.options)) == (
        "decommission",
        12,
        {"drain": True, "reason": "disk failing"},
    )
    assert json.loads(json.loads(result.stdout)["body"])["broker"] == 12


class HealingTarget(Target):
    async def approve_anomaly(self, anomaly_id: str) -> Any:
        self.calls.append(("approve_anomaly", anomaly_id))


async def test_a_proposed_fix_is_approved_over_mqtt(tmp_path: Path) -> None:
    """Self-healing's `propose` mode (docs/self-healing.md): an operator's signed go, as the API's."""
    target = HealingTarget()
    b = bridge(verifier(tmp_path), target)
    await b.handle_command(command(command="approve_anomaly", anomaly="broker-failure-5-1795783832"))
    assert target.calls == [("approve_anomaly", "broker-failure-5-1795783832")]


@pytest.mark.parametrize(
    "fields",
    [
        {"command": "approve_anomaly"},
        {"command": "approve_anomaly", "anomaly": 5},
        {"command": "approve_anomaly", "anomaly": ""},
        {"command": "pause", "anomaly": "x"},
    ],
)
def test_malformed_approvals_are_rejected(tmp_path: Path, fields: dict[str, Any]) -> None:
    with pytest.raises(CommandRejected) as rejected:
        verifier(tmp_path).verify(command(**fields))
    assert rejected.value.reason == "malformed"
