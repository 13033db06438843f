"""Two daemons on one simulated cluster sharing a real ZooKeeper: failover and a ZooKeeper outage.

Assertions read the simulator's own state (assignments, configs) and the shared journal in ZooKeeper.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from reassignd.store.base import EventKind, replayed_steps
from reassignd.store.zookeeper import ZooKeeperStore
from tests.daemon.test_e2e import LIMITS, assignment, configs, fill_plan, reassigning, scenario
from tests.services.daemon import DaemonProcess, plan_targets
from tests.services.scrape import sample
from tests.services.simulator import SimProcess
from tests.services.zookeeper import ZooKeeperServer

pytestmark = [pytest.mark.zookeeper, pytest.mark.slow]

SESSION_SECONDS = 3.0
WRITER_SESSION_SECONDS = 6.0  # the writer group's session (the brokers' group.min.session.timeout.ms)
CYCLE_SECONDS = 0.2


def ha_settings(zk: ZooKeeperServer, cluster: str, node: str) -> dict[str, Any]:
    return {
        **LIMITS,
        "cluster.id": cluster,
        "state.store": "zookeeper",
        "ha.enable": True,
        "ha.zookeeper.connect": zk.hosts,
        "ha.session.timeout.seconds": SESSION_SECONDS,
        "cluster.writer.session.timeout.seconds": WRITER_SESSION_SECONDS,
        "ha.node.id": node,
    }


def role(daemon: DaemonProcess) -> str | None:
    try:
        _, body = daemon.request("GET", "/readyz")
    except OSError:
        return None
    return body.get("role") if isinstance(body, dict) else None


def leader_named(daemon: DaemonProcess) -> str | None:
    try:
        _, body = daemon.request("GET", "/readyz")
    except OSError:
        return None
    return body.get("leader") if isinstance(body, dict) else None


def is_leader_metric(daemon: DaemonProcess) -> float:
    _, body = daemon.request("GET", "/metrics")
    value = sample(body if isinstance(body, bytes) else str(body), "reassignd_ha_is_leader")
    assert value is not None, "reassignd_ha_is_leader is exported"
    return value


def plan_state(daemon: DaemonProcess, plan_id: str) -> str | None:
    code, body = daemon.request("GET", f"/v1/plans/{plan_id}")
    return str(body["state"]) if code == 200 else None


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise TimeoutError(what)


def done_count(state: dict[str, Any], plan: dict[str, Any]) -> int:
    actual = assignment(state)
    return sum(1 for e in plan["partitions"] if actual[(e["topic"], e["partition"])] == e["replicas"])


def journal(zk: ZooKeeperServer, cluster: str, plan_id: str) -> list[Any]:
    client = KazooClient(hosts=zk.hosts)
    client.start(timeout=15)
    store = ZooKeeperStore(client, f"/reassignd/{cluster}/state", owns_client=True)
    try:
        entries = store.journal(plan_id=plan_id)
    finally:
        store.close()
    assert replayed_steps(entries) == [], "no step applied twice"
    started = {(e.tp, e.step_index) for e in entries if e.kind is EventKind.STEP_STARTED}
    finished = {(e.tp, e.step_index) for e in entries if e.kind is EventKind.STEP_FINISHED}
    assert started == finished
    assert sum(1 for e in entries if e.kind is EventKind.PLAN_COMPLETED) == 1
    return entries


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimProcess]:
    with SimProcess(scenario(20), tmp_path / "sim", time_scale=5) as process:
        yield process


def test_standby_takes_over_after_kill_9_and_completes_the_plan(
    sim: SimProcess, zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    cluster = f"c{uuid.uuid4().hex[:8]}"
    before = sim.state()
    first = DaemonProcess(tmp_path / "a", sim.bootstrap_servers, ha_settings(zookeeper, cluster, "a")).start()
    second = DaemonProcess(tmp_path / "b", sim.bootstrap_servers, ha_settings(zookeeper, cluster, "b"))
    try:
        wait_for(lambda: role(first) == "leader", 20, "first daemon elected")
        second.start()
        # A daemon stands by from its start; it names the leader once it has read the election (a moment
        # later), which is what the 421 below carries.
        wait_for(lambda: leader_named(second) == first.url, 20, "second daemon stands by, naming the leader")
        assert role(second) == "standby"
        assert is_leader_metric(first) == 1 and is_leader_metric(second) == 0
        plan = fill_plan(20)
        code, body = second.request("POST", "/v1/plans", plan)
        assert code == 421, body  # a standby refuses writes and names the leader
        assert body["error"]["details"]["leader"] == first.url
        plan_id = first.submit(plan)
        code, body = first.request(
            "PATCH", "/v1/limits", {"reassignment.max.concurrent.replica.movements": 4}
        )
        assert code == 200, body
        wait_for(lambda: plan_state(second, plan_id) == "running", 10, "standby reads the plan")
        wait_for(lambda: done_count(sim.state(), plan) >= 5 and reassigning(sim.state()) > 0, 60, "mid-plan")
        first.kill9()
        killed_at = time.monotonic()
        wait_for(lambda: role(second) == "leader", SESSION_SECONDS + 15, "standby elected")
        took_over = time.monotonic() - killed_at
        assert is_leader_metric(second) == 1
        code, limits = second.request("GET", "/v1/limits")
        assert limits["reassignment.max.concurrent.replica.movements"] == 4, (
            "the runtime limit survives failover"
        )
        progress = done_count(sim.state(), plan)
        wait_for(lambda: done_count(sim.state(), plan) > progress, 30, "the new leader moves partitions")
        status = second.wait_for_state(plan_id, {"completed", "failed"}, timeout=120)
        assert status["state"] == "completed", status
        # both sessions must expire first (ZooKeeper's, and the old leader's in the writer group); then one
        # cycle (plus process scheduling on a busy CI machine)
        assert took_over <= max(SESSION_SECONDS, WRITER_SESSION_SECONDS) + CYCLE_SECONDS + 2.0, took_over
        after = sim.state()
        expected = plan_targets(plan)
        assert {tp: assignment(after)[tp] for tp in expected} == expected
        assert configs(after) == configs(before), "no throttle left behind"
        assert second.terminate() == 0
        journal(zookeeper, cluster, plan_id)
    finally:
        first.stop()
        second.stop()


def test_leader_stops_acting_while_zookeeper_is_down_and_resumes_after(
    sim: SimProcess, zookeeper_fresh: ZooKeeperServer, tmp_path: Path
) -> None:
    zk = zookeeper_fresh
    cluster = f"c{uuid.uuid4().hex[:8]}"
    before = sim.state()
    daemon = DaemonProcess(tmp_path / "a", sim.bootstrap_servers, ha_settings(zk, cluster, "a")).start()
    try:
        wait_for(lambda: role(daemon) == "leader", 20, "elected")
        plan = fill_plan(20)
        plan_id = daemon.submit(plan)
        wait_for(lambda: done_count(sim.state(), plan) >= 3, 60, "some partitions moved")
        zk.stop()
        time.sleep(SESSION_SECONDS / 2)  # the client notices the lost connection (SUSPENDED) at once
        # from here on no new step may start: watch the simulator's in-flight targets
        started: set[tuple[str, int]] = set()
        in_flight_at_stop = {
            (p["topic"], p["partition"]) for p in sim.state()["partitions"] if p["adding"] or p["removing"]
        }
        deadline = time.monotonic() + SESSION_SECONDS * 2
        while time.monotonic() < deadline:
            for p in sim.state()["partitions"]:
                if p["adding"] or p["removing"]:
                    started.add((p["topic"], p["partition"]))
            time.sleep(0.05)
        assert started <= in_flight_at_stop, f"steps started without ZooKeeper: {started - in_flight_at_stop}"
        assert role(daemon) == "standby"
        zk.start()
        wait_for(lambda: role(daemon) == "leader", 30, "leadership regained after ZooKeeper returned")
        status = daemon.wait_for_state(plan_id, {"completed", "failed"}, timeout=120)
        assert status["state"] == "completed", status
        after = sim.state()
        expected = plan_targets(plan)
        assert {tp: assignment(after)[tp] for tp in expected} == expected
        assert configs(after) == configs(before)
        assert daemon.terminate() == 0
        journal(zk, cluster, plan_id)
    finally:
        daemon.stop()


def stopped(daemon: DaemonProcess) -> bool:
    """The process is in the stopped state (SIGSTOP), e.g. frozen by a `:stop` failpoint."""
    assert daemon.proc is not None
    fields = Path(f"/proc/{daemon.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0] == "T"


def writes_by(sim: SimProcess, client_id: str, since: float) -> list[dict[str, Any]]:
    """Writes the simulator received from one daemon's clients at or after `since` (wall clock)."""
    return [r for r in sim.write_requests() if r["client_id"] == client_id and r["time"] >= since]


def client_named(settings: dict[str, Any], name: str) -> dict[str, Any]:
    return {**settings, "cluster.client.client.id": name}


def run_paused_leader(
    sim: SimProcess, zk: ZooKeeperServer, tmp_path: Path, failpoints: str | None
) -> tuple[DaemonProcess, list[dict[str, Any]]]:
    """Freezes the leader mid-plan (by SIGSTOP from outside, or by a `:stop` failpoint at an exact place)
    until the standby leads, wakes it, lets the standby finish; returns the old leader and every write the
    simulator received from it after it woke."""
    cluster = f"c{uuid.uuid4().hex[:8]}"
    before = sim.state()
    first = DaemonProcess(
        tmp_path / "a", sim.bootstrap_servers, client_named(ha_settings(zk, cluster, "a"), "daemon-a")
    ).start(failpoints=failpoints)
    second = DaemonProcess(
        tmp_path / "b", sim.bootstrap_servers, client_named(ha_settings(zk, cluster, "b"), "daemon-b")
    )
    try:
        wait_for(lambda: role(first) == "leader", 20, "first daemon elected")
        second.start()
        wait_for(lambda: role(second) == "standby", 20, "second daemon stands by")
        plan = fill_plan(20)
        plan_id = first.submit(plan)
        assert first.proc is not None
        if failpoints is None:
            wait_for(lambda: done_count(sim.state(), plan) >= 3, 60, "mid-plan")
            os.kill(first.proc.pid, signal.SIGSTOP)
        else:
            wait_for(lambda: stopped(first), 60, "the leader froze at its failpoint")
        try:
            wait_for(lambda: role(second) == "leader", SESSION_SECONDS + 15, "standby elected")
        finally:
            woke_at = time.time()
            os.kill(first.proc.pid, signal.SIGCONT)
        wait_for(lambda: role(first) == "standby", 20, "the old leader stands down")
        status = second.wait_for_state(plan_id, {"completed", "failed"}, timeout=120)
        assert status["state"] == "completed", status
        after = sim.state()
        expected = plan_targets(plan)
        assert {tp: assignment(after)[tp] for tp in expected} == expected
        assert configs(after) == configs(before), "no throttle left behind"
        assert writes_by(sim, "daemon-b", 0), "the simulator's request log names the new leader's writes"
        journal(zk, cluster, plan_id)
        return first, writes_by(sim, "daemon-a", woke_at)
    finally:
        first.stop()
        second.stop()


def test_a_paused_old_leader_applies_nothing_after_waking(
    sim: SimProcess, zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    """SIGSTOP the leader past its session timeout at whatever point it is: the standby takes over; when the
    old leader wakes, its overdue cycle runs before kazoo has noticed the expiry — the fence (node check in
    every commit, session check in the guard, lease on every write) must stop it."""
    _, late_writes = run_paused_leader(sim, zookeeper, tmp_path, failpoints=None)
    assert late_writes == []


def test_a_leader_frozen_between_its_guard_and_its_write_sends_nothing_after_waking(
    sim: SimProcess, zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    """The window the guard cannot close: leadership was confirmed, then the process froze before the
    AlterPartitionReassignments left. Kafka takes no fencing token, so only the write lease stops it."""
    first, late_writes = run_paused_leader(
        sim, zookeeper, tmp_path, failpoints="before_alter_reassignments=3:stop"
    )
    assert late_writes == []
    assert "leadership lease expired" in first.log_path.read_text()
