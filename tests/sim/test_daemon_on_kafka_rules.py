"""Daemon defects that the simulator showed once it followed rules a real Kafka 4.4 cluster settled.

Each test is what an operator would check; each was a strict xfail until the daemon was fixed.
docs/simulator.md, "Settled against real Kafka", has the measurements.
"""

from __future__ import annotations

from typing import Any

from reassignd.model import ReassignmentPlan
from reassignd.store.base import EventKind, PlanStatus
from tests.daemon.inprocess import InProcessDaemon, plan_of
from tests.daemon.test_e2e import LIMITS, fill_plan, scenario

MB = 1_000_000


async def test_a_move_under_produce_completes_at_the_throttle_rate_the_operator_set() -> None:
    """Produce 2 MB/s into a partition of three replicas; the plan moves one of them at 5 MB/s. The new
    replica would close its lag at 5 - 2 MB/s if the leader's quota metered it alone; Kafka meters the two
    in-sync followers' 4 MB/s too, so it gets 1 MB/s and never catches up."""
    d = InProcessDaemon(
        {
            "seed": 7,
            "brokers": [{"id": b, "rack": f"/dc1/r{b}"} for b in range(1, 6)],
            "topics": [
                {
                    "name": "t",
                    "partition_bytes": 300 * MB,
                    "produce_bytes_per_sec": 2 * MB,
                    "assignment": [[1, 2, 3]],
                }
            ],
        },
        {"leader.reassignment.throttled.rate": 5 * MB, "follower.reassignment.throttled.rate": 5 * MB},
    )
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3]}))
    await d.run(seconds=4 * 3600)
    assert await d.status_of(plan_id) is PlanStatus.COMPLETED
    # the daemon's leader rate carries the 4 MB/s of in-sync replication (9 MB/s once the produce rate is
    # known, two reads in): the copy closes its lag at 5 - 2 MB/s, 100 s for 300 MB (measured: 115 s)
    copy = [e for e in await d.journal(EventKind.STEP_FINISHED) if e.data["adding"] == [4]]
    assert len(copy) == 1 and copy[0].data["seconds"] <= 1.25 * 300 / (5 - 2)


async def test_every_step_started_is_finished_when_metadata_trails_the_controller() -> None:
    """The e2e plan of tests/daemon/test_e2e.py on 20 partitions per topic, with the brokers' Metadata a
    cycle and a half behind the controller (over TCP, 0.05 s behind at 20x time already broke it)."""
    cluster: dict[str, Any] = {**scenario(20), "metadata_delay_seconds": 1.5}
    d = InProcessDaemon(cluster, LIMITS, cycle_seconds=1.0)
    await d.submit(ReassignmentPlan.from_dict(fill_plan(20)))
    await d.run(seconds=3600)
    entries = await d.journal()
    started = {(e.tp, e.step_index) for e in entries if e.kind is EventKind.STEP_STARTED}
    finished = {(e.tp, e.step_index) for e in entries if e.kind is EventKind.STEP_FINISHED}
    assert started - finished == set()
