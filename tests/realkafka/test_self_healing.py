"""Self-healing on a real KRaft cluster (issue 29): a broker killed for longer than
`self.healing.broker.failure.seconds` is drained end to end by the fix the daemon plans, rehearses and (in
`execute` mode) queues itself. Its partitions end fully replicated on the other brokers, each still over
three racks, and every throttle config is byte-identical to before."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reassignd.localkafka.cluster import RACKS, KafkaCluster
from reassignd.localkafka.load import fill
from tests.realkafka.conftest import create_topic, wait_for
from tests.services.daemon import DaemonProcess

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

TOPIC = "healing"
DEAD = 4
ASSIGNMENT = {0: [1, 2, 4], 1: [2, 3, 4], 2: [3, 4, 1], 3: [4, 1, 2]}
SETTINGS = {
    "leader.reassignment.throttled.rate": 5_000_000,
    "follower.reassignment.throttled.rate": 5_000_000,
    "self.healing.mode": "execute",
    "self.healing.broker.failure.seconds": 10,
    "self.healing.check.interval.seconds": 2,
    "self.healing.cooldown.seconds": 0,
    "cluster.request.timeout.seconds": 5,
}


def rack(broker: int) -> str:
    return RACKS[(broker - 1) % len(RACKS)]


def test_a_broker_killed_for_longer_than_the_timeout_is_drained_by_self_healing(
    fresh_kafka_cluster: Any, probe_of: Any, tmp_path: Path
) -> None:
    # the writer group's coordinator partition must outlive the broker, as on any production cluster
    cluster: KafkaCluster = fresh_kafka_cluster(
        brokers=5, broker_properties={"offsets.topic.replication.factor": "3"}
    )
    probe = probe_of(cluster)
    create_topic(probe, TOPIC, ASSIGNMENT)
    fill(cluster.bootstrap_servers, TOPIC, range(len(ASSIGNMENT)), 4 * 1024 * 1024)
    assert all(len({rack(b) for b in r}) == 3 for r in ASSIGNMENT.values())
    throttles_before = probe.throttle_configs([TOPIC])

    daemon = DaemonProcess(tmp_path / "daemon", cluster.bootstrap_servers, SETTINGS).start()
    try:
        took, fix, errors = healed(daemon, lambda: cluster.kill_broker(DEAD))
    finally:
        daemon.stop()
    print(f"\nbroker {DEAD} killed; its drain completed {took:.1f} s later ({fix['name']})")
    assert fix["name"] == f"self-healing: drain broker {DEAD}", fix
    replicas = probe.replicas(TOPIC)
    assert all(DEAD not in r and len(r) == 3 for r in replicas.values()), replicas
    assert all(len({rack(b) for b in r}) == 3 for r in replicas.values()), replicas
    wait_for(lambda: full_isr(probe, replicas), 30, "every replica in sync")
    assert probe.throttle_configs([TOPIC]) == throttles_before
    assert errors == [], errors


def healed(daemon: DaemonProcess, fault: Callable[[], object]) -> tuple[float, dict[str, Any], list[Any]]:
    """`fault` done, then waited for the daemon's one self-healing plan to complete and its anomaly to be
    fixed: the seconds from the fault to the plan's end, the plan, and the daemon's error records."""
    fault()
    faulted = time.monotonic()

    def fix_completed() -> bool:
        code, plans = daemon.request("GET", "/v1/plans")
        assert code == 200, plans
        return any(p["state"] == "completed" for p in plans["plans"])

    wait_for(fix_completed, 240, "the self-healing plan completed")
    took = time.monotonic() - faulted
    _, plans = daemon.request("GET", "/v1/plans")
    (fix,) = plans["plans"]
    wait_for(lambda: anomaly_states(daemon) == ["fixed"], 30, "the anomaly fixed")
    return took, fix, daemon.log_records("error")


def anomaly_states(daemon: DaemonProcess) -> list[str]:
    code, answer = daemon.request("GET", "/v1/anomalies")
    assert code == 200, answer
    return [a["state"] for a in answer["anomalies"]]


def full_isr(probe: Any, replicas: dict[int, list[int]]) -> bool:
    isr = probe.isr(TOPIC)
    return all(sorted(isr[p]) == sorted(r) for p, r in replicas.items())
