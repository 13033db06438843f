"""Command authentication: signature, timestamp window, nonce replay; and the bridge's bounded queue."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.daemon.metrics import DaemonMetrics
from reassignd.daemon.mqtt import MqttBridge, MqttSettings
from reassignd.daemon.mqtt_auth import CommandRejected, CommandVerifier, sign

SECRET = b"s3cret-s3cret-s3cret"
NOW = 1_700_000_000.0


def verifier(window: float = 30.0) -> CommandVerifier:
    return CommandVerifier(SECRET, window, clock=lambda: NOW)


def body(**overrides: Any) -> dict[str, Any]:
    return {"command": "pause", "timestamp": NOW, "nonce": "nonce-0001", **overrides}


def test_a_signed_command_is_accepted_once() -> None:
    v = verifier()
    command = v.verify(sign(SECRET, body(plan_id="p1")))
    assert (command.name, command.plan_id, command.nonce) == ("pause", "p1", "nonce-0001")
    with pytest.raises(CommandRejected) as replay:
        v.verify(sign(SECRET, body(plan_id="p1")))
    assert replay.value.reason == "replayed"


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (json.dumps(body()).encode(), "unsigned"),
        (b"not json", "malformed"),
        (b"[1, 2]", "malformed"),
        (sign(b"another-secret", body()), "bad_signature"),
        (json.dumps({"body": json.dumps(body()), "hmac": "00" * 32}).encode(), "bad_signature"),
        (sign(SECRET, body(timestamp=NOW - 31)), "stale"),
        (sign(SECRET, body(timestamp=NOW + 31)), "stale"),
        (sign(SECRET, body(timestamp="now")), "malformed"),
        (sign(SECRET, body(nonce="short")), "malformed"),
        (sign(SECRET, body(command="delete_everything")), "unknown_command"),
        (sign(SECRET, body(command="set_throttles")), "malformed"),
        (sign(SECRET, body(plan_id=7)), "malformed"),
    ],
)
def test_rejections(payload: bytes, reason: str) -> None:
    with pytest.raises(CommandRejected) as rejected:
        verifier().verify(payload)
    assert rejected.value.reason == reason


def test_without_a_secret_everything_is_rejected() -> None:
    with pytest.raises(CommandRejected) as rejected:
        CommandVerifier(None, 30).verify(sign(SECRET, body()))
    assert rejected.value.reason == "no_secret"


@given(st.binary(max_size=64))
def test_a_tampered_body_never_verifies(noise: bytes) -> None:
    envelope = json.loads(sign(SECRET, body()))
    tampered = envelope["body"] + noise.hex()
    if tampered == envelope["body"]:
        return
    with pytest.raises(CommandRejected):
        verifier().verify(json.dumps({"body": tampered, "hmac": envelope["hmac"]}).encode())


def test_expired_nonces_are_forgotten_but_stay_refused_as_stale() -> None:
    clock = [NOW]
    v = CommandVerifier(SECRET, 10, clock=lambda: clock[0])
    for i in range(1100):
        v.verify(sign(SECRET, body(nonce=f"nonce-{i:06d}", timestamp=clock[0])))
        clock[0] += 0.1
    assert len(v._nonces) < 1100  # pruned to the window
    with pytest.raises(CommandRejected) as rejected:
        v.verify(sign(SECRET, body(nonce="nonce-000000", timestamp=NOW)))
    assert rejected.value.reason == "stale"


class _Target:
    is_leader = True


def test_the_queue_is_bounded_and_drops_the_oldest() -> None:
    settings = MqttSettings("h", 1883, "p", "c", "n", "id", 30, queue_max=3, status_min_interval=1.0)
    metrics = DaemonMetrics()
    bridge = MqttBridge(settings, _Target(), verifier(), metrics)  # type: ignore[arg-type]
    for i in range(5):
        bridge.sink({"event": "x", "i": i})
    assert [e["i"] for e in bridge.queue] == [2, 3, 4]
    assert [e["seq"] for e in bridge.queue] == [3, 4, 5]
    assert bridge.dropped == 2
    assert b"reassignd_mqtt_dropped_events_total 2.0" in metrics.exposition(None)[0]


def test_step_finished_gets_its_duration() -> None:
    settings = MqttSettings("h", 1883, "p", "c", "n", "id", 30, queue_max=10, status_min_interval=1.0)
    bridge = MqttBridge(settings, _Target(), verifier(), DaemonMetrics())  # type: ignore[arg-type]
    step = {"plan_id": "p", "topic": "t", "partition": 0, "step": 0}
    bridge.sink({"event": "step.started", "at": 100.0, **step})
    bridge.sink({"event": "step.finished", "at": 112.5, "bytes": 5, **step})
    bridge.sink({"event": "step.finished", "at": 113.0, "bytes": 5, **step, "step": 1})
    assert [e.get("seconds") for e in bridge.queue] == [None, 12.5, None]
