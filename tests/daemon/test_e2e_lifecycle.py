"""Operating a running plan: pause, resume, cancel, live limits and throttles, someone else's config change.

As in test_e2e.py, what happened is read from the simulated cluster, not from the daemon.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.test_e2e import LIMITS, assignment, configs, fill_plan, reassigning, scenario
from tests.services.daemon import DaemonProcess
from tests.services.simulator import SimProcess

pytestmark = pytest.mark.slow


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def at_target(state: dict[str, Any], plan: dict[str, Any]) -> int:
    actual = assignment(state)
    return sum(actual[(e["topic"], e["partition"])] == e["replicas"] for e in plan["partitions"])


def test_pause_resume_and_cancel(tmp_path: Path) -> None:
    with SimProcess(scenario(20), tmp_path / "sim", time_scale=4) as sim:
        before = sim.state()
        slow = {**LIMITS, "follower.reassignment.throttled.rate": 5_000_000}
        daemon = DaemonProcess(tmp_path / "daemon", sim.bootstrap_servers, slow).start()
        try:
            plan = fill_plan(20)
            plan_id = daemon.submit(plan)
            wait_for(lambda: reassigning(sim.state()) > 0, 30, "a step in flight")

            code, body = daemon.request("POST", "/v1/pause")
            assert code == 200 and body["state"] == "paused", body
            wait_for(lambda: reassigning(sim.state()) == 0, 60, "in-flight steps to finish while paused")
            frozen = assignment(sim.state())
            time.sleep(1.5)  # several cycles: nothing new may start while paused
            assert assignment(sim.state()) == frozen and reassigning(sim.state()) == 0
            assert daemon.status(plan_id)["state"] == "paused"

            code, body = daemon.request("POST", "/v1/resume")
            assert code == 200 and body["state"] == "running", body
            wait_for(lambda: assignment(sim.state()) != frozen, 30, "progress after resume")
            wait_for(lambda: reassigning(sim.state()) > 0, 30, "a step in flight again")

            done_before_cancel = at_target(sim.state(), plan)
            code, body = daemon.request("POST", f"/v1/plans/{plan_id}/cancel")
            assert code == 200 and body["state"] in ("cancelling", "cancelled"), body
            status = daemon.wait_for_state(plan_id, {"cancelled"}, timeout=60)
            after = sim.state()
            assert reassigning(after) == 0, "in-flight steps were cancelled in Kafka"
            assert at_target(after, plan) >= done_before_cancel, "completed steps stay"
            assert at_target(after, plan) < len(plan["partitions"])
            assert configs(after) == configs(before), "throttles restored after cancel"
            assert status["state"] == "cancelled"
            code, body = daemon.request("POST", "/v1/resume")
            assert code in {409, 404}, body  # nothing left to resume
        finally:
            daemon.stop()


def test_live_throttle_and_limit_changes(tmp_path: Path) -> None:
    with SimProcess(scenario(20), tmp_path / "sim", time_scale=2) as sim:
        slow = {**LIMITS, "follower.reassignment.throttled.rate": 2_000_000}
        daemon = DaemonProcess(tmp_path / "daemon", sim.bootstrap_servers, slow).start()
        try:
            code, body = daemon.request("POST", "/v1/plans", fill_plan(20))
            assert code == 201, body

            def follower_rates() -> set[str]:
                _, brokers = configs(sim.state())
                return {
                    c["follower.replication.throttled.rate"]
                    for b, c in brokers.items()
                    if b != 5 and "follower.replication.throttled.rate" in c
                }

            wait_for(
                lambda: follower_rates() == {"2000000"}, 30, "the initial follower rate on receiving brokers"
            )
            code, body = daemon.request(
                "PATCH", "/v1/throttles", {"follower.reassignment.throttled.rate": 30_000_000}
            )
            assert code == 200, body
            assert body["follower.reassignment.throttled.rate"] == 30_000_000
            wait_for(lambda: follower_rates() == {"30000000"}, 10, "the new rate applied to in-flight moves")

            code, body = daemon.request(
                "PATCH", "/v1/limits", {"reassignment.max.incoming.replica.movements.per.broker": 1}
            )
            assert code == 200 and body["reassignment.max.incoming.replica.movements.per.broker"] == 1, body
            code, body = daemon.request(
                "PATCH", "/v1/limits", {"reassignment.parallel.replica.count": 0, "colour": 1}
            )
            assert code == 400, body
            assert {p["field"] for p in body["error"]["problems"]} == {
                "reassignment.parallel.replica.count",
                "colour",
            }
            # once the steps started under the old limit drain, no broker fetches more than one at a time
            time.sleep(3)
            for _ in range(40):
                state = sim.state()
                assert all(b["incoming"] <= 1 for b in state["observed"]["brokers"]), state["observed"]
                time.sleep(0.05)
        finally:
            daemon.stop()
