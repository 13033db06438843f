"""The failure paths end to end: `reassignd run` against `reassignd sim`, judged from the cluster's side.

The interleavings are explored in process (test_plan_run_stateful.py); these few runs show the real
processes over TCP end as described: a cancel at a moment with partitions mid-step and between steps, a
broker bounced mid-plan (receiving, serving), a one-minute outage of the whole cluster.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from reassignd.store.base import EventKind
from reassignd.store.sqlite import SqliteStore
from tests.daemon.test_e2e import LIMITS, assignment, configs, fill_plan, reassigning, scenario
from tests.daemon.test_e2e_lifecycle import wait_for
from tests.services.daemon import DaemonProcess, plan_targets
from tests.services.simulator import SimProcess

pytestmark = pytest.mark.slow


def journal(daemon: DaemonProcess, kind: EventKind) -> list[Any]:
    store = SqliteStore(daemon.state_dir)
    try:
        return store.journal(kinds=[kind])
    finally:
        store.close()


def test_a_cancel_leaves_each_partition_on_its_pre_plan_list_or_its_target(tmp_path: Path) -> None:
    with SimProcess(scenario(12), tmp_path / "sim", time_scale=10) as sim:
        before = sim.state()
        daemon = DaemonProcess(tmp_path / "daemon", sim.bootstrap_servers, LIMITS).start()
        try:
            plan = fill_plan(12)  # every partition two steps or more: add the new leader, then drop
            plan_id = daemon.submit(plan)
            wait_for(
                lambda: (
                    reassigning(sim.state()) > 0
                    and sum(len(r) > 3 and not a for r, a in _lists(sim.state())) > 0
                ),
                60,
                "some partitions between two steps while others copy",
            )
            code, body = daemon.request("POST", f"/v1/plans/{plan_id}/cancel")
            assert code == 200, body
            status = daemon.wait_for_state(plan_id, {"cancelled"}, timeout=120)
            after = sim.state()
            pre = assignment(before)
            targets = plan_targets(plan)
            for tp, replicas in assignment(after).items():
                if tp in targets:
                    assert replicas in (pre[tp], targets[tp]), (tp, replicas, pre[tp], targets[tp])
            assert reassigning(after) == 0
            assert all(sorted(p["isr"]) == sorted(p["replicas"]) for p in after["partitions"])
            assert configs(after) == configs(before), "every throttle config as before the plan"
            outcome = status["progress"]["outcome"]["counts"]
            assert sum(outcome.values()) == len(targets) and outcome["pre_plan"] > 0
            observed = after["observed"]["under_min_isr"]
            assert not [e for e in observed if e["seconds"] > 0], observed
        finally:
            daemon.stop()


def _lists(state: dict[str, Any]) -> list[tuple[list[int], list[int]]]:
    return [(p["replicas"], p["adding"]) for p in state["partitions"]]


def test_a_receiving_broker_that_bounces_mid_plan_keeps_none_of_our_throttles(tmp_path: Path) -> None:
    """(A serving broker bouncing, and both under crashes, in process: test_failure_paths.py and
    test_plan_run_stateful.py.)"""
    broker = 4  # fill_plan moves replicas from brokers 1-3 to 4-6
    with SimProcess(scenario(12), tmp_path / "sim", time_scale=40) as sim:
        before = sim.state()
        settings = {**LIMITS, "cluster.request.timeout.seconds": 2}
        daemon = DaemonProcess(tmp_path / "daemon", sim.bootstrap_servers, settings).start()
        try:
            plan = fill_plan(12)
            plan_id = daemon.submit(plan)
            wait_for(
                lambda: any(b["id"] == broker and b["configs"] for b in sim.state()["brokers"]),
                60,
                f"our throttle on broker {broker}",
            )
            sim.stop_broker(broker)
            time.sleep(240 / 40)  # four minutes of cluster time
            sim.start_broker(broker)
            status = daemon.wait_for_state(plan_id, {"completed"}, timeout=180)
            after = sim.state()
            targets = plan_targets(plan)
            assert {tp: assignment(after)[tp] for tp in targets} == targets
            assert configs(after) == configs(before), "every throttle config as before, on every broker"
            assert not journal(daemon, EventKind.FOREIGN_CHANGE), "our own writes are never someone else's"
            assert status["progress"]["percent"] == 100.0
        finally:
            daemon.stop()


def test_a_one_minute_outage_is_visible_and_the_plan_completes_after(tmp_path: Path) -> None:
    with SimProcess(scenario(12), tmp_path / "sim", time_scale=10) as sim:
        before = sim.state()
        settings = {**LIMITS, "cluster.request.timeout.seconds": 1}
        daemon = DaemonProcess(tmp_path / "daemon", sim.bootstrap_servers, settings).start()
        try:
            plan = fill_plan(12)
            plan_id = daemon.submit(plan)
            wait_for(lambda: reassigning(sim.state()) > 0, 30, "a step in flight")
            brokers = [b["id"] for b in before["brokers"]]
            for b in brokers:
                sim.stop_broker(b)
            wait_for(lambda: not daemon.status(plan_id)["cluster"]["reachable"], 30, "the outage in status")
            status = daemon.status(plan_id)
            assert status["cluster"]["since"] is not None and status["state"] == "running"
            # why, in one line: the first failed read's error (the call that noticed first: a kafka-python
            # call can, before librdkafka sees every broker down and the cause is classified)
            cause = status["cluster"]["error"]
            assert cause and "\n" not in cause, status["cluster"]
            code, ready = daemon.request("GET", "/readyz")
            assert code == 503 and ready["reason"] == "cluster unreachable", ready
            assert ready["error"]["message"] == f"cluster unreachable: {cause}", ready
            code, metrics = daemon.request("GET", "/metrics")
            assert re.search(r"reassignd_cluster_reachable(\{[^}]*\})? 0\.0", str(metrics)), metrics
            time.sleep(max(0.0, 60 / 10 - 2))  # a minute of cluster time in all
            for b in brokers:
                sim.start_broker(b)
            status = daemon.wait_for_state(plan_id, {"completed"}, timeout=180)
            assert status["cluster"]["reachable"] is True and status["cluster"]["error"] is None
            after = sim.state()
            targets = plan_targets(plan)
            assert {tp: assignment(after)[tp] for tp in targets} == targets
            assert configs(after) == configs(before)
            code, ready = daemon.request("GET", "/readyz")
            assert code == 200, ready
        finally:
            daemon.stop()


def test_a_drain_in_zookeeper_mode_survives_the_controller_failing_and_a_cancel(tmp_path: Path) -> None:
    """Kafka 3.9 in ZooKeeper mode: reassignments go to the controller only (another broker answers
    NOT_CONTROLLER). Broker 1, the controller, stops while broker 3 is drained, freezing the steps in flight
    (their targets keep broker 1); the cancel must reach the new controller and revert them while broker 1
    is still down; once it is back every partition is on its pre-plan list or its target."""
    zk = {**scenario(12), "kafka": {"version": "3.9", "mode": "zookeeper"}}
    for topic in zk["topics"]:
        topic["partition_bytes"] = 100_000_000  # five seconds of cluster time a copy
    with SimProcess(zk, tmp_path / "sim", time_scale=10) as sim:
        before = sim.state()
        pre = assignment(before)
        plan = {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": i, "replicas": [6 if b == 3 else b for b in replicas]}
                for (t, i), replicas in sorted(pre.items())
            ],
        }
        targets = plan_targets(plan)
        settings = {**LIMITS, "cluster.request.timeout.seconds": 2}
        daemon = DaemonProcess(tmp_path / "daemon", sim.bootstrap_servers, settings).start()
        try:
            plan_id = daemon.submit(plan)

            def some_done_some_moving() -> bool:
                state = sim.state()
                done = sum(assignment(state)[tp] == target for tp, target in targets.items())
                return done >= 2 and reassigning(state) > 0

            wait_for(some_done_some_moving, 60, "steps done and steps in flight")
            sim.stop_broker(1)
            assert sim.state()["controller_id"] != 1
            time.sleep(2)  # twenty seconds of cluster time: the steps in flight cannot end without broker 1
            assert reassigning(sim.state()) > 0
            code, body = daemon.request("POST", f"/v1/plans/{plan_id}/cancel")
            assert code == 200, body
            wait_for(
                lambda: reassigning(sim.state()) == 0,
                30,
                "the steps in flight reverted by the new controller",
            )
            sim.start_broker(1)
            status = daemon.wait_for_state(plan_id, {"cancelled"}, timeout=120)
            after = sim.state()
            for tp, replicas in assignment(after).items():
                assert replicas in (pre[tp], targets[tp]), (tp, replicas, pre[tp], targets[tp])
            assert all(p["leader"] in p["replicas"] for p in after["partitions"])
            assert all(sorted(p["isr"]) == sorted(p["replicas"]) for p in after["partitions"])
            assert configs(after) == configs(before), "every throttle config as before the plan"
            outcome = status["progress"]["outcome"]["counts"]
            assert outcome["target"] >= 2 and outcome["pre_plan"] >= 1, outcome
        finally:
            daemon.stop()
