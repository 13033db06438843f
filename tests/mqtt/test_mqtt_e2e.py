"""The daemon's MQTT channel against a real Mosquitto: events, retained status, last will, commands.

The plan's progress is judged from the simulator (assignments) and from what a plain MQTT subscriber
receives, never from the daemon's report of itself.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reassignd.daemon.mqtt_auth import sign
from tests.daemon.test_e2e import LIMITS, assignment, fill_plan, scenario
from tests.mqtt.subscriber import Subscriber
from tests.services.daemon import DaemonProcess
from tests.services.mosquitto import MosquittoServer
from tests.services.scrape import sample
from tests.services.simulator import SimProcess

pytestmark = [pytest.mark.mosquitto, pytest.mark.slow]

SECRET = b"a-shared-secret-for-tests-0123456789"


def mqtt_settings(tmp_path: Path, port: int, cluster: str) -> dict[str, Any]:
    secret_file = tmp_path / "hmac-secret"
    secret_file.write_bytes(SECRET + b"\n")
    secret_file.chmod(0o600)
    return {
        **LIMITS,
        "cluster.id": cluster,
        "mqtt.enable": True,
        "mqtt.host": "127.0.0.1",
        "mqtt.port": port,
        "mqtt.topic.prefix": "test",
        "mqtt.command.hmac.secret.file": str(secret_file),
        "mqtt.status.min.interval.seconds": 0.5,
        "mqtt.keepalive.seconds": 5,
        "ha.node.id": "n1",
    }


def command(name: str, **extra: Any) -> dict[str, Any]:
    return {"command": name, "timestamp": time.time(), "nonce": uuid.uuid4().hex, **extra}


def events(sub: Subscriber) -> list[dict[str, Any]]:
    return [m.json() for m in sub.on("/events")]


def kinds(sub: Subscriber) -> list[str]:
    return [e["event"] for e in events(sub)]


def done(sim: SimProcess, plan: dict[str, Any]) -> bool:
    actual = assignment(sim.state())
    return all(actual[(e["topic"], e["partition"])] == e["replicas"] for e in plan["partitions"])


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimProcess]:
    with SimProcess(scenario(20), tmp_path / "sim", time_scale=5) as process:
        yield process


def test_events_in_order_retained_status_and_last_will(
    sim: SimProcess, mosquitto: MosquittoServer, tmp_path: Path
) -> None:
    cluster = f"c{uuid.uuid4().hex[:8]}"
    base = f"test/{cluster}"
    sub = Subscriber(mosquitto.port, f"{base}/events", f"{base}/daemons/#")
    daemon = DaemonProcess(
        tmp_path / "d", sim.bootstrap_servers, mqtt_settings(tmp_path, mosquitto.port, cluster)
    )
    try:
        daemon.start()
        sub.wait(lambda: any(m.json()["online"] for m in sub.on("/daemons/n1")), 20, "online presence")
        plan = fill_plan(10)
        plan_id = daemon.submit(plan)
        sub.wait(lambda: "plan.completed" in kinds(sub), 90, "plan.completed event")
        assert done(sim, plan)
        received = [e for e in events(sub) if e.get("plan_id") == plan_id]
        seqs = [e["seq"] for e in events(sub)]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "in order, none missing"
        names = [e["event"] for e in received]
        assert names[0] == "plan.submitted" and names[1] == "plan.started" and names[-1] == "plan.completed"
        assert "throttle.changed" in names
        first_seen: dict[tuple[str, int, int], str] = {}
        for e in received:
            if e["event"] in ("step.started", "step.finished"):
                key = (e["topic"], e["partition"], e["step"])
                assert first_seen.setdefault(key, e["event"]) == "step.started", (
                    f"finished before start: {key}"
                )
        finished = [e for e in received if e["event"] == "step.finished"]
        moved = {(e["topic"], e["partition"]) for e in plan["partitions"]}
        assert {(e["topic"], e["partition"]) for e in finished} == moved
        copied: dict[tuple[str, int], int] = {}
        for e in finished:
            copied[(e["topic"], e["partition"])] = copied.get((e["topic"], e["partition"]), 0) + e["bytes"]
            assert e["seconds"] is not None and e["seconds"] >= 0
        assert all(b > 0 for b in copied.values()), "every partition gained a replica: bytes were copied"

        late = Subscriber(mosquitto.port, f"{base}/status")
        try:
            late.wait(
                lambda: any(m.json().get("state") == "completed" for m in late.on("/status")), 10, "status"
            )
            assert all(m.retain for m in late.on("/status")[:1])
            assert late.on("/status")[-1].json()["plan_id"] == plan_id
        finally:
            late.close()

        daemon.kill9()
        sub.wait(lambda: not sub.on("/daemons/n1")[-1].json()["online"], 20, "last will")
    finally:
        daemon.stop()
        sub.close()


def test_signed_commands_act_and_others_are_rejected(
    sim: SimProcess, mosquitto: MosquittoServer, tmp_path: Path
) -> None:
    cluster = f"c{uuid.uuid4().hex[:8]}"
    base = f"test/{cluster}"
    sub = Subscriber(mosquitto.port, f"{base}/events", f"{base}/daemons/#")
    daemon = DaemonProcess(
        tmp_path / "d", sim.bootstrap_servers, mqtt_settings(tmp_path, mosquitto.port, cluster)
    )
    try:
        daemon.start()
        sub.wait(lambda: any(m.json()["online"] for m in sub.on("/daemons/n1")), 20, "online presence")
        sim.set_time_scale(1)  # slow moves: the plan is still running when the commands arrive
        plan = fill_plan(20)
        plan_id = daemon.submit(plan)
        sub.wait(lambda: "step.started" in kinds(sub), 30, "plan running")
        topic = f"{base}/commands"

        sub.publish(topic, json.dumps(command("pause")).encode())  # unsigned
        wrong = sign(b"not-the-secret", command("pause"))
        sub.publish(topic, wrong)
        stale = sign(SECRET, {**command("pause"), "timestamp": time.time() - 3600})
        sub.publish(topic, stale)
        sub.wait(lambda: kinds(sub).count("command.rejected") >= 3, 10, "three rejections")
        assert daemon.status(plan_id)["state"] == "running"
        reasons = [e["reason"] for e in events(sub) if e["event"] == "command.rejected"]
        assert reasons == ["unsigned", "bad_signature", "stale"]

        pause = sign(SECRET, command("pause", plan_id=plan_id))
        sub.publish(topic, pause)
        sub.wait(lambda: "plan.paused" in kinds(sub), 10, "paused")
        assert daemon.status(plan_id)["state"] == "paused"
        sub.publish(topic, pause)  # the same signed message again, within the window
        sub.wait(lambda: kinds(sub).count("command.rejected") >= 4, 10, "replay rejected")
        assert [e["reason"] for e in events(sub) if e["event"] == "command.rejected"][-1] == "replayed"
        _, metrics = daemon.request("GET", "/metrics")
        text = metrics.decode() if isinstance(metrics, bytes) else str(metrics)
        for reason in ("unsigned", "bad_signature", "stale", "replayed"):
            assert sample(text, "reassignd_rejected_commands_total", channel="mqtt", reason=reason) == 1.0

        sim.set_time_scale(20)
        sub.publish(topic, sign(SECRET, command("resume")))
        status = daemon.wait_for_state(plan_id, {"completed", "failed"}, timeout=90)
        assert status["state"] == "completed"
        assert done(sim, plan)
    finally:
        daemon.stop()
        sub.close()


def test_daemon_keeps_working_while_the_broker_is_down_and_publishes_after(
    sim: SimProcess, tmp_path: Path
) -> None:
    broker = MosquittoServer(tmp_path / "mosquitto")
    broker.start()
    cluster = f"c{uuid.uuid4().hex[:8]}"
    daemon = DaemonProcess(
        tmp_path / "d", sim.bootstrap_servers, mqtt_settings(tmp_path, broker.port, cluster)
    )
    sub: Subscriber | None = None
    try:
        daemon.start()
        broker.stop()
        plan = fill_plan(10)
        plan_id = daemon.submit(plan)
        status = daemon.wait_for_state(plan_id, {"completed", "failed"}, timeout=90)
        assert status["state"] == "completed" and done(sim, plan), "the plan ran without the broker"
        broker.start()
        sub = Subscriber(broker.port, f"test/{cluster}/events")
        sub.wait(lambda: "plan.completed" in kinds(sub), 60, "queued events published after reconnect")
        names = [e["event"] for e in events(sub) if e.get("plan_id") == plan_id]
        assert names[0] == "plan.submitted" and names[-1] == "plan.completed"
        seqs = [e["seq"] for e in events(sub)]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    finally:
        daemon.stop()
        broker.stop()
        if sub is not None:
            sub.close()
