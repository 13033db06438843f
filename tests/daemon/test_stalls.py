"""A throttle below the produce rate never finishes (KIP-73): reported as a stall, and auto-throttle fixes it.

The controller runs in-process against the simulator subprocess over TCP, so the test can drive cycles
and read its journal; what happened to the cluster is still read from the simulator.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
from reassignd.daemon.controller import AutoThrottle, Controller
from reassignd.engine import Limits
from reassignd.model import ReassignmentPlan
from reassignd.store.aio import AsyncStore
from reassignd.store.base import EventKind
from reassignd.store.sqlite import SqliteStore
from tests.services.simulator import SimProcess

pytestmark = pytest.mark.slow

SCENARIO: dict[str, Any] = {
    "brokers": [{"id": b, "rack": f"r{b}"} for b in (1, 2, 3, 4)],
    "topics": [
        {
            "name": "hot",
            "partitions": 1,
            "replication_factor": 3,
            "partition_bytes": 20_000_000,
            "produce_bytes_per_sec": 2_000_000,
            "assignment": [[1, 2, 3]],
        }
    ],
}
PLAN = ReassignmentPlan.from_dict(
    {"version": 1, "partitions": [{"topic": "hot", "partition": 0, "replicas": [1, 2, 4]}]}
)
LIMITS = {
    "follower.reassignment.throttled.rate": 1_000_000,  # half the produce rate: can never catch up
    "leader.reassignment.throttled.rate": 1_000_000,
    "reassignment.stall.window.seconds": 2,
}


async def run_cycles(controller: Controller, seconds: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        await controller.cycle()
        if controller.run is None or controller.run.record.status.terminal:
            return
        await asyncio.sleep(0.2)


async def _controller(
    sim: SimProcess, state: Path, auto: AutoThrottle | None
) -> tuple[Controller, Any, AsyncStore]:
    admin = KafkaClusterAdmin(AdminSettings(client={"bootstrap.servers": sim.bootstrap_servers}))
    store = AsyncStore(SqliteStore(state))
    return Controller(admin, store, Limits.from_mapping(LIMITS), auto_throttle=auto), admin, store


async def test_a_move_below_the_produce_rate_is_reported_as_stalled(tmp_path: Path) -> None:
    with SimProcess(SCENARIO, tmp_path / "sim") as sim:
        controller, admin, store = await _controller(sim, tmp_path / "state", None)
        try:
            await controller.submit_plan(PLAN)
            await run_cycles(controller, 6)
            status = controller.plan_status()
            assert status["state"] == "running"
            [stalled] = status["stalled"]
            assert (
                stalled["broker"] == 4 and stalled["produce_bytes_per_sec"] > stalled["catchup_bytes_per_sec"]
            )
            journal = await store.journal(kinds=[EventKind.STALL_DETECTED])
            assert len(journal) == 1 and journal[0].data["broker"] == 4
            state = sim.state()
            assert [p["replicas"] for p in state["partitions"]] == [[1, 2, 4, 3]], "still moving, never done"
        finally:
            await admin.close()
            await store.close()


async def test_auto_throttle_raises_the_rate_until_the_move_converges(tmp_path: Path) -> None:
    with SimProcess(SCENARIO, tmp_path / "sim") as sim:
        before = sim.state()
        controller, admin, store = await _controller(
            sim, tmp_path / "state", AutoThrottle(step=4_000_000, ceiling=9_000_000)
        )
        try:
            await controller.submit_plan(PLAN)
            await run_cycles(controller, 40)
            assert controller.records and next(iter(controller.records.values())).status.value == "completed"
            after = sim.state()
            assert [p["replicas"] for p in after["partitions"]] == [[1, 2, 4]]
            raised = [
                e for e in await store.journal(kinds=[EventKind.THROTTLE_SET]) if e.data.get("auto_throttle")
            ]
            assert raised and all(
                v <= 9_000_000 for e in raised for k, v in e.data.items() if k.endswith("rate")
            )
            assert {b["id"]: b.get("configs") for b in after["brokers"]} == {
                b["id"]: b.get("configs") for b in before["brokers"]
            }, "boosted rates are removed with the rest"
        finally:
            await admin.close()
            await store.close()
