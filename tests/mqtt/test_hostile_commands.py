"""MQTT commands from a hostile but fair user (issue 15): rejected with `command.rejected`, never replayed,
not even after a restart, and a bug in the bridge reaches the daemon's supervisor."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from reassignd.daemon.metrics import DaemonMetrics
from reassignd.daemon.mqtt import MqttBridge, MqttSettings
from reassignd.daemon.mqtt_auth import CommandRejected, CommandVerifier, sign
from reassignd.daemon.runtime import Supervisor

SECRET = b"s3cret-s3cret-s3cret-s3cret-s3cret"
NOW = 1_700_000_000.0


class Target:
    is_leader = True

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def pause(self, plan_id: str | None = None) -> Any:
        self.calls.append(("pause", plan_id))

    async def resume(self, plan_id: str | None = None) -> Any:
        self.calls.append(("resume", plan_id))

    async def cancel(self, plan_id: str | None = None) -> Any:
        self.calls.append(("cancel", plan_id))

    async def set_throttles(self, changes: Any) -> Any:
        self.calls.append(("set_throttles", changes))

    def plan_status(self, plan_id: str | None = None) -> Any:
        return {}

    def list_plans(self) -> list[Any]:
        return []


def bridge(verifier: CommandVerifier, target: Target | None = None) -> MqttBridge:
    settings = MqttSettings("127.0.0.1", 1, "p", "c", "n", "id", 30, queue_max=100, status_min_interval=1.0)
    return MqttBridge(settings, target or Target(), verifier, DaemonMetrics(), clock=lambda: NOW)  # type: ignore[arg-type]


def verifier(tmp_path: Path) -> CommandVerifier:
    return CommandVerifier(
        SECRET, 30.0, clock=lambda: NOW, nonce_file=tmp_path / "state" / "mqtt-nonces.json"
    )


def body(**overrides: Any) -> dict[str, Any]:
    return {"command": "pause", "timestamp": NOW, "nonce": "nonce-0001", **overrides}


def signed_text(text: str) -> bytes:
    import hashlib
    import hmac

    return json.dumps(
        {"body": text, "hmac": hmac.new(SECRET, text.encode(), hashlib.sha256).hexdigest()}
    ).encode()


HOSTILE = {
    "nested brackets, unsigned": b"[" * 200_000 + b"]" * 200_000,
    "nested brackets, signed": signed_text("[" * 100_000 + "]" * 100_000),
    "NaN timestamp": signed_text('{"command": "pause", "timestamp": NaN, "nonce": "nonce-0002"}'),
    "Infinity timestamp": signed_text('{"command": "pause", "timestamp": Infinity, "nonce": "nonce-0003"}'),
    "overflowing timestamp": signed_text('{"command": "pause", "timestamp": 1e999, "nonce": "nonce-0004"}'),
    "duplicate keys": signed_text(
        '{"command": "cancel", "command": "pause", "timestamp": 1.7e9, "nonce": "n-000005"}'
    ),
    "unknown field": sign(SECRET, body(nonce="nonce-0006", force=True)),
    "not UTF-8": b'{"body": "\xff", "hmac": "00"}',
    "too large": b'{"body": "' + b"x" * 100_000 + b'", "hmac": "00"}',
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
async def test_malformed_payloads_are_rejected_with_command_rejected(tmp_path: Path, case: str) -> None:
    target = Target()
    b = bridge(CommandVerifier(SECRET, 30.0, clock=lambda: NOW), target)
    await b.handle_command(HOSTILE[case])
    events = [e["event"] for e in b.queue]
    assert events == ["command.rejected"], (case, list(b.queue))
    assert target.calls == []


def test_a_nan_timestamp_is_never_within_the_window(tmp_path: Path) -> None:
    with pytest.raises(CommandRejected) as rejected:
        verifier(tmp_path).verify(HOSTILE["NaN timestamp"])
    assert rejected.value.reason == "malformed" and not math.isnan(NOW)


def test_a_command_cannot_be_replayed_after_a_restart(tmp_path: Path) -> None:
    payload = sign(SECRET, body(nonce="nonce-restart"))
    assert verifier(tmp_path).verify(payload).name == "pause"
    restarted = verifier(tmp_path)  # a new daemon process: same state dir
    with pytest.raises(CommandRejected) as replay:
        restarted.verify(payload)
    assert replay.value.reason == "replayed"


def test_forgotten_nonces_stay_refused_when_the_window_is_widened(tmp_path: Path) -> None:
    clock = [NOW]
    first = CommandVerifier(SECRET, 10.0, clock=lambda: clock[0], nonce_file=tmp_path / "n.json")
    old = sign(SECRET, body(nonce="nonce-old-000", timestamp=NOW))
    first.verify(old)
    for i in range(1100):  # enough commands to prune the old nonce
        clock[0] += 0.1
        first.verify(sign(SECRET, body(nonce=f"nonce-{i:06d}", timestamp=clock[0])))
    assert "nonce-old-000" not in first._nonces
    widened = CommandVerifier(SECRET, 3600.0, clock=lambda: clock[0], nonce_file=tmp_path / "n.json")
    with pytest.raises(CommandRejected) as rejected:
        widened.verify(old)
    assert rejected.value.reason == "stale"


def test_an_unreadable_nonce_file_refuses_earlier_commands(tmp_path: Path) -> None:
    path = tmp_path / "n.json"
    path.write_text("{not json")
    v = CommandVerifier(SECRET, 30.0, clock=lambda: NOW, nonce_file=path)
    with pytest.raises(CommandRejected) as rejected:
        v.verify(sign(SECRET, body()))  # timestamped NOW, which lies before the file was found broken
    assert rejected.value.reason == "stale"


async def test_a_bug_in_the_bridge_reaches_the_supervisor(tmp_path: Path) -> None:
    class Broken(MqttBridge):
        def _client(self) -> Any:
            raise KeyError("a bug, not a lost connection")

    b = Broken(bridge(verifier(tmp_path)).settings, Target(), verifier(tmp_path), DaemonMetrics())  # type: ignore[arg-type]
    supervisor = Supervisor()
    supervisor.add("mqtt", b.run())
    with pytest.raises(KeyError):
        async with asyncio.timeout(5):
            await supervisor.run(asyncio.Event())


async def test_a_lost_connection_is_retried(tmp_path: Path) -> None:
    attempts: list[int] = []

    class Flaky(MqttBridge):
        def _client(self) -> Any:
            attempts.append(1)
            raise aiomqtt.MqttError("connection refused")

    b = Flaky(bridge(verifier(tmp_path)).settings, Target(), verifier(tmp_path), DaemonMetrics())  # type: ignore[arg-type]
    task = asyncio.create_task(b.run())
    await asyncio.sleep(1.5)
    assert not task.done() and len(attempts) >= 2
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_set_throttles_above_kafkas_long_is_refused_by_the_controller(tmp_path: Path) -> None:
    """Through the real controller's validation (the refusal happens before the store or cluster is used)."""
    from reassignd.daemon.controller import Controller
    from reassignd.engine import Limits
    from reassignd.store.aio import AsyncStore
    from reassignd.store.sqlite import SqliteStore

    store = AsyncStore(SqliteStore(tmp_path / "state"))
    controller = Controller(object(), store, Limits())  # type: ignore[arg-type]
    b = bridge(CommandVerifier(SECRET, 30.0, clock=lambda: NOW), controller)  # type: ignore[arg-type]
    command = body(command="set_throttles", throttles={"leader.reassignment.throttled.rate": 2**63})
    await b.handle_command(sign(SECRET, command))
    [event] = list(b.queue)
    assert event["event"] == "command.failed" and event["code"] == "invalid_request"
    assert "LONG" in event["message"] or "throttles unchanged" in event["message"]
    assert controller.limits_in_force == Limits()
