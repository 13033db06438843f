"""A throttle below the produce rate never finishes (KIP-73): reported as a stall, and auto-throttle fixes it.

In process, over the simulator's model, in virtual time (tests/daemon/inprocess.py)."""

from __future__ import annotations

from typing import Any

from reassignd.engine.run import AutoThrottle
from reassignd.store.base import EventKind, PlanStatus
from tests.daemon.inprocess import InProcessDaemon, plan_of

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
PLAN = plan_of({("hot", 0): [1, 2, 4]})
LIMITS = {
    "follower.reassignment.throttled.rate": 1_000_000,  # half the produce rate: can never catch up
    "leader.reassignment.throttled.rate": 1_000_000,
    "reassignment.stall.window.seconds": 10,
}


async def test_a_move_below_the_produce_rate_is_reported_as_stalled() -> None:
    d = InProcessDaemon(SCENARIO, LIMITS, cycle_seconds=2.0)
    plan_id = await d.submit(PLAN)
    for _ in range(15):
        await d.cycle()
    status = d.controller.plan_status(plan_id)
    assert status["state"] == "running"
    [stalled] = status["stalled"]
    assert stalled["broker"] == 4 and stalled["produce_bytes_per_sec"] > stalled["catchup_bytes_per_sec"]
    journal = await d.journal(EventKind.STALL_DETECTED)
    assert len(journal) == 1 and journal[0].data["broker"] == 4, "reported once, not every cycle"
    assert d.replicas("hot", 0) == [1, 2, 4, 3], "still moving, never done"
    assert d.controller.metrics["reassignd_stalls_detected_total"]._value.get() == 1


async def test_auto_throttle_raises_the_rate_until_the_move_converges() -> None:
    d = InProcessDaemon(SCENARIO, LIMITS, cycle_seconds=2.0, auto_throttle=AutoThrottle(4_000_000, 9_000_000))
    before = d.throttle_configs()
    plan_id = await d.submit(PLAN)
    await d.run(seconds=600)
    assert await d.status_of(plan_id) is PlanStatus.COMPLETED
    assert d.replicas("hot", 0) == [1, 2, 4]
    raised = [e for e in await d.journal(EventKind.THROTTLE_SET) if e.data.get("auto_throttle")]
    assert raised and all(v <= 9_000_000 for e in raised for k, v in e.data.items() if k.endswith("rate"))
    assert d.throttle_configs() == before, "boosted rates are removed with the rest"
