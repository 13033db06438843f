"""HA and MQTT together: only the leader acts on commands and publishes status; after a kill -9 the old
leader's last will fires and the new leader announces itself and takes the commands."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from reassignd.daemon.mqtt_auth import sign
from tests.daemon.test_e2e import fill_plan, scenario
from tests.ha.test_failover import ha_settings, role, wait_for
from tests.mqtt.subscriber import Subscriber
from tests.mqtt.test_mqtt_e2e import SECRET, command, events, kinds
from tests.services.daemon import DaemonProcess
from tests.services.mosquitto import MosquittoServer
from tests.services.simulator import SimProcess
from tests.services.zookeeper import ZooKeeperServer

pytestmark = [pytest.mark.zookeeper, pytest.mark.mosquitto, pytest.mark.slow]


def test_commands_and_status_follow_the_leader(
    zookeeper: ZooKeeperServer, mosquitto: MosquittoServer, tmp_path: Path
) -> None:
    cluster = f"c{uuid.uuid4().hex[:8]}"
    base = f"test/{cluster}"
    secret_file = tmp_path / "secret"
    secret_file.write_bytes(SECRET)
    secret_file.chmod(0o600)

    def settings(node: str) -> dict[str, object]:
        return {
            **ha_settings(zookeeper, cluster, node),
            "mqtt.enable": True,
            "mqtt.host": "127.0.0.1",
            "mqtt.port": mosquitto.port,
            "mqtt.topic.prefix": "test",
            "mqtt.command.hmac.secret.file": str(secret_file),
            "mqtt.status.min.interval.seconds": 0.2,
        }

    sub = Subscriber(mosquitto.port, f"{base}/events", f"{base}/daemons/#", f"{base}/status")
    with SimProcess(scenario(20), tmp_path / "sim", time_scale=1) as sim:
        first = DaemonProcess(tmp_path / "a", sim.bootstrap_servers, settings("a")).start()
        second = DaemonProcess(tmp_path / "b", sim.bootstrap_servers, settings("b"))
        try:
            wait_for(lambda: role(first) == "leader", 20, "a leads")
            second.start()
            wait_for(lambda: role(second) == "standby", 20, "b stands by")
            for node in ("a", "b"):
                sub.wait(
                    lambda n=node: any(m.json()["online"] for m in sub.on(f"/daemons/{n}")), 20, "online"
                )
            plan_id = first.submit(fill_plan(20))
            sub.wait(lambda: "step.started" in kinds(sub), 30, "running")
            sub.publish(f"{base}/commands", sign(SECRET, command("pause")))
            sub.wait(lambda: "command.accepted" in kinds(sub), 10, "pause accepted")
            time.sleep(1)
            judged = [e for e in events(sub) if e["event"].startswith("command.")]
            assert [(e["event"], e["node"]) for e in judged] == [("command.accepted", "a")], "judged once"
            sub.wait(lambda: sub.on("/status")[-1].json().get("state") == "paused", 10, "status paused")
            assert {m.json()["node"] for m in sub.on("/status")} == {"a"}, "only the leader publishes status"

            first.kill9()
            sub.wait(lambda: not sub.on("/daemons/a")[-1].json()["online"], 20, "a's last will")
            sub.wait(
                lambda: any(
                    e["event"] == "leadership.changed" and e["node"] == "b" and e["is_leader"]
                    for e in events(sub)
                ),
                30,
                "b announces its leadership",
            )
            sim.set_time_scale(20)
            sub.publish(f"{base}/commands", sign(SECRET, command("resume")))
            sub.wait(
                lambda: any(e["event"] == "command.accepted" and e["node"] == "b" for e in events(sub)),
                10,
                "b takes the commands",
            )
            status = second.wait_for_state(plan_id, {"completed", "failed"}, timeout=90)
            assert status["state"] == "completed"
            sub.wait(
                lambda: (
                    sub.on("/status")[-1].json().get("state") == "completed"
                    and sub.on("/status")[-1].json()["node"] == "b"
                ),
                10,
                "b publishes the final status",
            )
        finally:
            first.stop()
            second.stop()
            sub.close()
