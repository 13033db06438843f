"""The daemon end to end: `reassignd run` against the simulated cluster, judged from the cluster's side.

Every assertion reads the simulator's own view (GET /state: assignments, configs, observed peaks and time
under min.insync.replicas), never the daemon's report of itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reassignd.store.base import EventKind, replayed_steps
from reassignd.store.sqlite import SqliteStore
from tests.services.daemon import DaemonProcess, plan_targets
from tests.services.simulator import SimProcess

pytestmark = pytest.mark.slow

LIMITS = {
    "reassignment.parallel.replica.count": 1,
    "reassignment.max.incoming.replica.movements.per.broker": 2,
    "reassignment.max.outgoing.replica.movements.per.broker": 3,
    "reassignment.max.concurrent.replica.movements": 5,
    "leader.reassignment.throttled.rate": 40_000_000,
    "follower.reassignment.throttled.rate": 20_000_000,
}
OPERATOR_TOPIC_CONFIGS = {"leader.replication.throttled.replicas": "0:2,7:3", "min.insync.replicas": "2"}
OPERATOR_BROKER_CONFIGS = {"5": {"follower.replication.throttled.rate": "30000000"}}


def scenario(partitions_per_topic: int = 100) -> dict[str, Any]:
    """Six brokers in three racks; every replica starts on brokers 1-3, so 4-6 receive the moves."""
    assignment = [[(i % 3) + 1, ((i + 1) % 3) + 1, ((i + 2) % 3) + 1] for i in range(partitions_per_topic)]
    return {
        "seed": 7,
        "brokers": [{"id": b, "rack": f"/dc1/rack{(b - 1) % 3 + 1}"} for b in range(1, 7)],
        "topics": [
            {
                "name": name,
                "partitions": partitions_per_topic,
                "replication_factor": 3,
                "partition_bytes": 10_000_000,
                "produce_bytes_per_sec": 50_000,
                "configs": dict(OPERATOR_TOPIC_CONFIGS) if name == "events" else {"min.insync.replicas": "2"},
                "assignment": assignment,
            }
            for name in ("events", "logs")
        ],
        "broker_configs": OPERATOR_BROKER_CONFIGS,
    }


def fill_plan(partitions_per_topic: int = 100) -> dict[str, Any]:
    """Move the preferred leader of every partition to a new broker; every fourth also moves a follower."""
    entries = []
    for name in ("events", "logs"):
        for i in range(partitions_per_topic):
            current = [(i % 3) + 1, ((i + 1) % 3) + 1, ((i + 2) % 3) + 1]
            target = [4 + (i % 3), *current[1:]]
            if i % 4 == 0:
                target[2] = 4 + ((i + 1) % 3)
            entries.append({"topic": name, "partition": i, "replicas": target})
    return {"version": 1, "partitions": entries}


def assignment(state: dict[str, Any]) -> dict[tuple[str, int], list[int]]:
    return {(p["topic"], p["partition"]): p["replicas"] for p in state["partitions"]}


def configs(state: dict[str, Any]) -> tuple[dict[str, Any], dict[int, Any]]:
    topics = {t["name"]: t.get("configs", {}) for t in state["topics"]}
    brokers = {b["id"]: b.get("configs", {}) for b in state["brokers"]}
    return topics, brokers


def reassigning(state: dict[str, Any]) -> int:
    return sum(1 for p in state["partitions"] if p["adding"] or p["removing"])


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimProcess]:
    with SimProcess(scenario(), tmp_path / "sim", time_scale=20) as process:
        yield process


def journal_checks(state_dir: Path, plan_id: str) -> list[Any]:
    store = SqliteStore(state_dir)
    try:
        entries = store.journal(plan_id=plan_id)
    finally:
        store.close()
    assert replayed_steps(entries) == []
    started = {(e.tp, e.step_index) for e in entries if e.kind is EventKind.STEP_STARTED}
    finished = {(e.tp, e.step_index) for e in entries if e.kind is EventKind.STEP_FINISHED}
    assert started == finished, "every step started was finished exactly once"
    return entries


def test_200_partition_plan_completes_within_limits_and_restores_throttles(
    sim: SimProcess, tmp_path: Path
) -> None:
    before = sim.state()
    topics_before, brokers_before = configs(before)
    daemon = DaemonProcess(tmp_path / "daemon", sim.bootstrap_servers, LIMITS).start()
    try:
        plan = fill_plan()
        plan_id = daemon.submit(plan)
        saw_throttles_in_flight = saw_operator_plus_ours = False
        peak_total_incoming = 0
        deadline = time.monotonic() + 240
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            state = sim.state()
            topics, brokers = configs(state)
            # the operator's own entries are never removed; their 30 MB/s on broker 5 gets our 20 MB/s
            # added while broker 5 receives moves (throttle.operator.rate.policy = add, KIP-542)
            assert set(topics_before["events"]["leader.replication.throttled.replicas"].split(",")) <= set(
                topics["events"].get("leader.replication.throttled.replicas", "").split(",")
            )
            rate = brokers[5].get("follower.replication.throttled.rate")
            assert rate in ("30000000", "50000000")
            saw_operator_plus_ours |= rate == "50000000"
            if reassigning(state) and topics["logs"].get("follower.replication.throttled.replicas"):
                saw_throttles_in_flight = True
            peak_total_incoming = max(
                peak_total_incoming, sum(b["incoming"] for b in state["observed"]["brokers"])
            )
            status = daemon.status(plan_id)
            if status["state"] in ("completed", "failed", "cancelled"):
                break
            time.sleep(0.1)
        assert status["state"] == "completed", status
        after = sim.state()
        expected = plan_targets(plan)
        actual = assignment(after)
        assert {tp: actual[tp] for tp in expected} == expected  # exactly, order included
        for broker in after["observed"]["brokers"]:
            assert broker["incoming_peak"] <= 2, broker
            assert broker["outgoing_peak"] <= 3, broker
        assert peak_total_incoming <= 5
        assert after["observed"]["under_min_isr"] == []
        assert saw_throttles_in_flight and saw_operator_plus_ours
        assert configs(after) == (topics_before, brokers_before)  # throttles end exactly as they began
        leaders = {(p["topic"], p["partition"]): p["leader"] for p in after["partitions"]}
        assert all(leaders[tp] == replicas[0] for tp, replicas in expected.items()), "no leader skew left"
        sized = [r["partitions"] for r in daemon.log_records() if r["event"] == "cluster size read"]
        assert sized == [len(before["partitions"])], "the cluster's size is read once, at the start"
        assert daemon.terminate() == 0
        journal_checks(daemon.state_dir, plan_id)
    finally:
        daemon.stop()


# Over TCP, the crash that leaves the most to reconcile (the reassignments sent, nothing journaled) and a
# real kill -9 at no chosen point; a crash at every effect boundary is explored in process
# (tests/daemon/test_plan_run_stateful.py, tests/daemon/test_failure_paths.py).
@pytest.mark.parametrize("crash", ["after_alter_reassignments=3", "between_steps"])
def test_kill_9_then_restart_completes_without_repeating_a_step(crash: str, tmp_path: Path) -> None:
    with SimProcess(scenario(20), tmp_path / "sim", time_scale=10) as sim:
        before = sim.state()
        daemon = DaemonProcess(tmp_path / "daemon", sim.bootstrap_servers, LIMITS)
        daemon.start(failpoints=None if crash == "between_steps" else crash)
        try:
            plan = fill_plan(20)
            plan_id = daemon.submit(plan)
            if crash == "between_steps":
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    state = sim.state()
                    done = sum(
                        1
                        for e in plan["partitions"]
                        if assignment(state)[(e["topic"], e["partition"])] == e["replicas"]
                    )
                    if done >= 5 and reassigning(state) == 0:
                        daemon.kill9()
                        break
                    time.sleep(0.02)
            assert daemon.wait_exit(timeout=60) == -9, daemon.log_tail()
            daemon.start()
            status = daemon.wait_for_state(plan_id, {"completed", "failed"}, timeout=120)
            assert status["state"] == "completed", status
            after = sim.state()
            expected = plan_targets(plan)
            assert {tp: assignment(after)[tp] for tp in expected} == expected
            assert configs(after) == configs(before), "no throttle left behind"
            assert daemon.terminate() == 0
            entries = journal_checks(daemon.state_dir, plan_id)
            assert sum(1 for e in entries if e.kind is EventKind.PLAN_COMPLETED) == 1
        finally:
            daemon.stop()


def test_invalid_plans_are_rejected_whole_and_unauthenticated_calls_change_nothing(
    sim: SimProcess, tmp_path: Path
) -> None:
    daemon = DaemonProcess(tmp_path / "daemon", sim.bootstrap_servers, LIMITS).start()
    try:
        bad = {
            "version": 1,
            "partitions": [
                {"topic": "events", "partition": 0, "replicas": [4, 2, 3]},  # fine on its own
                {"topic": "nope", "partition": 0, "replicas": [1, 2, 3]},
                {"topic": "events", "partition": 1, "replicas": [1, 9, 3]},
                {"topic": "events", "partition": 2, "replicas": [1, 2]},
            ],
        }
        code, body = daemon.request("POST", "/v1/plans", bad)
        assert code == 422, body
        fields = {(p["where"], p["field"]) for p in body["error"]["problems"]}
        assert fields == {("nope-0", "partition"), ("events-1", "replicas"), ("events-2", "replicas")}
        malformed = {"version": 1, "partitions": [{"topic": "events", "partition": 0, "replicas": [1, 1]}]}
        code, body = daemon.request("POST", "/v1/plans", malformed)
        assert code == 422 and body["error"]["code"] == "invalid_plan"
        for token in (None, "wrong-token"):
            code, body = daemon.request("POST", "/v1/plans", fill_plan(5), token=token)
            assert code == 401, body
            code, body = daemon.request(
                "PATCH", "/v1/limits", {"reassignment.parallel.replica.count": 3}, token=token
            )
            assert code == 401, body
        code, plans = daemon.request("GET", "/v1/plans")
        assert code == 200 and plans == {"plans": []}
        code, limits = daemon.request("GET", "/v1/limits")
        assert limits["reassignment.parallel.replica.count"] == 1
        assert reassigning(sim.state()) == 0
    finally:
        daemon.stop()
